"""The guard's sandbox child: judges one candidate from a fresh process.

Run as ``python -m arcengine.guard.child.judge SPEC.json`` by the engine, with a private working directory, a
scrubbed environment and its own process group. Before it reads its spec it forks a worker for each role, the
reference, the candidate and the incumbent (arcengine.guard.child.worker), so their memory holds nothing of the spec,
the token that authenticates the result, or anything the judge records. The judge (this process) loads the
reference, checks the candidate's outputs on every workload and seed against the reference it runs itself,
times every role in its worker, interleaved, audits each timed call of the candidate, and writes one JSON
result atomically at the end. Anything the
candidate does wrong, including crashing or hanging its worker, is a verdict in that file; only a dead judge
leaves no file.

Imports are limited to the standard library, torch, numpy and the guard's own child-side modules, so that
nothing of the engine (or its secrets) is loaded next to candidate code.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import random
import secrets
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from time import perf_counter
from types import ModuleType
from typing import Any

import torch

from arcengine.guard.child import (
    PROFILING,
    baselines,
    ceilings,
    correctness,
    destinations,
    device_memory,
    distributions,
    draw_spread,
    precompile,
    process,
    roles,
    timing,
    worker,
)
from arcengine.guard.child.correctness import Comparison, Tolerance, describe_exception
from arcengine.guard.child.roles import RemoteRole, WorkerLost
from arcengine.guard.child.timing import CallError, TimingConfig
from arcengine.guard.child.worker import load_module, make_inputs

WORKER_ROLES = ("reference", *worker.ROLE_MODULES)
# Where a child's time goes: loading, waiting for its compiler and for its turn on the device (gated children),
# compiling at first calls, checking, timing; checking the baseline's routes (their compilation included).
PHASES = ("load", "precompile", "wait", "compile", "correctness", "baseline", "timing")
_POOL_SEED_BASE = 1_000_003  # timing inputs come from seeds far from the correctness seeds
_SPREAD_SEED_BASE = 500_009  # and the draws that probe how far outputs move (draw_spread) from others again
SEAL_AUDIT_SHARE = 0.25  # of the candidate's timed blocks and checked calls, those after which the seal is checked
AUDIT_SHARE = 0.25  # of a timed block's calls, those whose outputs are audited (drawn after the reply), and its last
# Outputs above this are compared in full on a workload's first case, and sampled on its determinism rerun and
# its other cases: shipping tens of megabytes out of the worker and back to the GPU cost more than the call.
FULL_COMPARE_BYTES = 4 << 20
BLOCK_BYTES = 2 << 30  # what a block of timed calls may hold on the device (inputs, snapshots, outputs)


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
class Baseline:
    """The baseline's routes (see arcengine.guard.child.baselines) and the file of the library ones ("": none)."""

    routes: tuple[str, ...]
    module: str = ""


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
    input_salt: int | None = None  # pins the inputs (tests, reproductions); otherwise drawn fresh per child
    baseline: Baseline | None = None  # routes to check and time beside the reference (None: not this child)
    # The candidate and the incumbent are called as run(*inputs, *outputs) and write into the outputs (see
    # arcengine.guard.child.destinations); the reference and the baseline return theirs.
    destination_passing: bool = False


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
        input_salt=int(raw["input_salt"]) if raw.get("input_salt") is not None else None,  # type: ignore[call-overload]
        baseline=_baseline(raw.get("baseline")),
        destination_passing=bool(raw.get("destination_passing", False)),
    )


def _baseline(raw: object) -> Baseline | None:
    if not raw:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("routes"), list) or not raw["routes"]:
        raise SpecError(f"baseline must name its routes, got {raw!r}")
    return Baseline(tuple(str(route) for route in raw["routes"]), str(raw.get("module") or ""))


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


def resolve_device(kind: str) -> torch.device:
    if kind == "auto":
        kind = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        return worker.resolve_device(kind)
    except RuntimeError as exc:
        raise HarnessError(str(exc)) from exc


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
    ref_rel_se: float | None = None  # of the reference's median: how a later child's reference is compared
    paired_ratios: list[float] = field(default_factory=list)
    harness: dict[str, float] = field(default_factory=dict)
    baseline_times_us: dict[str, float] = field(default_factory=dict)  # per correct route, its median
    baseline_failures: dict[str, str] = field(default_factory=dict)  # per route that failed here, why
    baseline_route: str | None = None  # the fastest correct route: the workload's baseline
    baseline_time_us: float | None = None
    baseline_paired_ratios: list[float] = field(default_factory=list)  # per round, baseline/candidate

    def absorb(self, comparison: Comparison) -> None:
        """Keep the worst error and the lowest matched ratio over the seeds."""
        err, ratio = comparison.max_abs_err, comparison.matched_ratio
        self.max_abs_err = err if self.max_abs_err is None else max(self.max_abs_err, err)
        self.matched_ratio = ratio if self.matched_ratio is None else min(self.matched_ratio, ratio)


# ---------------------------------------------------------------- evaluation

