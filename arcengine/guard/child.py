"""The guard's sandbox child: judges one candidate in a fresh process.

Run as ``python -m arcengine.guard.child SPEC.json`` by the engine, with a private working directory, a
scrubbed environment and its own process group. It loads the reference and the candidate, checks the
candidate on every workload and seed, times it interleaved with the reference (and the incumbent), and
writes one JSON result atomically at the end. Anything the candidate does wrong, including crashing the
harness after it ran, is a verdict in that file; only a dead process leaves no file.

Imports are limited to the standard library, torch, numpy and the guard's own modules, so that nothing of
the engine (or its secrets) is loaded next to candidate code.
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import hashlib
import importlib.util
import json
import math
import os
import random
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from types import ModuleType
from typing import NoReturn

import torch

from arcengine.guard import ceilings, correctness, distributions, precompile, timing
from arcengine.guard.correctness import Comparison, Tolerance, describe_exception
from arcengine.guard.timing import CallError, TimingConfig

MODULE_NAMES = {
    "reference": "arcengine_guard_reference",
    "candidate": "arcengine_guard_candidate",
    "incumbent": "arcengine_guard_incumbent",
}
# Where a child's time goes: loading, waiting for its compiler and for its turn on the device (gated children),
# compiling at first calls, checking, timing.
PHASES = ("load", "precompile", "wait", "compile", "correctness", "timing")
_POOL_SEED_BASE = 1_000_003  # timing inputs come from seeds far from the correctness seeds
SEAL_AUDIT_SHARE = 0.25  # of the timed candidate calls, those after which the harness seal is checked


class SpecError(ValueError):
    """The spec file is malformed; the harness cannot judge anything."""


class HarnessError(Exception):
    """The harness or the reference failed before the candidate was loaded (result ok = false)."""


# ---------------------------------------------------------------- spec


@dataclass(frozen=True)
class Workload:
    index: int
    axes: dict[str, object]
    held_out: bool = False

    @property
    def label(self) -> str:
        axes = ", ".join(f"{key}={value}" for key, value in self.axes.items())
        kind = "held-out workload" if self.held_out else "workload"
        return f"{kind} {self.index} ({axes})"


@dataclass(frozen=True)
class Spec:
    mode: str
    device: str
    result: str
    reference: str = ""
    candidate: str = ""
    incumbent: str | None = None
    workloads: tuple[Workload, ...] = ()
    tolerance: Tolerance = field(default_factory=lambda: Tolerance(0.0, 0.0, 1.0))
    seeds: tuple[int, ...] = (0,)
    timing: TimingConfig = field(default_factory=TimingConfig)
    rng_seed: int = 0
    distributions: tuple[str, ...] = ("normal",)
    deterministic: bool = True  # two runs on the same inputs must agree bit for bit
    gate: str | None = None  # with one: prepare, then use the device only once the engine opens it


def parse_spec(raw: Mapping[str, object]) -> Spec:
    """Validate the parent's spec; raises SpecError with the reason."""
    try:
        return _parse(raw)
    except SpecError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"{type(exc).__name__}: {exc}") from exc


def _parse(raw: Mapping[str, object]) -> Spec:
    mode, device = str(raw.get("mode", "evaluate")), str(raw["device"])
    # "auto" (the GPU if torch sees one) is for profiling, which tells the engine what it got.
    if mode not in ("evaluate", "profile") or device not in ("cpu", "cuda", "auto") or (
        device == "auto" and mode != "profile"
    ):
        raise SpecError(f"unknown mode {mode!r} or device {device!r}")
    if mode == "profile":
        return Spec(mode=mode, device=device, result=str(raw["result"]))
    workloads = tuple(_workload(item) for item in raw["workloads"])  # type: ignore[attr-defined]
    seeds = tuple(int(seed) for seed in raw["seeds"])  # type: ignore[attr-defined]
    if not workloads or not seeds:
        raise SpecError("the spec needs at least one workload and one seed")
    incumbent = raw.get("incumbent")
    return Spec(
        mode=mode,
        device=device,
        result=str(raw["result"]),
        reference=str(raw["reference"]),
        candidate=str(raw["candidate"]),
        incumbent=str(incumbent) if incumbent else None,
        workloads=workloads,
        tolerance=Tolerance.from_dict(raw["tolerance"]),  # type: ignore[arg-type]
        seeds=seeds,
        timing=TimingConfig.from_dict(raw.get("timing") or {}),  # type: ignore[arg-type]
        rng_seed=int(raw.get("rng_seed", _stable_seed(workloads, seeds))),  # type: ignore[arg-type]
        distributions=tuple(str(d) for d in raw.get("distributions") or ("normal",)),  # type: ignore[attr-defined]
        deterministic=bool(raw.get("deterministic", True)),
        gate=str(raw["gate"]) if raw.get("gate") else None,
    )


