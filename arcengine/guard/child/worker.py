"""A role worker: the process where one role's module (the reference, the candidate or the incumbent) runs.

The judge (arcengine.guard.child.judge) forks one worker per role before it reads its spec, so a worker holds nothing
of the judge: no result path, no token, no reference outputs, no recorded times. The judge sends commands over
a socket (arcengine.guard.child.channel); the worker loads its module, makes the inputs of a call from the seed it is
given, calls, times its own call, checks its inputs and the harness seal, and sends back the time and the
outputs' bytes, or, for a held timed call, the time first and then, when the judge audits it, a sample of the
outputs. The judge compares them with the reference it ran itself, in its own process.

What stays trusted here is the worker's own harness: the timer of its own calls, the seal and the copy of its
outputs. The gate keeps candidate code from reaching them (no frames, no dispatcher, no file descriptors),
the seal checks they are unpatched, and CUPTI's records count every kernel wherever it runs.

Imports are limited to the standard library, torch and the guard's child-side modules, as for the child.
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from os import urandom as _urandom
from pathlib import Path
from time import perf_counter
from types import FrameType, ModuleType
from typing import Any, NamedTuple, NoReturn, overload

import torch

from arcengine.guard.child import (
    baselines,
    channel,
    confine,
    correctness,
    destinations,
    dispatcher_watch,
    distributions,
    frozen,
    landlock,
    native_build,
    opens,
    own_code,
    precompile,
    process,
    settings_watch,
    threads,
    timing,
)
from arcengine.guard.child.correctness import describe_exception

REFERENCE_MODULE = "arcengine_guard_reference"
# The candidate and the incumbent are loaded alike (one module name, a copy of their file under a random name, a
# home of a random name): a module that could tell which it is could run slowly, or skip its work, as the incumbent
# only, and every candidate after it would beat it (red team round 9).
KERNEL_MODULE = "arcengine_guard_kernel"
ROLE_MODULES = {"candidate": KERNEL_MODULE, "incumbent": KERNEL_MODULE, "baseline": "arcengine_guard_baseline"}
CANDIDATE_ROLES = ("candidate", "incumbent")  # the roles whose code is untrusted (and compiled ahead when gated)
ROLE_HOMES = "ARCENGINE_ROLE_HOMES"  # each role's own folder is made in it (the sandbox makes it)
HANG_SIGNAL = signal.SIGUSR1  # the judge's word that a request is past its limit (Worker.hung)
# A request that made inputs this heavy is followed by a collection: a reference cycle through a call's frame keeps
# its inputs, snapshot and outputs alive into the next call, and on a GPU each role's allocator keeps its peak (one
# such cycle, in threads.python_elsewhere, held three inputs' worth per candidate call: KernelBench's 6-8 GiB
# inputs ran the H200 out of memory).
HEAVY_BYTES = 64 << 20


class NoEntry(Exception):
    """The module defines nothing to call."""


class InputsTouched(Exception):
    """What makes a call's inputs was changed since the module was imported; the message is the reason."""