COMPILE_ALLOWANCE_S = 120.0  # a workload's first call may compile (JIT, autotuning, torch.compile) this long
CALL_LIMIT_FLOOR_S = 10.0  # any later request (a call, a block of timed calls) gets at least this long ...
CALL_LIMIT_CAP_S = 60.0  # ... and at most this: a hang is judged within a minute
CALL_LIMIT_FACTOR = 100.0  # ... else this many times the reference's own time for its calls
LOAD_LIMIT_S = 60.0  # a worker's imports and device set-up, beside its compiler's own limit


class Evaluation:
    """One candidate's evaluation, judged from this process: `run()` never raises.

    This process (the judge) runs and times the reference and compares outputs; the candidate and the
    incumbent each run in a worker process of their own (arcengine.guard.child.worker), forked before the spec was
    read, which times its own calls and sends their outputs' bytes here. Nothing the judge records is in reach
    of their code."""

    def __init__(self, spec: Spec, workers: Mapping[str, RemoteRole]) -> None:
        self.spec = spec
        self.workers = dict(workers)
        self.device = torch.device("cpu")
        self.device_info: dict[str, object] | None = None
        self.reference: ModuleType | None = None
        self.timer_kind: str | None = None
        self.incumbent_failure: str | None = None
        self.baseline_failure: str | None = None  # why no route of the baseline could be judged at all
        self.routes: dict[int, list[str]] = {}  # per workload, the baseline's routes still correct there
        self.records: list[WorkloadRecord] = []
        self.seconds: dict[str, float] = {}
        self.compiler: dict[str, float] = {}  # a gated child's compiler: seconds per step, and its exit
        self.stage = "load"
        self.ok = True
        self.correct = False
        self.failure: str | None = None
        self.failed_workload: Workload | None = None
        self.reference_s: dict[int, float] = {}  # per workload, the reference's slowest checked call (limits)
        self.compiled: set[int] = set()  # workloads whose first candidate call (with its compilation) is done
        self.compiled_routes: set[tuple[int, str]] = set()  # (workload, route) the baseline has called once
        self.output_sizes: dict[int, list[int]] = {}  # per workload, the reference's outputs' bytes (first case)
        # per workload, its needles distribution where the reference took every such case (timed calls), else ""
        self.needled: dict[int, str] = {}
        self.tolerances: dict[int, Tolerance] = {}  # per workload, once probed (see _tolerance)
        # Per workload, the outputs a destination-passing candidate is given to write into (from the same case).
        self.destinations: dict[int, dict[str, Any]] = {}
        salt = spec.input_salt if spec.input_salt is not None else int.from_bytes(os.urandom(7), "big")
        self.input_salt = salt  # fresh in every child unless pinned: no answer can be cached across children
        # What the judge draws (audited calls, sampled positions, seal checks) from a salt of its own, never sent to
        # a worker: the input salt can be worked out from any call's seed, which a candidate's inputs are made from.
        self.draw_salt = spec.input_salt if spec.input_salt is not None else int.from_bytes(os.urandom(7), "big")
        self.samples = random.Random(f"{spec.rng_seed}:{self.draw_salt}:sample")  # positions of sampled comparisons

    @property
    def candidate(self) -> RemoteRole:
        return self.workers["candidate"]

    def run(self) -> dict[str, object]:
        started = perf_counter()
        self._begin_loading_workers()  # they compile, take the device and import while the judge does the same
        try:
            self._load_harness()
        except HarnessError as exc:
            return self._harness_failed(str(exc), started)
        except Exception as exc:
            return self._harness_failed(f"harness failed to start: {describe_exception(exc)}", started)
        if not self._load_workers(started):
            return self.result()
        for role in worker.CANDIDATE_ROLES:  # from their first call: what their loading took is no leak
            if role in self.workers:
                self.workers[role].memory = device_memory.watch(self.device)
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

    def _judge(self) -> None:
        try:
            if self._timed("correctness", self._check_correctness):
                self._timed("timing", self._time_workloads)
        except BaseException as exc:  # after candidate code ran, any harness breakage is its verdict
            self._fail(f"harness error after candidate ran: {describe_exception(exc)}")

    def _timed(self, stage: str, step: Callable[[], bool]) -> bool:
        self.stage = stage
        apart = ("compile", "baseline")  # the candidate's first calls (JIT compilation) and the baseline's checks
        started, before = perf_counter(), sum(self.seconds.get(phase, 0.0) for phase in apart)
        try:
            return step()
        finally:  # are phases of their own
            inside = sum(self.seconds.get(phase, 0.0) for phase in apart) - before
            self.seconds[stage] = perf_counter() - started - inside

    # ------------------------------------------------------------ load

    def _load_harness(self) -> None:
        self.device = resolve_device(self.spec.device)
        self.device_info = ceilings.device_info(self.device)
        try:
            self.reference = load_module(self.spec.reference, worker.REFERENCE_MODULE)
        except BaseException as exc:
            raise HarnessError(f"reference failed to import: {describe_exception(exc)}") from exc
        for name in ("make_inputs", "run"):
            if not callable(getattr(self.reference, name, None)):
                raise HarnessError(f"reference has no callable {name}")

    def _begin_loading_workers(self) -> None:
        """Each worker compiles, takes the device and imports its module, side by side (see _load_workers)."""
        baseline = self.spec.baseline
        paths = {"reference": self.spec.reference, "candidate": self.spec.candidate, "incumbent": self.spec.incumbent,
                 "baseline": baseline.module if baseline else None}
        wanted = {"reference", "candidate", *(["incumbent"] if self.spec.incumbent else []),
                  *(["baseline"] if baseline else [])}
        for role, remote in list(self.workers.items()):
            if role not in wanted:
                remote.close()
                del self.workers[role]
        if baseline is not None:
            self.routes = {w.index: list(baseline.routes) for w in self.spec.workloads}
        # The processes an untrusted worker's code may not signal, trace or slow: this judge, its warm parent and
        # every worker (arcengine.guard.child.confine).
        protect = sorted({os.getpid(), os.getppid(), *(remote.pid for remote in self.workers.values())})
        common = {"device": self.spec.device, "reference": self.spec.reference, "precompile": bool(self.spec.gate),
                  "protect": protect, "destination_passing": self.spec.destination_passing,
                  "workloads": [{"index": w.index, "axes": w.axes} for w in self.spec.workloads]}
        for role, remote in self.workers.items():  # all start before any is waited for
            # The reference and the baseline are code the problem ships: nothing of them to compile ahead.
            precompiled = common["precompile"] and role in worker.CANDIDATE_ROLES
            routes = list(baseline.routes) if baseline and role == "baseline" else []
            with contextlib.suppress(WorkerLost):  # a worker already gone is told when its reply is awaited
                remote.begin({"op": "load", "module": paths[role], **common, "precompile": precompiled,
                              "routes": routes})

    def _load_workers(self, started: float) -> bool:
        """The workers' loads awaited; False if the candidate did not load (the incumbent that does not is
        dropped, and the candidate timed without it)."""
        limit = precompile.COMPILE_LIMIT_S + LOAD_LIMIT_S
        replies = {role: self._load_reply(remote, limit) for role, remote in self.workers.items()}
        if not replies["reference"].get("ok"):
            self.ok = False
            self._fail(f"reference worker: {replies['reference'].get('failure')}")
            return False
        candidate = replies["candidate"]
        # Written by the candidate's worker after its module ran: read as numbers or not at all.
        self.seconds["precompile"] = roles.numbers(candidate.get("seconds")).get("precompile", 0.0)
        self.compiler = roles.numbers(candidate.get("compiler"))
        self.seconds["load"] = perf_counter() - started - self.seconds["precompile"]
        incumbent = replies.get("incumbent")
        if incumbent is not None and not incumbent.get("ok"):
            self.incumbent_failure = str(incumbent.get("failure"))
            self.workers.pop("incumbent").close()
        baseline = replies.get("baseline")
        if baseline is not None and not baseline.get("ok"):
            self._drop_baseline(f"the baseline did not load: {baseline.get('failure')}")
        if candidate.get("harness"):
            self.ok = False
        if not candidate.get("ok"):
            self._fail(str(candidate.get("failure") or "the candidate's worker did not load it"))
            return False
        return True

    def _load_reply(self, remote: RemoteRole, limit: float) -> dict[str, Any]:
        try:
            header, _ = remote.finish(limit)
        except WorkerLost as lost:
            return {"ok": False, "failure": f"the {remote.role} did not load: {lost}"}
        return header

    def _smoke_test_reference(self) -> None:
        # A broken problem must not read as a broken candidate, so try the reference before loading one.
        workload, seed = self.spec.workloads[0], self.spec.seeds[0]
        try:
            out = self._reference_run(self._make_inputs(workload, self._seed(seed)))
            self._sync()
        except BaseException as exc:
            raise HarnessError(f"reference failed on {workload.label} seed {seed}: {describe_exception(exc)}") from exc
        if not correctness.output_tensors(out):
            raise HarnessError(f"reference returned no tensor on {workload.label}")
        described = destinations.describe(out)
        if self.spec.destination_passing and isinstance(described, str):
            raise HarnessError(f"destination passing declared, but {described} ({workload.label})")

    # ------------------------------------------------------------ correctness

    def _check_correctness(self) -> bool:
        # The seal (a few milliseconds) is checked after a random share of the calls and after each workload's
        # last: a patch that stays is caught at the first check; one undone before each return changed nothing
        # the harness read after it.
        seals = random.Random(f"{self.spec.rng_seed}:{self.draw_salt}:seal")
        for workload in self.spec.workloads:
            record = WorkloadRecord(index=workload.index, held_out=workload.held_out)
            self.records.append(record)
            cases = distributions.assign(self.spec.seeds, self.spec.distributions)
            for case, (seed, distribution) in enumerate(cases):
                seal = case == len(cases) - 1 or seals.random() < SEAL_AUDIT_SHARE
                failure = self._check_case(workload, seed, distribution, record, twice=case == 0, seal=seal)
                if failure is not None:
                    record.failure = failure
                    self._fail(f"{workload.label} seed {seed} ({distribution} inputs): {failure}", workload)
                    return False
            record.correct = True
        return True

    def _check_case(self, workload: Workload, seed: int, distribution: str, record: WorkloadRecord,
                    twice: bool, seal: bool = True) -> str | None:
        """Run reference and candidate on one seed's inputs; the failure reason or None. With ``twice`` the
        candidate runs again on a fresh copy of the same inputs and must give the same bits; with ``seal`` its
        worker checks the harness seal after the call. Once a workload's outputs are known by size (its first
        case), the candidate's worker makes its call while the judge runs the reference."""
        drawn = self._seed(seed)
        command: dict[str, Any] = {"workload": workload.index, "seed": drawn, "distribution": distribution,
                                   "seal": seal}
        sizes = self.output_sizes.get(workload.index)
        # Needles may leave the op undefined (the log of a probability made large): the reference goes first there.
        needles = distributions.is_needles(distribution)
        begun = sizes is not None and not twice and not needles
        if begun:
            assert sizes is not None
            command |= {"poison": sizes, "hold": sum(sizes) > FULL_COMPARE_BYTES, **self._outputs(workload)}
            try:
                self.candidate.begin_call(command)
            except WorkerLost as lost:
                return f"the candidate {lost}"
        inputs = self._make_inputs(workload, drawn, distribution)
        called = perf_counter()
        try:
            expected = self._reference_run(inputs)
            self._sync()
        except Exception:
            if not needles:
                raise
            expected = None  # the reference refuses values outside the op's domain: nothing to check there
        if needles:
            defined = expected is not None and _finite(expected)
            every = self.needled.get(workload.index, distribution) == distribution and defined  # every such case
            self.needled[workload.index] = distribution if every else ""
            if not defined:
                return None
        self._learn_reference_time(workload, perf_counter() - called)
        if not begun:
            sizes = self.output_sizes[workload.index] = [
                t.numel() * t.element_size() for t in correctness.output_tensors(expected)]
            described = destinations.describe(expected)
            if isinstance(described, dict):
                self.destinations[workload.index] = described
            command |= {"poison": sizes, "hold": not twice and sum(sizes) > FULL_COMPARE_BYTES,
                        **self._outputs(workload)}
        self._check_baseline(workload, {**command, "seal": False, "poison": [], "hold": False}, expected, record)
        sampled = bool(command["hold"])
        reply, sample = self._call_candidate(workload, command, expected, begun), 0
        if reply.failure is None and sampled:
            reply, sample = self._sample_held(workload, expected)
        if reply.failure is not None:
            return reply.failure
        outputs = self._on_device(reply.outputs)
        tol = self._tolerance(workload)
        comparison = (correctness.compare_samples(outputs, expected, sample, tol) if sampled
                      else correctness.compare_outputs(outputs, expected, tol))
        record.absorb(comparison)
        if comparison.failure is None and twice and self.spec.deterministic:
            return self._check_determinism(workload, command, reply.outputs, expected)
        return _explained(comparison.failure, tol)

    def _sample_held(self, workload: Workload, expected: object) -> tuple[roles.Reply, int]:
        """The held call's outputs at positions drawn only now that it has returned (see correctness.sample_output),
        and the seed that drew them."""
        sample = self.samples.getrandbits(62)
        weight = roles.max_payload(correctness.sample_output(expected, sample))
        try:
            (shown,) = self.candidate.audit([sample], False, self._limit(workload), weight)
        except (WorkerLost, ValueError) as lost:
            return roles.Reply(f"the candidate {lost}"), sample
        return shown, sample

    def _check_determinism(self, workload: Workload, command: Mapping[str, Any], first: object,
                           expected: object) -> str | None:
        """The candidate again on a fresh copy of the case's inputs: the same bits, everywhere (outputs over
        FULL_COMPARE_BYTES: at positions drawn once the rerun returned, as for any sampled case)."""
        sampled = correctness.tensor_bytes(correctness.output_tensors(expected)) > FULL_COMPARE_BYTES
        again, sample = self._call_candidate(workload, {**command, "hold": sampled}, expected), 0
        if again.failure is None and sampled:
            again, sample = self._sample_held(workload, expected)
        if again.failure is not None:
            return f"second run on the same inputs: {again.failure}"
        before = _bits(correctness.sample_output(first, sample) if sampled else first)
        after = _bits(again.outputs)
        if len(before) != len(after) or not all(
            correctness.bitwise_equal(a, b) for a, b in zip(before, after, strict=True)
        ):
            return "nondeterministic: two runs on the same inputs gave different bits"
        return None

    def _call_candidate(self, workload: Workload, command: Mapping[str, Any], expected: object,
                        begun: bool = False) -> roles.Reply:
        """One untimed call in the candidate's worker (``begun``: sent already); its first call on a workload
        may compile, and its time is counted as compilation."""
        first = workload.index not in self.compiled
        limit = self._limit(workload, first=first)
        try:
            if not begun:
                self.candidate.begin_call(command)
            reply = self.candidate.finish_call(command, limit, roles.max_payload(expected))
        except WorkerLost as lost:
            return roles.Reply(f"the candidate {_with_allowance(lost, first)}")
        if first:
            self.compiled.add(workload.index)
            self.seconds["compile"] = self.seconds.get("compile", 0.0) + reply.seconds
        return reply

    def _check_baseline(self, workload: Workload, command: Mapping[str, Any], expected: object,
                        record: WorkloadRecord) -> None:
        """Each of the baseline's routes still correct on this workload, on the case's inputs: a route that fails
        (wrong, raised, too slow to compile) is no baseline here, and the record says why."""
        remote = self.workers.get("baseline")
        if remote is None:
            return
        started = perf_counter()
        for route in list(self.routes[workload.index]):
            first = (workload.index, route) not in self.compiled_routes  # its compilation: baseline time, untimed
            limit = self._limit(workload, first=first)
            try:
                reply = remote.call({**command, "route": route}, limit, roles.max_payload(expected))
            except WorkerLost as lost:
                self._drop_baseline(f"the baseline {_with_allowance(lost, first)}")
                break
            self.compiled_routes.add((workload.index, route))
            failure = reply.failure or correctness.compare_outputs(
                self._on_device(reply.outputs), expected, self.spec.tolerance).failure
            if failure is not None:
                self._drop_route(workload, route, record, failure)
        self.seconds["baseline"] = self.seconds.get("baseline", 0.0) + perf_counter() - started

    def _drop_route(self, workload: Workload, route: str, record: WorkloadRecord, failure: str) -> None:
        self.routes[workload.index].remove(route)
        first_line = failure.strip().splitlines()[0] if failure.strip() else failure
        record.baseline_failures[route] = first_line[:300]  # a reason for the record, not a dispatcher's wall

    def _drop_baseline(self, reason: str) -> None:
        """No route can be judged any more: the reference stands in for the baseline, and the result says why."""
        self.baseline_failure = self.baseline_failure or reason
        self.routes = {index: [] for index in self.routes}
        remote = self.workers.pop("baseline", None)
        if remote is not None:
            remote.close()

    def _learn_reference_time(self, workload: Workload, reference_s: float) -> None:
        self.reference_s[workload.index] = max(reference_s, self.reference_s.get(workload.index, 0.0))

    def _limit(self, workload: Workload, calls: int = 1, first: bool = False) -> float:
        """How long a request of ``calls`` calls is awaited: CALL_LIMIT_FACTOR times the reference's own, within
        the floor and the cap for the whole request (the floor covers the harness's own work, not each call's),
        plus the compile allowance where it holds a first call."""
        own = CALL_LIMIT_FACTOR * self.reference_s[workload.index] * calls
        return min(CALL_LIMIT_CAP_S, max(CALL_LIMIT_FLOOR_S, own)) + (COMPILE_ALLOWANCE_S if first else 0.0)

    # ------------------------------------------------------------ timing

    def _time_workloads(self) -> bool:
        # What loading, compiling and checking left alive stays alive: freezing it keeps the collection that
        # precedes each workload's timing (so none falls inside a timed call) from walking all of it again.
        gc.collect()
        gc.freeze()
        for workload, record in zip(self.spec.workloads, self.records, strict=True):
            failure = self._time_workload(workload, record)
            if failure is not None:
                record.correct, record.failure = False, failure
                self._fail(f"{workload.label}: {failure}", workload)
                return False
        self.stage = "done"
        self.correct = True
        return True

    def _time_workload(self, workload: Workload, record: WorkloadRecord) -> str | None:
        routes = [baselines.role_of(route) for route in self.routes.get(workload.index, [])]
        roles_now = [role for role in self.workers if role != "baseline"] + routes
        rng = random.Random(f"{self.spec.rng_seed}:{self.input_salt}:{workload.index}")
        started = perf_counter()
        try:
            measured = timing.time_interleaved(roles_now, self._measure(workload), self.spec.timing, rng)
        except CallError as exc:
            if exc.role == "reference":
                raise HarnessError(f"the reference failed during timing on {workload.label}: {exc.message}") from exc
            route = baselines.route_of(exc.role)
            if route is not None:  # that route is no baseline here; time the others again without it
                self._drop_route(workload, route, record, f"failed during timing: {exc.message}")
                if self.workers["baseline"].closed:
                    self._drop_baseline(f"the baseline's worker was lost during timing: {exc.message}")
                return self._time_workload(workload, record)
            if exc.role != "incumbent":
                return f"{exc.role} failed during timing: {exc.message}"
            # The incumbent broke: say so, and time the candidate against the reference alone.
            self.incumbent_failure = f"incumbent failed during timing on {workload.label}: {exc.message}"
            self.workers.pop("incumbent").close()
            return self._time_workload(workload, record)
        if measured.audit_failure is not None:
            return measured.audit_failure
        self._record_times(record, measured)
        self.timer_kind, reference_timer = self.workers["reference"].diagnostics()
        record.harness = {**reference_timer,
                          **{f"candidate_{k}": v for k, v in self.candidate.diagnostics()[1].items()},
                          "timing_s": perf_counter() - started}
        return None

    def _measure(self, workload: Workload) -> timing.Measure:
        """Fresh inputs for every timed call (seeds no correctness case uses); every role is timed in its worker,
        a block of calls per visit (see _Blocks). The judge audits each of the candidate's calls once the block's
        reply is in, so no call can know what will be looked at: its inputs unchanged, the seal intact (after a
        random share of the blocks), and its outputs at positions drawn then, against the reference run on the
        same inputs. A cache, a replay or a kernel that degrades after a few calls fails on its first wrong call."""
        return _Blocks(self, workload).measure

    def _time_block(self, workload: Workload, role: str, seeds: list[int], first: bool,
                    audits: random.Random, warm: bool = False) -> list[timing.Measured]:
        """One visit of a role: its block of calls timed, and the candidate's audited (but for a warm-up block,
        whose times are not kept: its inputs are still checked); CallError if another role fails."""
        candidate = role == "candidate"
        # The incumbent is untrusted code too, and asked what the candidate is asked (a module that could tell
        # the two apart could skip its work as the incumbent only): its inputs checked, its outputs audited.
        untrusted = role in worker.CANDIDATE_ROLES
        command = {"workload": workload.index, "seeds": seeds, "hold": untrusted and not warm, "warm": warm,
                   "check_inputs": untrusted, "route": baselines.route_of(role),
                   "needles": self.needled.get(workload.index, ""), **self._outputs(workload)}
        remote = self.workers["baseline" if baselines.route_of(role) is not None else role]
        try:
            timed = remote.time(command, self._limit(workload, len(seeds), first))
            measured = [timing.Measured(us) for us in timed.times]
            if timed.failure is None and untrusted and not warm:
                # The inputs' seeds are the worker's, drawn as it made each call's inputs (see worker.Worker.time).
                measured = self._audit(workload, role, timed.seeds, self._limit(workload, len(seeds)), audits,
                                       timed.times)
                wrong = next((m.failure for m in measured if m.failure is not None), None)
                if wrong is not None and not candidate:  # the incumbent is dropped, as when it breaks
                    raise CallError(role, f"returned a wrong output: {wrong}")
            elif timed.failure is not None:
                if not candidate:  # the reference is the truth, the incumbent passed before: only times count
                    raise CallError(role, timed.failure)
                measured.append(timing.Measured(0.0, timed.failure))
        except WorkerLost as lost:
            raise CallError(role, _with_allowance(lost, first)) from None
        return measured

    def _audit(self, workload: Workload, role: str, seeds: list[int], limit: float, audits: random.Random,
               times: list[float]) -> list[timing.Measured]:
        """An untrusted role's block audited (the candidate's or the incumbent's): every call's conduct, and the
        outputs of a random share of its calls (AUDIT_SHARE, drawn only now) and of its last call against the
        reference's, sampled; the calls up to the first that fails. A call cannot know whether it is looked at,
        so one that skips its work fails with that share's odds each time, and the median cannot move without many
        of them; a kernel that stops working after some number of calls is caught at the end of the block it
        stops in, however late that is."""
        count = len(seeds)
        picked = audited_calls(count, audits)
        samples = [audits.getrandbits(62) if i in picked else None for i in range(count)]
        drawn = {i: self._timed_distribution(workload, seeds[i]) for i in sorted(picked)}
        expected = {i: self._reference_run(self._make_inputs(workload, seeds[i], d)) for i, d in drawn.items()}
        needled = {i for i, d in drawn.items() if distributions.is_needles(d)}
        undefined = {i for i in needled if not _finite(expected[i])}  # needles outside the op's domain: not compared
        weight = max(roles.max_payload(correctness.sample_output(want, samples[i])) for i, want in expected.items())
        replies = self.workers[role].audit(samples, audits.random() < SEAL_AUDIT_SHARE, limit, weight * len(picked))
        measured = []
        for i, (us, reply) in enumerate(zip(times, replies, strict=False)):
            failure = reply.failure
            if failure is None and i in expected and i not in undefined:
                tol = self._tolerance(workload)
                failure = _explained(correctness.compare_samples(self._on_device(reply.outputs), expected[i],
                                                                 samples[i], tol).failure, tol)
                if failure is not None and i in needled:
                    failure = f"needles inputs: {failure}"
            measured.append(timing.Measured(us, failure))
            if failure is not None:
                break
        return measured

    def _record_times(self, record: WorkloadRecord, measured: timing.Interleaved) -> None:
        record.time_us = measured.median_us("candidate")
        record.ref_time_us = measured.median_us("reference")
        record.incumbent_time_us = measured.median_us("incumbent")
        record.reps = measured.rounds
        record.rel_se = measured.rel_se("candidate")
        record.ref_rel_se = measured.rel_se("reference")
        record.paired_ratios = measured.paired_ratios("incumbent", "candidate")
        for route in self.routes.get(record.index, []):
            median = measured.median_us(baselines.role_of(route))
            if median is not None:
                record.baseline_times_us[route] = median
        if record.baseline_times_us:
            fastest = min(record.baseline_times_us, key=record.baseline_times_us.__getitem__)
            role = baselines.role_of(fastest)
            if record.ref_time_us is not None and record.ref_time_us < record.baseline_times_us[fastest]:
                fastest, role = baselines.REFERENCE_ROUTE, "reference"  # a user would run the reference
            record.baseline_route, record.baseline_time_us = fastest, measured.median_us(role)
            record.baseline_paired_ratios = measured.paired_ratios(role, "candidate")

    # ------------------------------------------------------------ helpers

    def _outputs(self, workload: Workload) -> dict[str, Any]:
        """What a destination-passing candidate's call needs: the outputs' shapes and dtypes, as the reference
        made them on this workload's first case (nothing for a candidate that returns its outputs)."""
        if not self.spec.destination_passing:
            return {}
        if workload.index not in self.destinations:
            raise HarnessError(f"the reference's outputs on {workload.label} cannot be passed as destinations")
        return {"outputs": self.destinations[workload.index]}

    def _seed(self, case_seed: int) -> int:
        """The seed a correctness case draws its inputs from: the spec's case, salted fresh for this child."""
        return (self.input_salt + 7_919 * case_seed) % (1 << 62)

    def _tolerance(self, workload: Workload) -> Tolerance:
        """The problem's tolerance, tightened where an output barely moves when one input is drawn afresh (see
        draw_spread): the reference run on draws of the judge's own, which no role sees."""
        if workload.index not in self.tolerances:
            self.tolerances[workload.index] = draw_spread.probed(
                self._reference_run, lambda draw: self._make_inputs(workload, self._seed(_SPREAD_SEED_BASE + draw)),
                self.spec.tolerance)
        return self.tolerances[workload.index]

    def _make_inputs(self, workload: Workload, seed: int, distribution: str = "normal") -> tuple[object, ...]:
        assert self.reference is not None
        return make_inputs(self.reference, workload.axes, seed, distribution, self.device)

    def _timed_distribution(self, workload: Workload, seed: int) -> str:
        """A timed call's distribution, as its worker chose it from the seed it reported (see distributions.timed)."""
        return distributions.timed(seed, self.needled.get(workload.index, ""))

    def _on_device(self, outputs: object) -> object:
        """A worker's outputs, rebuilt on the CPU, moved where the reference's are for the comparison."""
        if isinstance(outputs, tuple):
            return tuple(self._on_device(item) for item in outputs)
        if isinstance(outputs, correctness.Sample):
            return replace(outputs, values=outputs.values.to(self.device))
        return outputs.to(self.device) if isinstance(outputs, torch.Tensor) else outputs

    def _reference_run(self, inputs: Sequence[object]) -> object:
        assert self.reference is not None
        return self.reference.run(*inputs)

    def _sync(self) -> None:
        worker.sync(self.device)

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
            "baseline_failure": self.baseline_failure,
            "device": {**self.device_info, "timer": self.timer_kind} if self.device_info else None,
            "seconds": {key: self.seconds.get(key, 0.0) for key in PHASES},
            "compiler": self.compiler,
            "timer": self.timer_kind,
            "input_salt": self.input_salt,
        }