def _workload(item: Mapping[str, object]) -> Workload:
    axes = item["axes"]
    if not isinstance(axes, dict):
        raise SpecError(f"workload axes must be an object, got {axes!r}")
    return Workload(index=int(item["index"]), axes=dict(axes), held_out=bool(item.get("held_out", False)))  # type: ignore[call-overload]


def _stable_seed(workloads: Sequence[Workload], seeds: Sequence[int]) -> int:
    # The same spec gives the same round orders and audit choices, so a run can be reproduced.
    text = json.dumps([[w.index, w.axes] for w in workloads] + [list(seeds)], sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


# ---------------------------------------------------------------- modules and devices


def load_module(path: str, name: str) -> ModuleType:
    """Import a file under `name`, registered in sys.modules so Triton's JIT can find its source."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a module from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def resolve_device(kind: str) -> torch.device:
    if kind == "auto":
        kind = "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise HarnessError("device cuda requested but torch sees no CUDA device")
    torch.cuda.set_device(0)
    torch.cuda.init()
    return torch.device("cuda", 0)


# ---------------------------------------------------------------- per-workload record


@dataclass
class WorkloadRecord:
    index: int
    held_out: bool
    correct: bool = False
    failure: str | None = None
    max_abs_err: float | None = None
    matched_ratio: float | None = None
    time_us: float | None = None
    ref_time_us: float | None = None
    incumbent_time_us: float | None = None
    reps: int | None = None
    rel_se: float | None = None
    paired_ratios: list[float] = field(default_factory=list)
    harness: dict[str, float] = field(default_factory=dict)

    def absorb(self, comparison: Comparison) -> None:
        """Keep the worst error and the lowest matched ratio over the seeds."""
        err, ratio = comparison.max_abs_err, comparison.matched_ratio
        self.max_abs_err = err if self.max_abs_err is None else max(self.max_abs_err, err)
        self.matched_ratio = ratio if self.matched_ratio is None else min(self.matched_ratio, ratio)


# ---------------------------------------------------------------- evaluation


class _NoEntry(Exception):
    """The module defines nothing to call."""


class Evaluation:
    """One candidate's evaluation: load, correctness, timing. `run()` never raises."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.device = torch.device("cpu")
        self.device_info: dict[str, object] | None = None
        self.reference: ModuleType | None = None
        self.incumbent_run: Callable[..., object] | None = None
        self.incumbent_failure: str | None = None
        self.candidate_run: Callable[..., object] | None = None
        self.seal: correctness.HarnessSeal | None = None
        self.threads_before: set[int | None] = set()
        self.thread_count_before = 0
        self.records: list[WorkloadRecord] = []
        self.seconds: dict[str, float] = {}
        self.compiler: dict[str, float] = {}  # a gated child's compiler: seconds per step, and its exit
        self.stage = "load"
        self.ok = True
        self.correct = False
        self.failure: str | None = None
        self.failed_workload: Workload | None = None

    def run(self) -> dict[str, object]:
        started = perf_counter()
        # Forked before this process touches CUDA: a fork of a CUDA process cannot use the device.
        compiler = precompile.Compiler(self._precompile) if self.spec.gate else None
        try:
            self._load_harness()
        except HarnessError as exc:
            return self._harness_failed(str(exc), started)
        except Exception as exc:
            return self._harness_failed(f"harness failed to start: {describe_exception(exc)}", started)
        loaded = self._load_candidate(started)
        if compiler is not None:
            self.seconds["precompile"], self.compiler = compiler.wait()
        if not loaded:
            return self.result()
        if compiler is not None:  # its exit overlaps the wait for the turn, and is over before the device is used
            self.compiler["exit"] = compiler.reap()
        self._wait_for_turn()
        smoke_started = perf_counter()
        try:
            self._smoke_test_reference()
        except HarnessError as exc:
            return self._harness_failed(str(exc), started)
        self.seconds["load"] += perf_counter() - smoke_started
        self._judge()
        return self.result()

    def _wait_for_turn(self) -> None:
        """A gated child uses the device only once the engine opens its gate (see arcengine.guard.turns)."""
        if self.spec.gate is None:
            return
        waited = perf_counter()
        with open(self.spec.gate, "rb", buffering=0) as gate:
            gate.read(1)
        self.seconds["wait"] = perf_counter() - waited

    def _precompile(self) -> dict[str, float]:
        """In the compiler fork: every role's kernels compiled for every workload's shapes, nothing run. Returns
        the seconds each step took."""
        started = perf_counter()
        if self.spec.device == "cuda":
            torch.cuda.init()
        self.device = torch.device("meta")  # modules built for the device (KernelBench's ModelNew) stay shapes
        steps = {"device": perf_counter() - started}
        self.reference = load_module(self.spec.reference, MODULE_NAMES["reference"])
        paths = {"candidate": self.spec.candidate, "incumbent": self.spec.incumbent}
        runs = [self._entry(load_module(path, MODULE_NAMES[role]), role) for role, path in paths.items() if path]
        steps["import"] = perf_counter() - started - steps["device"]
        for workload in self.spec.workloads:
            inputs = self._make_inputs(workload, self.spec.seeds[0])
            with precompile.compile_only(steps):  # adds the launches and their seconds
                for run in runs:
                    with contextlib.suppress(Exception):  # stopped where real values were needed
                        run(*inputs)
        steps["compile"] = perf_counter() - started - steps["device"] - steps["import"]
        return steps

    def _judge(self) -> None:
        try:
            if self._timed("correctness", self._check_correctness):
                self._timed("timing", self._time_workloads)
        except BaseException as exc:  # after candidate code ran, any harness breakage is its verdict
            self._fail(f"harness error after candidate ran: {describe_exception(exc)}")

    def _timed(self, stage: str, step: Callable[[], bool]) -> bool:
        self.stage = stage
        started, compile_before = perf_counter(), self.seconds.get("compile", 0.0)
        try:
            return step()
        finally:  # the candidate's first calls (JIT compilation) are a phase of their own
            self.seconds[stage] = perf_counter() - started - (self.seconds.get("compile", 0.0) - compile_before)

    # ------------------------------------------------------------ load

    def _load_harness(self) -> None:
        self.device = resolve_device(self.spec.device)
        self.device_info = ceilings.device_info(self.device)
        try:
            self.reference = load_module(self.spec.reference, MODULE_NAMES["reference"])
        except BaseException as exc:
            raise HarnessError(f"reference failed to import: {describe_exception(exc)}") from exc
        for name in ("make_inputs", "run"):
            if not callable(getattr(self.reference, name, None)):
                raise HarnessError(f"reference has no callable {name}")
        self._load_incumbent()

    def _smoke_test_reference(self) -> None:
        # A broken problem must not read as a broken candidate, so try the reference before loading one.
        workload, seed = self.spec.workloads[0], self.spec.seeds[0]
        try:
            out = self._reference_run(self._make_inputs(workload, seed))
            self._sync()
        except BaseException as exc:
            raise HarnessError(f"reference failed on {workload.label} seed {seed}: {describe_exception(exc)}") from exc
        if not correctness.output_tensors(out):
            raise HarnessError(f"reference returned no tensor on {workload.label}")

    def _load_incumbent(self) -> None:
        # The incumbent passed the guard before; if it no longer loads, time the candidate without it.
        if self.spec.incumbent is None:
            return
        try:
            module = load_module(self.spec.incumbent, MODULE_NAMES["incumbent"])
            self.incumbent_run = self._entry(module, "incumbent")
        except BaseException as exc:
            self.incumbent_failure = f"incumbent failed to import: {describe_exception(exc)}"

    def _load_candidate(self, started: float) -> bool:
        self.seal = self._make_seal()
        self.threads_before = {thread.ident for thread in threading.enumerate()}
        self.thread_count_before = _thread._count()
        try:
            module = load_module(self.spec.candidate, MODULE_NAMES["candidate"])
            run = self._entry(module, "candidate")
        except _NoEntry as missing:
            return self._load_failed(str(missing), started)
        except BaseException as exc:
            reason = f"candidate failed to import: {describe_exception(exc, self.spec.candidate)}"
            return self._load_failed(reason, started)
        broken = self.seal.broken()
        if broken is not None:
            return self._load_failed(broken, started)
        self.candidate_run = run
        self.seconds["load"] = perf_counter() - started
        return True

    def _entry(self, module: ModuleType, role: str) -> Callable[..., object]:
        """The callable to judge: the module's ``run``, or what the reference's ``candidate_run(module, device)``
        builds from it (a KernelBench reference instantiates the module's ModelNew, seeded like its Model)."""
        assert self.reference is not None
        build = getattr(self.reference, "candidate_run", None)
        run = build(module, self.device) if callable(build) else getattr(module, "run", None)
        if not callable(run):
            raise _NoEntry(f"{role} has no callable run")
        return run

    def _make_seal(self) -> correctness.HarnessSeal:
        seal = correctness.default_seal([correctness, timing, ceilings, distributions, sys.modules[__name__]])
        assert self.reference is not None
        seal.watch_module(self.reference, ("make_inputs", "run"))
        incumbent = sys.modules.get(MODULE_NAMES["incumbent"])
        if incumbent is not None and self.incumbent_run is not None:
            seal.watch_module(incumbent, ("run",))
        return seal

    def _load_failed(self, reason: str, started: float) -> bool:
        self.seconds["load"] = perf_counter() - started
        self._fail(reason)
        return False

    # ------------------------------------------------------------ correctness

    def _check_correctness(self) -> bool:
        for workload in self.spec.workloads:
            record = WorkloadRecord(index=workload.index, held_out=workload.held_out)
            self.records.append(record)
            for case, (seed, distribution) in enumerate(distributions.assign(self.spec.seeds, self.spec.distributions)):
                failure = self._check_case(workload, seed, distribution, record, twice=case == 0)
                if failure is not None:
                    record.failure = failure
                    self._fail(f"{workload.label} seed {seed} ({distribution} inputs): {failure}", workload)
                    return False
            record.correct = True
        return True

    def _check_case(self, workload: Workload, seed: int, distribution: str, record: WorkloadRecord,
                    twice: bool) -> str | None:
        """Run reference and candidate on one seed's inputs; the failure reason or None. With ``twice`` the
        candidate runs again on a fresh copy of the same inputs and must give the same bits."""
        inputs = self._make_inputs(workload, seed, distribution)
        pristine = correctness.snapshot_inputs(inputs)
        expected = self._reference_run(correctness.snapshot_inputs(inputs))
        self._sync()
        correctness.poison_allocator(correctness.output_tensors(expected), self.device)
        called = perf_counter()
        out, failure = self._call_candidate(inputs)
        if twice:  # a workload's first call: the candidate's JIT compiles its kernels for these shapes here
            self.seconds["compile"] = self.seconds.get("compile", 0.0) + perf_counter() - called
        if failure is not None:
            return failure
        failure = self._tampering()
        if failure is not None:
            return failure
        comparison = correctness.compare_outputs(out, expected, self.spec.tolerance)
        record.absorb(comparison)
        failure = comparison.failure or correctness.verify_inputs(inputs, pristine)
        if failure is None and twice and self.spec.deterministic:
            failure = self._check_determinism(out, pristine)
        return failure

    def _check_determinism(self, first: object, pristine: list[object]) -> str | None:
        again, failure = self._call_candidate(correctness.snapshot_inputs(pristine))
        if failure is not None:
            return f"second run on the same inputs: {failure}"
        first_tensors, again_tensors = correctness.output_tensors(first), correctness.output_tensors(again)
        if len(first_tensors) != len(again_tensors) or not all(
            correctness.bitwise_equal(a, b) for a, b in zip(first_tensors, again_tensors, strict=True)
        ):
            return "nondeterministic: two runs on the same inputs gave different bits"
        return None

    def _call_candidate(self, inputs: Sequence[object]) -> tuple[object, str | None]:
        assert self.candidate_run is not None
        try:
            out = self.candidate_run(*inputs)
        except BaseException as exc:
            return None, f"candidate raised {describe_exception(exc, self.spec.candidate)}"
        try:
            self._sync()  # asynchronous CUDA errors (illegal address, device assert) surface here
        except BaseException as exc:
            return None, f"CUDA error after the candidate's call: {describe_exception(exc)}"
        return out, None

    def _tampering(self) -> str | None:
        """Patched harness functions or settings, or threads the candidate left running."""
        assert self.seal is not None
        broken = self.seal.broken()
        if broken is not None:
            return broken
        alive = [t.name for t in threading.enumerate() if t.ident not in self.threads_before and t.is_alive()]
        if alive:
            return f"candidate left a thread running after returning ({', '.join(alive)})"
        # Threads started with _thread directly are not in threading.enumerate(); the interpreter counts them.
        if _thread._count() > self.thread_count_before:
            return "candidate left a thread running after returning (started with _thread, unnamed)"
        return None

    # ------------------------------------------------------------ timing

    def _time_workloads(self) -> bool:
        # What loading, compiling and checking left alive stays alive: freezing it keeps the collection that
        # precedes each workload's timing (so none falls inside a timed call) from walking all of it again.
        gc.collect()
        gc.freeze()
        timer = timing.make_timer(self.device)
        for workload, record in zip(self.spec.workloads, self.records, strict=True):
            failure = self._time_workload(workload, record, timer)
            if failure is not None:
                record.correct, record.failure = False, failure
                self._fail(f"{workload.label}: {failure}", workload)
                return False
        self.stage = "done"
        self.correct = True
        return True

    def _time_workload(self, workload: Workload, record: WorkloadRecord, timer: timing.Timer) -> str | None:
        try:
            measured = self._interleave(workload, self._fresh_inputs(workload), timer)
        except CallError as exc:
            return f"{exc.role} raised during timing: {describe_exception(exc.error, self.spec.candidate)}"
        failure = measured.audit_failure or self._tampering()
        if failure is None:
            self._record_times(record, measured)
            record.harness = {**timer.diagnostics(), "side_stream_us": measured.side_stream_us.get("candidate", 0.0)}
        return failure

    def _fresh_inputs(self, workload: Workload) -> timing.Prepare:
        """New inputs for every timed call (seeds no correctness case uses); the candidate's output is checked
        against the reference run afterwards on a copy taken before the call, so neither an address- or
        value-keyed cache nor a kernel that degrades after a few calls survives timing."""
        base = _POOL_SEED_BASE + 100_003 * workload.index
        audits = random.Random(f"{self.spec.rng_seed}:seal:{workload.index}")

        def prepare(role: str, call: int) -> tuple[Sequence[object], timing.Check | None]:
            inputs = self._make_inputs(workload, base + call)
            if role != "candidate":
                return inputs, None
            before = correctness.snapshot_inputs(inputs)
            # The seal costs milliseconds, so it is checked on a random share of the timed calls: a candidate
            # that patches the checker for a wrong call and restores it before the next one is caught on
            # 1 - (1 - SEAL_AUDIT_SHARE)**k of its k wrong calls.
            audit_seal = audits.random() < SEAL_AUDIT_SHARE

            def check(out: object) -> str | None:
                tampered = self._tampering() if audit_seal else None
                if tampered is not None:
                    return tampered
                expected = self._reference_run(before)
                comparison = correctness.compare_outputs(out, expected, self.spec.tolerance)
                return comparison.failure

            return inputs, check

        return prepare

    def _interleave(
        self,
        workload: Workload,
        prepare: timing.Prepare,
        timer: timing.Timer,
    ) -> timing.Interleaved:
        assert self.reference is not None and self.candidate_run is not None
        fns: dict[str, Callable[..., object]] = {"reference": self.reference.run, "candidate": self.candidate_run}
        if self.incumbent_run is not None:
            fns["incumbent"] = self.incumbent_run
        rng = random.Random(f"{self.spec.rng_seed}:{workload.index}")
        try:
            return timing.time_interleaved(fns, prepare, timer, self.spec.timing, rng)
        except CallError as exc:
            if exc.role != "incumbent":
                raise
            reason = describe_exception(exc.error)
        # The incumbent broke: say so, and time the candidate against the reference alone.
        self.incumbent_failure = f"incumbent raised during timing on {workload.label}: {reason}"
        self.incumbent_run = None
        return self._interleave(workload, prepare, timer)

    def _record_times(self, record: WorkloadRecord, measured: timing.Interleaved) -> None:
        record.time_us = measured.median_us("candidate")
        record.ref_time_us = measured.median_us("reference")
        record.incumbent_time_us = measured.median_us("incumbent")
        record.reps = measured.rounds
        record.rel_se = measured.rel_se("candidate")
        record.paired_ratios = measured.paired_ratios("incumbent", "candidate")

    # ------------------------------------------------------------ helpers

    def _make_inputs(self, workload: Workload, seed: int, distribution: str = "normal") -> tuple[object, ...]:
        assert self.reference is not None
        on = self.device if self.device.type != "meta" else "cpu"  # meta tensors draw from a CPU generator
        generator = torch.Generator(device=on).manual_seed(seed)
        return distributions.make_inputs(self.reference.make_inputs, dict(workload.axes), generator, self.device,
                                         distribution)

    def _reference_run(self, inputs: Sequence[object]) -> object:
        assert self.reference is not None
        return self.reference.run(*inputs)

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def _fail(self, reason: str, workload: Workload | None = None) -> None:
        if self.failure is None:  # the first failure is the one reported
            self.failure, self.failed_workload = reason, workload
        self.correct = False

    def _harness_failed(self, reason: str, started: float) -> dict[str, object]:
        self.ok, self.failure = False, reason
        self.seconds["load"] = perf_counter() - started
        return self.result()

    def result(self) -> dict[str, object]:
        failed = self.failed_workload
        return {
            "ok": self.ok,
            "correct": self.ok and self.correct and self.failure is None,
            "failure": self.failure,
            "failure_workload": failed.index if failed else None,
            "failure_held_out": bool(failed and failed.held_out),
            "stage": self.stage,
            "workloads": [asdict(record) for record in self.records],
            "incumbent_failure": self.incumbent_failure,
            "device": self.device_info,
            "seconds": {key: self.seconds.get(key, 0.0) for key in PHASES},
            "compiler": self.compiler,
        }


# ---------------------------------------------------------------- profile mode


def run_profile(spec: Spec) -> dict[str, object]:
    started = perf_counter()
    try:
        device = resolve_device(spec.device)
        info = ceilings.device_info(device)
        measured = ceilings.measure_ceilings(device)
    except Exception as exc:
        return {"ok": False, "failure": f"profile failed: {describe_exception(exc)}", "device": None}
    gpu_count = torch.cuda.device_count() if device.type == "cuda" else 0
    return {"ok": True, "device": info, **measured, "gpu_count": gpu_count,
            "seconds": {"profile": perf_counter() - started}}


# ---------------------------------------------------------------- result file and entry point


def json_safe(value: object) -> object:
    """Non-finite floats become null: the parent parses strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def write_result(path: str, payload: Mapping[str, object]) -> None:
    """Write atomically: a reader sees either no file or the whole result."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(json_safe(dict(payload)), handle, allow_nan=False, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _spec_failure(reason: str) -> dict[str, object]:
    return {"ok": False, "correct": False, "failure": reason, "stage": "load", "workloads": [], "device": None}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; 0 when the result file was written, 2 when the spec gave no place to write it."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m arcengine.guard.child SPEC.json", file=sys.stderr)
        return 2
    if argv is None:
        del sys.argv[1:]  # defence in depth: candidate code has no business finding the spec
    return run_spec_file(args[0])