def load_module(path: str, name: str) -> ModuleType:
    """Import a file under `name`, registered in sys.modules so Triton's JIT can find its source. Any file name
    will do (a candidate need not end in .py)."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    if spec is None:
        raise ImportError(f"cannot load a module from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def entry_point(module: ModuleType, reference: ModuleType, device: torch.device, role: str) -> Callable[..., object]:
    """The callable to judge: the module's ``run``, or what the reference's ``candidate_run(module, device)``
    builds from it (a KernelBench reference instantiates the module's ModelNew, seeded like its Model)."""
    build = getattr(reference, "candidate_run", None)
    run = build(module, device) if callable(build) else getattr(module, "run", None)
    if not callable(run):
        raise NoEntry(f"{role} has no callable run")
    return run


def make_inputs(reference: ModuleType, axes: Mapping[str, object], seed: int, distribution: str,
                device: torch.device) -> tuple[object, ...]:
    """A call's inputs from its seed: the judge makes the same ones for the reference."""
    on = device if device.type != "meta" else "cpu"  # meta tensors draw from a CPU generator
    generator = torch.Generator(device=on).manual_seed(seed)
    return distributions.make_inputs(reference.make_inputs, dict(axes), generator, device, distribution)


def resolve_device(kind: str) -> torch.device:
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("device cuda requested but torch sees no CUDA device")
    torch.cuda.set_device(0)
    torch.cuda.init()
    return torch.device("cuda", 0)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # named: unnamed, torch asks the driver for the device count each time


# ---------------------------------------------------------------- the worker's side


class _Held(NamedTuple):
    """A call whose checks wait: the correctness call's until it returns, a timed call's for the judge's word."""

    out: object
    inputs: Sequence[object]
    pristine: list[object] | None  # the inputs' snapshot, where the judge asked for one
    seconds: float


class _Made(NamedTuple):
    """One timed call's arguments, as the worker made them."""

    seed: int
    inputs: Sequence[object]
    pristine: list[object] | None  # the inputs' snapshot, where the judge asked for one
    outputs: list[torch.Tensor]  # destination-passing: the call's own outputs (else none)
    layouts: list[destinations.Layout]


class CallInputs(Sequence[tuple[object, ...]]):
    """A block's arguments, each call's made only when the timer reaches it: while a call runs, no later call's
    inputs exist, and their seeds are not drawn yet, so no call can do a later one's work ahead of it (and have
    that one return a cached answer, read as free). The judge learns the seeds from the reply."""

    def __init__(self, count: int, make: Callable[[int], _Made]) -> None:
        self.count = count
        self.make = make
        self.made: list[_Made] = []

    def __len__(self) -> int:
        return self.count

    @property
    def seeds(self) -> list[int]:
        """The seeds of the calls made so far, for the reply."""
        return [call.seed for call in self.made]

    @overload
    def __getitem__(self, index: int) -> tuple[object, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[object, ...]]: ...

    def __getitem__(self, index: int | slice) -> tuple[object, ...] | Sequence[tuple[object, ...]]:
        if isinstance(index, slice) or not 0 <= index < self.count:
            raise IndexError(index)  # in order only: iteration stops here
        while len(self.made) <= index:
            self.made.append(self.make(len(self.made)))
        call = self.made[index]
        return (*call.inputs, *call.outputs)


class Worker:
    """Serves the judge's commands until told to exit; every answer is one message."""

    def __init__(self, sock: socket.socket, role: str) -> None:
        self.sock = sock
        self.role = role
        self.device = torch.device("cpu")
        self.reference: ModuleType | None = None
        self.run: Callable[..., object] | None = None
        # Destination-passing style (the problem or the Solution declares it; candidate roles only): run is called
        # as run(*inputs, *outputs) on outputs this worker allocates per call, and returns None.
        self.destinations = False
        self.routes: baselines.Routes | None = None  # the baseline's worker: its routes, run in place of `run`
        self.route_names: list[str] = []
        self.source = ""
        self.workloads: dict[int, Mapping[str, object]] = {}
        self.seal: correctness.HarnessSeal | None = None
        self.inputs_seal: correctness.HarnessSeal | None = None  # untrusted roles: see _inputs_seal
        self.own_code: own_code.Absent | None = None  # untrusted roles: where their module's code lies
        self.threads_before: set[int | None] = set()
        self.thread_count_before = 0
        self.timer: timing.Timer | None = None
        self.held: list[_Held] = []
        self.served: dict[str, float] = {}  # seconds spent on each kind of request since the last diagnostics
        self.served_count: dict[str, int] = {}
        self.request: object = None  # the id of the request being handled (None between them)
        self.last_request: object = None  # ... and of the last one received (its reply may still be on its way)
        self.heavy = False  # a request made inputs of HEAVY_BYTES or more: collect cycles once it is answered

    def serve(self) -> None:
        while True:
            try:
                command, _ = channel.receive(self.sock)
            except (channel.ChannelClosed, channel.ChannelError):
                return
            op = command.get("op")
            if op == "exit":
                return
            handler = {"load": self.load, "call": self.call, "time": self.time, "audit": self.audit,
                       "diagnostics": self.diagnostics, "trim": self.trim}.get(str(op))
            if handler is None:
                channel.send(self.sock, {"failure": f"unknown command {op!r}"})
                continue
            waits = self._waits_watched()
            if waits is not None:
                with contextlib.suppress(RuntimeError):  # a broken context fails the request itself
                    waits.wait_ends()
            started = perf_counter()
            self.request = self.last_request = command.get("id")
            header, payload = handler(command)
            self.request = None
            kind = str(op)
            self.served[kind] = self.served.get(kind, 0.0) + perf_counter() - started
            self.served_count[kind] = self.served_count.get(kind, 0) + 1
            header["held_bytes"] = _held_bytes(self.held)  # the judge's account of the device memory calls kept
            reply = channel.prepare({**header, "id": command.get("id")}, payload)  # its device copies, first
            if (waits := self._waits_watched()) is not None:
                with contextlib.suppress(RuntimeError):  # before the reply: no set of its lands in others' timing
                    waits.wait_begins()
            channel.transmit(self.sock, reply)
            if self.heavy:
                self.heavy = False
                del header, payload, reply
                gc.collect()

    def hung(self, signum: int, frame: FrameType | None) -> None:
        """The judge's word that the request being handled is past its limit (see roles.RemoteRole.finish): a
        signal, so its handler runs in the main thread between two of its bytecodes, wherever its Python is (a
        module's import, a call, a callback a library runs inline). Where that is goes back as the request's
        reply, and the worker leaves. Between requests (a reply on its way) it says nothing: the judge kills it."""
        if self.request is None:
            return
        where = threads.running_at(frame, self.source, _harness_files())
        with contextlib.suppress(BaseException):
            channel.send(self.sock, {"id": self.request, "hung": where})
        process.exit_now(1)

    def _waits_watched(self) -> timing.CuptiTimer | None:
        """Untrusted code's worker, once its timer reads CUPTI's records: GPU work while it waits for the judge
        is found in them (timing.idle_work)."""
        timer = self.timer
        return timer if self.role in CANDIDATE_ROLES and isinstance(timer, timing.CuptiTimer) else None

    # ------------------------------------------------------------ load

    def load(self, command: Mapping[str, Any]) -> tuple[dict[str, Any], list[channel.Part]]:
        """Compile (in a fork, before CUDA), take the device, import the reference and the module."""
        started = perf_counter()
        seconds: dict[str, float] = {}
        self.source = _own_folders(self.role, str(command.get("module") or ""))
        self.route_names = [str(name) for name in command.get("routes") or []]
        self.workloads = {int(w["index"]): dict(w["axes"]) for w in command["workloads"]}
        self.destinations = bool(command.get("destination_passing")) and self.role in CANDIDATE_ROLES
        if self.role in CANDIDATE_ROLES:  # untrusted code may touch no process that judges it, from here on
            confine.shield(set(command.get("protect") or ()) - {os.getpid()})
            dispatcher_watch.install()
            opens.install()
            settings_watch.install()
            frozen.freeze_tensor()
        if _builds_native(self.source):  # before the compiler forks: it builds, and the import then only loads
            native_build.install(native_build.BUILD_LIMIT_S["compiler" if command.get("precompile") else "import"])
        compiler = None
        if command.get("precompile"):
            compiler = precompile.Compiler(lambda: self._precompile(command))
        if self.role in CANDIDATE_ROLES:  # after the compiler's fork, which confines itself (to its own /proc)
            landlock.confine(opens.writable_folders())  # below the hook: what torch's C++ and native code write
        try:
            self.device = resolve_device(str(command["device"]))
            self.reference = load_module(str(command["reference"]), REFERENCE_MODULE)
        except BaseException as exc:
            return {"ok": False, "harness": True, "failure": f"worker failed to start: {describe_exception(exc)}"}, []
        _quiet_tqdm()
        threads.warm_pools()  # before untrusted code: a pool torch starts later reads as its thread
        if self.device.type == "cuda":
            with contextlib.suppress(ImportError):  # the timer's records: sealed before any module can touch them
                importlib.import_module("cupti.cupti")
        self.seal = _seal(self.reference)
        if self.role in CANDIDATE_ROLES:  # a method of its own shadowed for one use would escape the seal
            self.inputs_seal = _inputs_seal(self.reference)
            self.own_code = own_code.Absent((self.source, self.source.removesuffix(".py") + os.sep))
            harness = _harness_modules()
            frozen.freeze_classes(harness)
            frozen.seal_modules(harness)
        self.threads_before = {thread.ident for thread in threading.enumerate()}
        self.thread_count_before = _thread._count()
        if self.role in CANDIDATE_ROLES:
            dispatcher_watch.arm()
        failure = self._import()
        compiler_report: dict[str, float] = {}
        if compiler is not None:
            seconds["precompile"], compiler_report = compiler.wait()
            compiler_report["exit"] = compiler.reap()
        seconds["load"] = perf_counter() - started - seconds.get("precompile", 0.0)
        if failure is None:
            failure = opens.refusal() or self.seal.broken() or self._python_elsewhere()
        return {"ok": failure is None, "failure": failure, "seconds": seconds, "compiler": compiler_report}, []

    def _import(self) -> str | None:
        assert self.reference is not None
        if self.role == "reference":  # timed in a worker like the others, so every role pays the same costs
            self.run = self.reference.run
            return None
        try:
            if self.role == "baseline":  # problem code, like the reference: its routes are checked per call
                module = load_module(self.source, ROLE_MODULES[self.role]) if self.source else None
                self.routes = baselines.Routes(self.route_names, self.reference, module)
                self.run = self.reference.run
                return None
            module = load_module(self.source, ROLE_MODULES[self.role])
            self.run = entry_point(module, self.reference, self.device, self.role)
        except NoEntry as missing:
            return str(missing)
        except BaseException as exc:
            return f"{self.role} failed to import: {describe_exception(exc, self.source)}"
        return None

    def _precompile(self, command: Mapping[str, Any]) -> dict[str, float]:
        """In the compiler fork: the module's kernels compiled for every workload's shapes, nothing run."""
        self.sock.close()  # the fork's copy: the module's code runs here, and must not speak for the worker
        landlock.confine(opens.writable_folders())  # only untrusted roles compile ahead (the judge's load)
        started = perf_counter()
        if command["device"] == "cuda":
            torch.cuda.init()
        steps = {"device": perf_counter() - started}
        meta = torch.device("meta")  # modules built for the device (KernelBench's ModelNew) stay shapes
        reference = load_module(str(command["reference"]), REFERENCE_MODULE)
        dispatcher_watch.arm()
        run = entry_point(load_module(self.source, ROLE_MODULES[self.role]), reference, meta, self.role)
        steps["import"] = perf_counter() - started - steps["device"]
        # Destination-passing modules need outputs whose shapes the judge learns only from the reference: they
        # compile at their first call instead (counted as compilation, as any JIT the fork could not reach).
        for axes in [] if self.destinations else self.workloads.values():
            inputs = make_inputs(reference, axes, 0, "normal", meta)  # shapes only: no value is made on meta
            with precompile.compile_only(steps), contextlib.suppress(Exception):  # stopped where values were needed
                run(*inputs)
        steps["compile"] = perf_counter() - started - steps["device"] - steps["import"]
        return steps

    # ------------------------------------------------------------ calls

    def _entry(self, command: Mapping[str, Any]) -> threads.Watch:
        """What a call runs: the module's entry point or the baseline route the command names, watched for threads
        it leaves (untrusted code is failed for one; every role pays the watch's cost)."""
        assert self.run is not None
        fn = self.run if self.routes is None else self.routes.fn(str(command.get("route")), int(command["workload"]))
        return threads.Watch(fn, self.role, enforce=self.role in CANDIDATE_ROLES)

    def call(self, command: Mapping[str, Any]) -> tuple[dict[str, Any], list[channel.Part]]:
        """One untimed call on the inputs of (workload, seed, distribution): its conduct and its outputs (or, with
        ``hold``, its conduct only, the outputs held for ``audit``)."""
        assert self.reference is not None and self.run is not None
        self.held = []
        axes = self.workloads[int(command["workload"])]
        try:
            inputs = self._inputs(axes, int(command["seed"]), str(command["distribution"]))
        except InputsTouched as touched:
            return {"failure": str(touched)}, []
        pristine = correctness.snapshot_inputs(inputs)
        outputs = self._destinations(command)
        layouts = [destinations.layout(t) for t in outputs]
        poison = command.get("poison")
        if poison:
            correctness.poison_blocks([int(n) for n in poison], self.device)
        started = perf_counter()
        entry = self._entry(command)
        try:
            out = entry(*inputs, *outputs)
        except threads.LeftRunning as left:
            return {"failure": str(left)}, []
        except BaseException as exc:
            called = self._called(len(inputs), len(outputs), exc)
            return {"failure": self._raised(exc, called)}, []
        failure = correctness.returned_failure(out) or self._synced() or entry.after_close()
        if failure is None and self.destinations:
            out, failure = destinations.written(out, outputs, layouts, bool(command["outputs"]["single"]))
        if failure is not None:
            return {"failure": failure}, []
        held = _Held(out, inputs, pristine, perf_counter() - started)
        failure = self._conduct(held, bool(command.get("seal")))
        if failure is not None:
            return {"failure": failure}, []
        if command.get("hold"):  # the judge looks at a sample of the outputs, drawn once this reply is in (audit)
            self.held = [held._replace(pristine=None)]
            return {"seconds": held.seconds, "failure": None, "held": True}, []
        outputs, payload, failure = _ship(out, self.device)
        return {"seconds": held.seconds, "failure": failure, "outputs": outputs,
                "single": not correctness.is_sequence(out)}, payload

    def time(self, command: Mapping[str, Any]) -> tuple[dict[str, Any], list[channel.Part]]:
        """A block of timed calls, one per seed, each on fresh inputs of its own, and their times. With ``hold``
        the calls' outputs wait for ``audit``: the judge draws what it looks at only after this reply."""
        assert self.reference is not None and self.run is not None
        self.held = []  # the last block's, if the judge did not audit them
        axes = self.workloads[int(command["workload"])]
        check_inputs = bool(command.get("check_inputs"))

        def made(_: int) -> _Made:
            """A call's inputs from a seed drawn now, their snapshot (the judge asks for one where it matters, the
            candidate's calls: it costs a copy of every input) and, destination-passing, its own outputs."""
            seed = _fresh_seed()
            inputs = self._inputs(axes, seed, distributions.timed(seed, command.get("needles") or ""))
            outputs = self._destinations(command)
            return _Made(seed, inputs, correctness.snapshot_inputs(inputs) if check_inputs else None, outputs,
                         [destinations.layout(t) for t in outputs])

        calls = CallInputs(len(command["seeds"]), made)
        if self.timer is None:
            self.timer = timing.make_timer(self.device)
        conduct: list[str | None] = []
        entry = self._entry(command)

        def kept(i: int, out: object) -> object:
            """Right after call i, untimed: a copy of what it returned (a later call may reuse the buffers: CUDA
            graphs, static outputs) or, passed its outputs, of what it wrote; nothing else on the device (the
            timer counts what runs after a call). Its inputs are checked once the block is over."""
            wrong = entry.after_close()  # first: nothing of the harness's runs before this count
            if (returned := correctness.returned_failure(out)) is not None:
                conduct.append(wrong or returned)
                return None  # not touched again: a lazy result would work in the harness's calls
            if self.destinations:
                call = calls.made[i]
                out, unwritten = destinations.written(out, call.outputs, call.layouts,
                                                      bool(command["outputs"]["single"]))
                wrong = wrong or unwritten
            conduct.append(wrong)
            return _copied(out)

        started = perf_counter()
        gc.disable()  # a collection inside a timed call would be charged to the call
        block = self.timer.warm_block if command.get("warm") else self.timer.time_block
        try:
            timed = block(entry, calls, kept)
        except (threads.LeftRunning, InputsTouched) as stopped:
            return {"failure": str(stopped), "times": [], "seeds": calls.seeds}, []
        except BaseException as exc:
            return {"failure": self._raised(exc), "times": [], "seeds": calls.seeds}, []
        finally:
            gc.enable()
        failure = self._synced()
        seconds = perf_counter() - started
        for i, call in enumerate(calls.made):
            if conduct[i] is None and call.pristine is not None:
                conduct[i] = correctness.verify_inputs(call.inputs, call.pristine)
        times: list[float] = []
        for call, wrong in zip(timed, conduct, strict=True):
            failure = failure or call.stray or wrong
            if failure is not None:
                break
            times.append(call.us)
        if failure is None and command.get("hold"):  # inputs checked already: the audit checks the seal and outputs
            self.held = [_Held(call.out, made.inputs, None, seconds) for call, made in zip(timed, calls.made,
                                                                                            strict=True)]
        return {"times": times, "seconds": seconds, "failure": failure, "seeds": calls.seeds}, []

    def audit(self, command: Mapping[str, Any]) -> tuple[dict[str, Any], list[channel.Part]]:
        """The held block's conduct (inputs unchanged; the seal intact, where asked) and, per call with a sample
        seed, its outputs' elements at the positions that seed draws (see correctness.sample_output)."""
        held, self.held = self.held, []
        samples = [None if sample is None else int(sample) for sample in command.get("samples", [])]
        if not held or len(samples) != len(held):
            return {"failure": "the harness asked to audit calls that are not held", "failed_at": 0}, []
        replies: list[dict[str, Any]] = []
        payload: list[channel.Part] = []
        for i, (call, sample) in enumerate(zip(held, samples, strict=True)):
            failure = self._conduct(call, bool(command.get("seal")) and i == len(held) - 1)
            if failure is None and sample is None:  # not looked at: its conduct only
                replies.append({"outputs": None})
                continue
            outputs, parts, shipped = _ship(call.out, self.device, sample) if failure is None else ([], [], None)
            if (failure := failure or shipped) is not None:
                return {"failure": failure, "failed_at": i}, []
            replies.append({"outputs": outputs, "single": not correctness.is_sequence(call.out)})
            payload.extend(parts)
        return {"failure": None, "calls": replies}, payload

    def _called(self, inputs: int, outputs: int, exc: BaseException) -> str:
        """For a destination-passing module that could not take its arguments (value-returning code, most
        likely): how it was called."""
        if not self.destinations or not isinstance(exc, TypeError):
            return ""
        return f" (called destination-passing: its {inputs} inputs, then {outputs} output tensor(s))"

    def _destinations(self, command: Mapping[str, Any]) -> list[torch.Tensor]:
        """A call's fresh output tensors, for a destination-passing module (none otherwise)."""
        return destinations.allocate(command["outputs"], self.device) if self.destinations else []

    def _inputs(self, axes: Mapping[str, object], seed: int, distribution: str) -> tuple[object, ...]:
        """A call's inputs, made only while what makes them is as sealed (untrusted roles), with no collection
        inside (a collection would run the module's finalizers there)."""
        if self.inputs_seal is not None and (broken := self.inputs_seal.broken()):
            raise InputsTouched(f"{broken}, found before a call's inputs were made")
        collecting = gc.isenabled()
        gc.disable()
        try:
            with self.own_code.during("its inputs") if self.own_code else contextlib.nullcontext():
                inputs = make_inputs(self.reference, axes, seed, distribution, self.device)
            self.heavy = self.heavy or correctness.tensor_bytes(inputs) >= HEAVY_BYTES
            return inputs
        except own_code.OwnCodeRan as ran:
            raise InputsTouched(str(ran)) from None
        finally:
            if collecting:
                gc.enable()

    def _raised(self, exc: BaseException, called: str = "") -> str:
        """Why a call failed: a refused open or write it made first (the module may have swallowed the refusal and
        then broken on what it did next, the device through a descriptor of the driver's, say), else its error."""
        return opens.refusal() or f"{self.role} raised {describe_exception(exc, self.source)}{called}"

    def _synced(self) -> str | None:
        """Wait for the device; asynchronous CUDA errors (illegal address, device assert) surface here."""
        try:
            sync(self.device)
        except BaseException as exc:
            return opens.refusal() or f"CUDA error after the {self.role}'s call: {describe_exception(exc)}"
        return None

    def _conduct(self, call: _Held, seal: bool) -> str | None:
        """The reason if the call changed its inputs or (where asked) broke the seal or left a thread."""
        failure = correctness.verify_inputs(call.inputs, call.pristine) if call.pristine is not None else None
        if failure is None and seal:
            failure = self.tampering()
        return failure

    def tampering(self) -> str | None:
        """Patched harness functions or settings, or threads the module left running."""
        assert self.seal is not None
        broken = opens.refusal() or self.seal.broken()
        if broken is not None:
            return broken
        alive = [t.name for t in threading.enumerate() if t.ident not in self.threads_before and t.is_alive()]
        if alive:
            return f"{self.role} left a thread running after returning ({', '.join(alive)})"
        # Threads started with _thread directly are not in threading.enumerate(); the interpreter counts them.
        if _thread._count() > self.thread_count_before:
            return f"{self.role} left a thread running after returning (started with _thread, unnamed)"
        return self._python_elsewhere()

    def _python_elsewhere(self) -> str | None:
        """Python left running on a library's native thread (its pool's: no count of threads sees it), by untrusted
        code: a trusted role's library may keep a thread of its own (a baseline's import)."""
        if self.role not in CANDIDATE_ROLES:
            return None
        where = threads.python_elsewhere(self.threads_before, _harness_files())
        return None if where is None else f"{self.role} left Python running on a library's thread ({where})"

    def trim(self, command: Mapping[str, Any]) -> tuple[dict[str, Any], list[channel.Part]]:
        """Hand the blocks PyTorch's allocator holds for reuse back to the driver (the judge's count of the
        device memory this worker keeps is past its limit: see roles.RemoteRole._no_memory_kept)."""
        if self.device.type == "cuda":
            with contextlib.suppress(RuntimeError):  # a broken context: what it holds stays, and counts
                torch.cuda.synchronize(self.device)
                torch.cuda.empty_cache()
        return {}, []

    def diagnostics(self, command: Mapping[str, Any]) -> tuple[dict[str, Any], list[channel.Part]]:
        """The timer's kind and conduct, and what this worker's requests cost it since the last time asked (the
        guard's own cost per call, for the record)."""
        timer = self.timer
        served = {f"{kind}_us": 1e6 * seconds / self.served_count[kind] for kind, seconds in self.served.items()
                  if kind in ("time", "audit")}
        self.served, self.served_count = {}, {}
        return {"timer": {**(timer.diagnostics() if timer else {}), **served},
                "kind": timer.kind if timer else None}, []


def _fresh_seed() -> int:
    """A timed call's seed, 62 bits from the kernel's generator through a function bound when this module loaded:
    the candidate shares the process, and ``secrets.randbits`` rebound through ``sys.modules`` made every timed
    call's inputs one input a cache answered (red team round 11)."""
    return int.from_bytes(_urandom(8), "little") >> 2


def _held_bytes(held: Sequence[_Held]) -> int:
    """The device memory the harness keeps for the judge's audit: the held calls' inputs and outputs, by storage
    (see device_memory: not the module's to free)."""
    storages: dict[int, int] = {}
    for call in held:
        outputs = list(call.out) if correctness.is_sequence(call.out) else [call.out]  # type: ignore[call-overload]
        for item in [*call.inputs, *outputs]:
            if type(item) is torch.Tensor and item.is_cuda:
                storage = item.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def _harness_files() -> tuple[str, ...]:
    """Where the harness's own Python lies: this package, and CUPTI's binding whose buffer callbacks it runs."""
    cupti = sys.modules.get("cupti")
    folders = [os.path.dirname(__file__), *(getattr(cupti, "__path__", None) or [])]
    return tuple(os.path.join(folder, "") for folder in folders)


def _builds_native(path: str) -> bool:
    """Whether a module names torch's C++ builder (the gate lets no other spelling reach it)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "cpp_extension" in handle.read()
    except OSError:
        return False


def _seal(reference: ModuleType) -> correctness.HarnessSeal:
    """The seal over everything this worker's harness reads: its own modules and torch (the default), what it
    speaks to the judge with (json, struct, the socket class), the reference's input maker and, on a GPU, CUPTI's
    functions that its timer calls."""
    harness = [*_harness_modules(), json, struct]
    cupti = sys.modules.get("cupti.cupti")
    seal = correctness.default_seal([*harness, *([cupti] if cupti is not None else [])])
    seal.watch_class(socket.socket)
    seal.watch_module(reference, ("make_inputs",))
    return seal


def _inputs_seal(reference: ModuleType) -> correctness.HarnessSeal:
    """The seal over what makes a call's inputs, checked right before each call's are made: the reference and the
    modules it names, torch's random draws, the harness's distributions. A function there patched for one use and
    put back as it ran would do the call's work before the clock, where the sampled seal never looks (red team
    round 5: torch.randn armed by a finalizer on the previous call's input). Module functions only: 60 to 80 us."""
    seal = correctness.HarnessSeal()
    named = [value for value in vars(reference).values() if isinstance(value, ModuleType)]
    for module in {id(m): m for m in (reference, *named, torch, torch.random, torch.cuda, distributions)}.values():
        seal.watch_module(module, classes=False)
    seal.watch_class(torch.Generator)
    return seal


def _harness_modules() -> list[ModuleType]:
    """The worker's own code, which runs after untrusted code in the same process."""
    return [correctness, destinations, timing, channel, distributions, process, threads, opens, own_code,
            sys.modules[__name__]]


def _quiet_tqdm() -> None:
    """tqdm starts a monitor thread with its first bar, even a disabled one (torch.fx makes one under
    torch.compile), and the thread never stops: set its interval to 0 so none starts. The thread check is not
    relaxed for it, since the monitor calls every bar's refresh(), a candidate's own included."""
    try:
        from tqdm import tqdm
    except ImportError:
        return
    tqdm.monitor_interval = 0


def _copied(out: object) -> object:
    """Plain tensors cloned (a tuple's too: torch's named results become plain tuples); a result already read by
    correctness.returned_failure."""
    if correctness.is_sequence(out):
        return (list if type(out) is list else tuple)(_copied(item) for item in out)  # type: ignore[arg-type]
    return out.detach().clone() if type(out) is torch.Tensor else out


def _ship(out: object, device: torch.device,
          sample: int | None = None) -> tuple[list[dict[str, Any]], list[channel.Part], str | None]:
    """The outputs as the judge will rebuild them: plain tensors on this worker's device (or, with ``sample``,
    their elements at the positions it draws, and their shapes), or plain numbers."""
    if (returned := correctness.returned_failure(out)) is not None:
        return [], [], returned
    items = list(out) if correctness.is_sequence(out) else [out]
    described: list[dict[str, Any]] = []
    tensors: list[torch.Tensor] = []
    for i, item in enumerate(items):
        label = "output" if len(items) == 1 and not correctness.is_sequence(out) else f"output {i}"
        if type(item) is torch.Tensor:  # subclasses can override comparisons and __torch_function__
            if item.device != device:
                return [], [], f"{label} is on {item.device}, expected {device}"
            if sample is None:
                described.append({"tensor": len(tensors)})
                tensors.append(item)
            else:
                drawn = correctness.sample_output(item, sample + i)
                assert isinstance(drawn, correctness.Sample)
                described.append({"tensor": len(tensors), "sampled_from": list(drawn.shape)})
                tensors.append(drawn.values)
        else:  # a plain number, string or None (correctness.returned_failure)
            described.append({"value": item})
    meta, payload = channel.pack_tensors(tensors)
    for entry in described:
        if "tensor" in entry:
            entry["meta"] = meta[entry["tensor"]]
    return described, payload, None


def start(role: str) -> tuple[int, socket.socket]:
    """Fork a worker for ``role``; the judge's end of its socket. Call before this process touches CUDA."""
    # torch.compile's import replaces torch.manual_seed: the seal's baseline must have it. Imported here, once, before
    # the forks (the zygote has it already), not with this module: a profiling child starts no worker.
    importlib.import_module("torch._dynamo")
    judge_end, worker_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        _become_worker(worker_end, role)
    worker_end.close()
    return pid, judge_end


def _own_folders(role: str, source: str) -> str:
    """This role's own HOME, TMPDIR and kernel caches, where no other role's worker can write (the audit hook and
    Landlock hold an untrusted one to them). torch.compile and Triton load what they find in their caches by a
    hash of the source, which any candidate can compute, and a Triton launcher is a shared object: a module or
    launcher planted where another role looks would run in its process (the reference's, the baseline's, the
    incumbent's, to time it as slowly as it likes). The campaign's shared caches, which spare the incumbent a
    compile in every child, are split by the module's source: a role writes only the folder of its own code,
    which a later child running the same code (the incumbent, a KEEP's confirmation) finds again. An untrusted
    role's home has a random name, and its module is loaded from a read-only copy beside it (the path returned),
    so the candidate and the incumbent look alike from inside."""
    homes = os.environ.get(ROLE_HOMES)
    if not homes:  # a judge started by hand, without the sandbox's environment
        return source
    untrusted = role in CANDIDATE_ROLES
    home = os.path.join(homes, secrets.token_hex(8) if untrusted else role)
    folders = {"HOME": home, "TMPDIR": home, "TRITON_HOME": home, "TRITON_CACHE_DIR": os.path.join(home, "triton"),
               "TORCHINDUCTOR_CACHE_DIR": os.path.join(home, "inductor")}
    if untrusted:
        digest = _source_digest(source)
        for name in ("TRITON_CACHE_DIR", native_build.CACHE_ENV):
            if shared := os.environ.get(name):
                folders[name] = os.path.join(shared, digest)
    for name, folder in folders.items():
        os.makedirs(folder, exist_ok=True)
        os.environ[name] = folder
    tempfile.tempdir = None  # recomputed from the new TMPDIR
    os.chdir(home)  # relative paths (a compiler's debug folder) land there too
    if not (untrusted and source):
        return source
    # Beside its home, not in it: the module may write its home, and its compiler fork imports this file before
    # the worker does; read-only, the copy stays the code the gate read.
    copy = home + ".py"
    shutil.copyfile(source, copy)
    os.chmod(copy, 0o444)
    return copy


def _source_digest(path: str) -> str:
    """A module's folder name in the shared caches: what its code is, not where it lies."""
    try:
        content = Path(path).read_bytes()
    except OSError:
        content = path.encode()
    return hashlib.sha256(content).hexdigest()[:16]


def _become_worker(sock: socket.socket, role: str) -> NoReturn:
    code = 0
    serving: Worker | None = None
    try:
        # Only its own socket: not the judge's ends of the other workers' sockets, nor anything else inherited.
        keep = sock.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, process.max_fd())
        # SIGKILL once the judge dies: never outlive the verdict it could overwrite.
        process.prctl(process.PR_SET_PDEATHSIG, int(signal.SIGKILL))
        confine.drop_capabilities()  # root's ptrace would reach the judge's memory: see arcengine.guard.child.confine
        serving = Worker(sock, role)
        signal.signal(HANG_SIGNAL, serving.hung)  # before any module runs here
        serving.serve()
    except BaseException as exc:
        code = 1
        # Said over the channel where it still works: a bare exit status leaves the user nothing to act on.
        with contextlib.suppress(BaseException):
            channel.send(sock, {"failure": f"the {role}'s worker failed: {describe_exception(exc)}",
                                "id": serving.last_request if serving else None})
    process.exit_now(code)