def _explained(failure: str | None, tol: Tolerance) -> str | None:
    """A comparison's failure, saying so where the tolerance was tightened (see draw_spread)."""
    if failure is None or not isinstance(tol, draw_spread.Tightened):
        return failure
    shares = ", ".join(f"{scale:.2g}" for scale in tol.scales)
    return (f"{failure} (tolerance tightened to {shares} of the problem's: a fresh draw of one input moves the "
            "reference's output by less than the problem's tolerance, so an answer not made from every input's "
            "values would pass that)")


def _finite(outputs: object) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in correctness.output_tensors(outputs) if t.is_floating_point())


def audited_calls(count: int, audits: random.Random) -> set[int]:
    """Which of a block's ``count`` calls have their outputs audited: a random share, and the last."""
    return set(audits.sample(range(count), math.ceil(AUDIT_SHARE * count))) | {count - 1}


class _Blocks:
    """The interleaved loop's view of one workload's timing: it asks for one call at a time, and each role's calls
    are made a block at a time (``TimingConfig.block``, fewer where a block's inputs and outputs would weigh
    too much), the block's times handed out one by one."""

    def __init__(self, judge: Evaluation, workload: Workload) -> None:
        self.judge, self.workload = judge, workload
        self.audits = random.Random(f"{judge.spec.rng_seed}:{judge.draw_salt}:audit:{workload.index}")
        self.base = judge.input_salt + _POOL_SEED_BASE + 100_003 * workload.index
        self.next_seed = 0
        self.pending: dict[str, deque[timing.Measured]] = {}
        self.started: set[str] = set()
        self.warming: set[str] = set()  # roles whose queued calls come from a warm-up block
        self.size: int | None = None

    def measure(self, role: str, call: int, warm: bool) -> timing.Measured:
        queue = self.pending.setdefault(role, deque())
        if not warm and role in self.warming:  # what is left of a warm-up block was not audited: not timed either
            queue.clear()
            self.warming.discard(role)
        if not queue:
            # A warm-up block is the warm-up's length, not a timed block's: what it left over would be dropped.
            size = min(self._size(), max(1, self.judge.spec.timing.warmup)) if warm else self._size()
            seeds = [self.base + self.next_seed + i for i in range(size)]
            self.next_seed += len(seeds)
            # A role's first block here may compile, but for the candidate's: it ran these shapes in correctness.
            first = role not in self.started and role != "candidate"
            self.started.add(role)
            if warm:
                self.warming.add(role)
            queue.extend(self.judge._time_block(self.workload, role, seeds, first, self.audits, warm))
        return queue.popleft()

    def _size(self) -> int:
        if self.size is None:
            self.size = self.judge.spec.timing.block
            if self.size > 1:  # a held block keeps every call's inputs, their snapshot and its outputs alive
                inputs = self.judge._make_inputs(self.workload, self.base)
                outputs = self.judge._reference_run(inputs)
                # Destination-passing calls hold their given outputs beside the copies of what they wrote.
                copies = 2 if self.judge.spec.destination_passing else 1
                weight = 2 * correctness.tensor_bytes(inputs) + copies * correctness.tensor_bytes(
                    correctness.output_tensors(outputs))
                self.size = max(1, min(self.size, BLOCK_BYTES // max(weight, 1)))
        return self.size


def _bits(outputs: object) -> list[torch.Tensor]:
    """The tensors of a return value, or of its Samples (their values, with their shape as a tensor: two runs'
    samples agree only on the same shapes)."""
    items = outputs if isinstance(outputs, tuple | list) else (outputs,)
    found: list[torch.Tensor] = []
    for item in items:
        if isinstance(item, correctness.Sample):
            found += [item.values, torch.tensor(item.shape, dtype=torch.int64)]
        elif isinstance(item, torch.Tensor):
            found.append(item)
    return found


def _with_allowance(lost: WorkerLost, first: bool) -> str:
    """A hang's reason says when its limit held a first call's compile allowance."""
    if first and lost.hung:
        return f"{lost}; a first call on this workload, {COMPILE_ALLOWANCE_S:.0f} s of it allowed for compilation"
    return str(lost)


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
        print("usage: python -m arcengine.guard.child.judge SPEC.json", file=sys.stderr)
        return 2
    if argv is None:
        del sys.argv[1:]  # defence in depth: candidate code has no business finding the spec
    return run_spec_file(args[0])


def fork_workers() -> dict[str, RemoteRole]:
    """A worker per role, forked now (before this process touches CUDA or reads anything secret); then this
    process is made not dumpable, so the workers, running as the same user, cannot read its memory. It is their
    subreaper: a process their code starts and orphans comes to it, where RemoteRole sees it."""
    process.prctl(process.PR_SET_CHILD_SUBREAPER, 1)
    # In a random order: forked in a fixed one, a worker's PID against its parent's told the incumbent from the
    # candidate (red team round 10).
    forked = {role: RemoteRole.fork(role) for role in secrets.SystemRandom().sample(WORKER_ROLES, len(WORKER_ROLES))}
    process.prctl(process.PR_SET_DUMPABLE, 0)
    return {role: forked[role] for role in WORKER_ROLES}


def run_spec_file(spec_path: str) -> int:
    """Judge the spec at `spec_path` and write its result; main's exit codes.

    Shared by ``python -m arcengine.guard.child.judge`` and the zygote's forked children, so both run the same code.
    The workers are forked first, before this process reads the spec or touches CUDA.
    """
    # A profiling child judges nothing: it starts no worker (nor imports what workers need).
    workers = {} if os.environ.get(PROFILING) == "1" else fork_workers()
    try:
        return _judge_spec_file(spec_path, workers)
    finally:
        for remote in workers.values():  # no worker outlives the verdict it could overwrite
            remote.kill()
        for orphan in process.children_of(os.getpid()):  # nor a process that one of them left behind
            process.kill_tree(orphan)


def _judge_spec_file(spec_path: str, workers: Mapping[str, RemoteRole]) -> int:
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
    payload: dict[str, Any]
    try:
        if spec.mode == "profile":
            payload = run_profile(spec)
        elif not workers:
            payload = _spec_failure(f"an evaluation in a child started with {PROFILING}=1, which has no workers")
        else:
            payload = Evaluation(spec, workers).run()
    except BaseException as exc:  # run() is not meant to raise; a result file is still owed
        payload = _spec_failure(f"harness crashed: {describe_exception(exc)}")
    for remote in workers.values():
        remote.kill()
    write_result(result_path, {**payload, "token": token})
    return 0


if __name__ == "__main__":
    process.exit_now(main())