def run_spec_file(spec_path: str) -> int:
    """Judge the spec at `spec_path` and write its result; main's exit codes.

    Shared by ``python -m arcengine.guard.child`` and the zygote's forked children, so both run the same code.
    """
    try:
        raw = json.loads(Path(spec_path).read_text(encoding="utf-8"))
        result_path = str(raw["result"])
        # The token proves a result came from here; the spec goes before any candidate code can read it.
        token = raw.pop("token", None)
        Path(spec_path).unlink(missing_ok=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"unreadable spec {spec_path}: {exc}", file=sys.stderr)
        return 2
    try:
        spec = parse_spec(raw)
    except SpecError as exc:
        write_result(result_path, {**_spec_failure(f"bad spec: {exc}"), "token": token})
        return 0
    try:
        payload = run_profile(spec) if spec.mode == "profile" else Evaluation(spec).run()
    except BaseException as exc:  # run() is not meant to raise; a result file is still owed
        payload = _spec_failure(f"harness crashed: {describe_exception(exc)}")
    write_result(result_path, {**payload, "token": token})
    return 0


def exit_now(code: int) -> NoReturn:
    """Flush and leave without interpreter teardown.

    Atexit hooks registered by candidate code and a CUDA context that the candidate may have killed must not
    turn a written verdict into a crash, or into a forged one: a candidate that broke sys.stdout must not get
    an exception out of here, and with it the interpreter's exit and its atexit hooks.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    exit_now(main())
