"""The guard: cascade gate, a priority queue, one worker per device, and the decision.

Agents submit and await; the guard alone decides, and publishes the decision before returning it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import structlog
from pydantic import ValidationError

from arcengine.domain.errors import UserError
from arcengine.domain.events import CandidateDecided, DeviceProfiled
from arcengine.domain.problem import Problem, Workload
from arcengine.guard.baseline_times import BaselineCache, BaselineMode
from arcengine.guard.child import PROFILING
from arcengine.guard.child.baselines import timed_routes
from arcengine.guard.child.native_build import CACHE_ENV
from arcengine.guard.contract import BaselineSpec, ChildResult, ChildSpec, TimingSpec, ToleranceSpec, WorkloadSpec
from arcengine.guard.decision import Ceilings, Thresholds, Verdict, confirm, judge
from arcengine.guard.gate import check_source
from arcengine.guard.gpus import GpuSelectionError, pinned_environment, select_gpus
from arcengine.guard.sandbox import ChildLauncher, ChildOutcome, default_memory_limit, run_child
from arcengine.guard.turns import DeviceTurns
from arcengine.recording.bus import Bus
from arcengine.recording.redact import redact_secrets

log = structlog.get_logger()

PROFILE_TIMEOUT_S = 180.0
PIPELINE_LANES = 2  # children in flight per GPU: one on the device, the next preparing

# Timing settings the child receives, per device kind.
# cuda: a warm-up of four calls per role, no more: the timer's spin-up ramps the clocks before the first
# workload, and each workload's timing follows the last one's with the GPU busy. Blocks of eight calls: a block
# pays a fixed cost (a read of the records, a round trip, the audit's reference run and seal check) of a few
# milliseconds, more than eight calls of a small kernel; at least three blocks per role (24 calls), and a
# quarter-second per workload for the kernels too small and noisy to reach the error target sooner.
TIMING = {
    "cpu": TimingSpec(warmup=1, min_reps=3, max_reps=20, target_rel_se=0.02, max_seconds_per_workload=0.15),
    "cuda": TimingSpec(warmup=4, min_reps=24, max_reps=300, target_rel_se=0.005, max_seconds_per_workload=0.25,
                       block=8),
}


class GuardError(UserError):
    """The guard cannot work at all (for example, the device could not be profiled)."""


class DeviceUnsupported(GuardError):
    """The problem cannot run on the device the guard got (a GPU-only problem on a CPU machine)."""


@dataclass(order=True)
class Job:
    priority: tuple[int, int]
    candidate_id: str = field(compare=False)
    agent_id: str = field(compare=False)
    candidate_path: Path = field(compare=False)
    incumbent_path: Path | None = field(compare=False)
    future: asyncio.Future[CandidateDecided] = field(compare=False)
    warnings: list[str] = field(compare=False, default_factory=list)
    written: anyio.Event | None = field(compare=False, default=None)  # set once the candidate's file is on disk
    source: str = field(compare=False, default="")  # as submitted (a stand-in decides from it; children load the file)
    incumbent_speedup: float | None = field(compare=False, default=None)  # the incumbent's, when it was kept


@dataclass(frozen=True)
class Slot:
    """A device one worker benchmarks on: the CPU (gpu None) or one GPU, with what its profile measured."""

    gpu: int | None
    profile: dict[str, Any]

    @property
    def ceilings(self) -> Ceilings | None:
        if "flops_per_s" not in self.profile:
            return None
        return Ceilings(self.profile["flops_per_s"], self.profile["bandwidth_bytes_per_s"])

    @property
    def env(self) -> dict[str, str]:
        if self.gpu is None:
            return {}
        env = pinned_environment(self.gpu)
        capability = (self.profile.get("device") or {}).get("capability")
        if capability and "TORCH_CUDA_ARCH_LIST" not in os.environ:
            # C++/CUDA a candidate builds with torch.utils.cpp_extension targets this GPU without asking it: its
            # compiler, which runs before the child's turn on the device, then creates no CUDA context.
            env["TORCH_CUDA_ARCH_LIST"] = str(capability)
        return env

    def event(self) -> DeviceProfiled:
        return DeviceProfiled(device=self.profile["device"], gpu=self.gpu,
                              bandwidth_bytes_per_s=self.profile["bandwidth_bytes_per_s"],
                              flops_per_s=self.profile["flops_per_s"])


@dataclass(frozen=True)
class Worker:
    slot: Slot
    launcher: ChildLauncher
    turns: DeviceTurns | None = None  # pipelined: children prepare at once and use the device in turns


class GuardService:
    def __init__(self, problem: Problem, bus: Bus, thresholds: Thresholds, *, seeds: int,
                 timeout_s: float, rng_seed: int = 0, cache_dir: Path | None = None,
                 memory_limit_gib: float | None = None, pipeline: bool = False,
                 baseline: BaselineMode = "once", launcher: Callable[[], ChildLauncher] | None = None,
                 decide: Callable[[Job, Worker], Awaitable[CandidateDecided]] | None = None) -> None:
        self.problem = problem
        # A worker's source of children: a warm parent for this device (a test schedules on fake devices instead).
        self.new_launcher = launcher or self._device_launcher
        # How a worker turns a job into a decision: guard children (a stand-in decides otherwise: engine/testing.py).
        self.decide = decide or self._evaluate
        self.baseline_mode = baseline  # when children time the baseline (see arcengine.guard.baseline_times)
        # A child whose resident memory passes this is killed (and fails with that reason).
        self.memory_limit = int(memory_limit_gib * 2**30) if memory_limit_gib else default_memory_limit()
        self.bus = bus
        self.thresholds = thresholds
        self.seeds = seeds
        self.timeout_s = timeout_s
        self.rng_seed = rng_seed
        self.pipeline = pipeline
        # Compiled kernels are kept between children, so the incumbent is not recompiled for every candidate:
        # Triton's, and C++/CUDA built with load_inline (arcengine.guard.child.native_build). Each worker writes
        # only the folder of its own code's hash in them (arcengine.guard.child.worker._own_folders).
        self._env = ({"TRITON_CACHE_DIR": str(cache_dir / "triton"), CACHE_ENV: str(cache_dir / "native")}
                     if cache_dir else {})
        self.device = "cpu"
        self.slots: list[Slot] = []  # one per worker, set by profile()
        self.baselines = BaselineCache(baseline, declared=False)  # set by profile(), once the device is known
        self._queue: asyncio.PriorityQueue[Job] = asyncio.PriorityQueue()
        self._order = itertools.count()
        self._submitted: Counter[str] = Counter()

    async def profile(self, requested: str, gpus: str | None = None) -> list[DeviceProfiled]:
        """Resolve the device ('auto' takes the GPU if there is one), choose the GPUs (``gpus``: all, a count or
        a list of indices; None: the first) and measure each one's ceilings: one worker per GPU, or one for the
        CPU."""
        first = await self._profile_child(requested, env={})
        self.device = first["device"]["kind"]
        # Only routes a child runs need timing: eager alone is the reference, which every child times anyway.
        self.baselines = BaselineCache(self.baseline_mode,
                                       bool(timed_routes(self.problem.baseline_routes_for(self.device))), self.device)
        if self.device == "cpu" and self.problem.cpu_unsupported:
            raise DeviceUnsupported(f"{self.problem.name} cannot run on the CPU: {self.problem.cpu_unsupported}")
        if self.device == "cpu":
            if gpus not in (None, "all"):
                raise GuardError(f"--gpus {gpus} needs GPUs, and the guard runs on the CPU")
            self.slots = [Slot(None, first)]
        else:
            try:
                chosen = select_gpus(gpus or "1", int(first.get("gpu_count") or 1))
            except GpuSelectionError as error:
                raise GuardError(str(error)) from None
            # The first child measured GPU 0; the others are measured at once, each pinned to its own GPU.
            profiles = {0: first} if 0 in chosen else {}
            async with anyio.create_task_group() as group:
                for gpu in (g for g in chosen if g not in profiles):
                    group.start_soon(self._profile_gpu, requested, gpu, profiles)
            self.slots = [Slot(gpu, profiles[gpu]) for gpu in chosen]
        return [await self.bus.publish(slot.event()) for slot in self.slots]  # type: ignore[misc]

    async def _profile_gpu(self, requested: str, gpu: int, profiles: dict[int, dict[str, Any]]) -> None:
        profiles[gpu] = await self._profile_child(requested, pinned_environment(gpu))

    async def _profile_child(self, requested: str, env: dict[str, str]) -> dict[str, Any]:
        outcome = await run_child({"mode": "profile", "device": requested}, device=requested,
                                  timeout_s=PROFILE_TIMEOUT_S, memory_limit=self.memory_limit,
                                  env_extra={**env, PROFILING: "1"})
        failure = outcome.failure()
        if failure or not outcome.result or not outcome.result.get("ok"):
            detail = failure or (outcome.result or {}).get("failure") or "no ceilings measured"
            where = f" (GPU {env['CUDA_VISIBLE_DEVICES']})" if env else ""
            raise GuardError(f"could not profile the {requested} device{where}: {detail}")
        return outcome.result

    @property
    def ceilings(self) -> Ceilings | None:
        """The first device's ceilings (every device's are in ``slots``)."""
        return self.slots[0].ceilings if self.slots else None

    @property
    def workloads(self) -> list[Workload]:
        return self.problem.workloads_for(self.device)

    async def submit(self, *, candidate_id: str, agent_id: str, source: str, candidate_path: Path,
                     incumbent_path: Path | None, written: anyio.Event | None = None,
                     incumbent_speedup: float | None = None) -> CandidateDecided:
        """Judge one candidate: the gate now, then the queue; returns the published decision. ``written``: set
        once ``candidate_path`` is on disk (None: it is already), so the file is written while the job waits.
        ``incumbent_speedup``: the incumbent's speedup over the reference when it was kept, the bar where the
        incumbent does not run as it did then (see decision.judge)."""
        gate = check_source(source, self.problem.entry)
        priority = (-1, 0) if incumbent_path is None else (self._submitted[agent_id], next(self._order))
        future: asyncio.Future[CandidateDecided] = asyncio.get_running_loop().create_future()
        job = Job(priority, candidate_id, agent_id, candidate_path, incumbent_path, future, gate.warnings, written,
                  source, incumbent_speedup)
        if not gate.ok:
            rejected = Verdict("REJECT", gate.reason, False)
            return await self._publish(decision(candidate_id, agent_id, rejected, warnings=job.warnings))
        self._submitted[agent_id] += 1
        await self._queue.put(job)
        # The worker hands the decision over unpublished and goes on to its next job (the device never waits
        # on the log); it is logged here, before the agent holds it, without a task of its own on the way.
        return await self._publish(await future)

    async def work(self) -> None:
        """The workers: one per device (each GPU, or the CPU), all draining the one queue, until cancelled.
        A worker's children are forked from its own warm parent, so torch is imported once per worker, not
        once per candidate."""
        async with anyio.create_task_group() as workers:
            for slot in self.slots or [Slot(None, {})]:
                workers.start_soon(self._work_on, slot)

    def _device_launcher(self) -> ChildLauncher:
        return ChildLauncher(self.device, memory_limit=self.memory_limit)

    async def _work_on(self, slot: Slot) -> None:
        # Pipelined on a GPU: one lane's child is checked and timed while the other's prepares. Not on the CPU,
        # where a child preparing would take the cores the timed one measures on.
        lanes = PIPELINE_LANES if self.pipeline and self.device == "cuda" else 1
        async with self.new_launcher() as launcher:
            # With several GPUs, every worker's warm parent starts now, side by side: started with its GPU's first
            # candidate, it would keep that GPU idle for the seconds its imports take while candidates wait.
            if len(self.slots) > 1:
                await launcher.start()
            worker = Worker(slot, launcher, DeviceTurns() if lanes > 1 else None)
            async with anyio.create_task_group() as group:
                for _ in range(lanes):
                    group.start_soon(self._drain, worker)

    async def _drain(self, worker: Worker) -> None:
        while True:
            job = await self._queue.get()
            try:
                decided = await self.decide(job, worker)
            except BaseException as error:
                _fail(job, error)
                raise
            if not job.future.done():
                job.future.set_result(decided)

    async def _file_written(self, job: Job) -> None:
        """A child loads the candidate from its file, so the file must be on disk first."""
        if job.written is not None:
            await job.written.wait()

    def child_spec(self, candidate_path: Path, incumbent_path: Path | None, order: int,
                   baseline: bool = False) -> ChildSpec:
        """What a child needs to judge one candidate (the launcher adds where to write the result); with
        ``baseline`` it checks and times the baseline's routes too."""
        routes = timed_routes(self.problem.baseline_routes_for(self.device))  # eager is timed as the reference
        library = self.problem.baseline_path if self.problem.baseline_path.is_file() else None
        return ChildSpec(
            device=self.device,
            reference=str(self.problem.reference_path),
            candidate=str(candidate_path),
            incumbent=str(incumbent_path) if incumbent_path else None,
            workloads=tuple(WorkloadSpec(index=w.index, axes=w.axes, held_out=w.held_out) for w in self.workloads),
            tolerance=ToleranceSpec(**vars(self.problem.tolerance)),
            seeds=tuple(range(self.seeds)),
            distributions=tuple(self.problem.distributions),
            deterministic=self.problem.deterministic,
            timing=TIMING[self.device],
            rng_seed=self.rng_seed + order,
            destination_passing=self.problem.destination_passing,
            baseline=BaselineSpec(routes=tuple(routes), module=str(library) if library else None)
            if baseline and routes else None,
        )

    async def _run_once(self, job: Job, worker: Worker, attempt: int) -> tuple[Verdict, ChildOutcome, ChildResult]:
        gpu = worker.slot.gpu
        # A confirmation reads its figures through the reference, unless every child times the baseline: its verdict
        # is the one reported when it does not confirm.
        timed = self.baselines.wanted(gpu) and (attempt == 0 or self.baselines.mode == "every")
        spec = self.child_spec(job.candidate_path, job.incumbent_path, job.priority[1], baseline=timed)
        spec = spec.model_copy(update={"rng_seed": spec.rng_seed + 1_000_003 * attempt})  # its own round orders
        outcome = await worker.launcher.run(spec.document(), device=self.device, timeout_s=self.timeout_s,
                                            env_extra={**self._env, **worker.slot.env}, turns=worker.turns)
        failure = outcome.failure()
        result = read_result(outcome)
        if failure is None and not result.ok:
            failure = f"harness failed: {result.failure or 'unknown'}"
        if failure is not None:
            _log_stderr(job.candidate_id, outcome)
            return Verdict("REVERT", failure, False), outcome, result
        kept = {} if timed else self.baselines.kept(gpu)
        verdict = judge(result, self.problem, self.workloads, self.thresholds, worker.slot.ceilings,
                        has_incumbent=job.incumbent_path is not None, baselines=kept, drift=self.baselines.drift,
                        routes=self.problem.baseline_routes_for(self.device), incumbent_speedup=job.incumbent_speedup)
        if not verdict.correct:
            _log_stderr(job.candidate_id, outcome)
        if verdict.correct and attempt == 0:
            self.baselines.learn(gpu, result.workloads, timed)
        return verdict, outcome, result

    async def _evaluate(self, job: Job, worker: Worker) -> CandidateDecided:
        await self._file_written(job)
        # Candidate, incumbent and reference are timed in the same child, so every ratio is measured on one
        # GPU; a confirmation runs on the same GPU too.
        verdict, outcome, result = await self._run_once(job, worker, attempt=0)
        seconds, spent = outcome.seconds, phases(outcome.seconds, result)
        confirmed = None
        keep = verdict.decision == "KEEP" and job.incumbent_path is not None
        if keep or verdict.suspicious:
            # A KEEP, and a pass too good to believe (judge flags passes only), must survive a second, fresh
            # child: one process's luck is not a result. One child answers both questions.
            second, again, again_result = await self._run_once(job, worker, attempt=1)
            seconds += again.seconds
            more = phases(again.seconds, again_result)
            spent = {key: spent.get(key, 0.0) + more.get(key, 0.0) for key in spent.keys() | more.keys()}
            verdict, confirmed = confirm(verdict, second, keep=keep)
        log.info("guard.decided", candidate=job.candidate_id, decision=verdict.decision, seconds=round(seconds, 2),
                 gpu=worker.slot.gpu, suspicious=verdict.suspicious is not None, confirmed=confirmed)
        decided = decision(job.candidate_id, job.agent_id, verdict, seconds, result.device, spent,
                           confirmed, job.warnings, worker.slot.gpu)
        # Only a pass that was checked twice carries why; every other decision keeps the event's default.
        return decided.model_copy(update={"suspicious": verdict.suspicious}) if verdict.suspicious else decided

    async def refuse(self, *, candidate_id: str, agent_id: str, reason: str) -> CandidateDecided:
        """A position that brought no candidate (the provider's reply had no usable code): a REJECT."""
        return await self._publish(decision(candidate_id, agent_id, Verdict("REJECT", reason, False)))

    async def _publish(self, decided: CandidateDecided) -> CandidateDecided:
        return await self.bus.publish(decided)  # type: ignore[return-value]


def _fail(job: Job, error: BaseException) -> None:
    """The agent waiting on ``job`` hears why it will get no decision."""
    if not job.future.done():
        job.future.set_exception(error if isinstance(error, Exception) else asyncio.CancelledError())


def decision(candidate_id: str, agent_id: str, verdict: Verdict, seconds: float = 0.0,
             device: dict[str, Any] | None = None, guard_phases: dict[str, float] | None = None,
             confirmed: bool | None = None, warnings: list[str] | None = None,
             gpu: int | None = None) -> CandidateDecided:
    """The decision event of a verdict, with any secret a failure message quoted masked."""
    workloads = [w.model_copy(update={"failure": redact_secrets(w.failure)}) if w.failure else w
                 for w in verdict.workloads]
    return CandidateDecided(
        candidate_id=candidate_id, agent_id=agent_id, decision=verdict.decision,
        reason=redact_secrets(verdict.reason),
        warnings=warnings or [],
        correct=verdict.correct, speedup=verdict.speedup, held_out_speedup=verdict.held_out_speedup,
        speedup_over_baseline=verdict.speedup_over_baseline,
        held_out_speedup_over_baseline=verdict.held_out_speedup_over_baseline,
        vs_incumbent=verdict.vs_incumbent, vs_incumbent_interval=verdict.vs_incumbent_interval,
        confirmed=confirmed, workloads=workloads,
        failure_held_out=verdict.failure_held_out, guard_seconds=seconds, guard_phases=guard_phases or {},
        device=device or {}, gpu=gpu,
    )

def _log_stderr(candidate_id: str, outcome: ChildOutcome) -> None:
    """A failed child's last stderr lines, in the run's engine.log: a worker that died says why only there."""
    if outcome.stderr_tail.strip():
        log.info("guard.child_stderr", candidate=candidate_id, tail=outcome.stderr_tail[-2000:])


def read_result(outcome: ChildOutcome) -> ChildResult:
    """A child's result through the contract: none (it wrote none) reads as not ok, one outside the contract as a
    harness failure that says where."""
    try:
        return ChildResult.model_validate(outcome.result or {})
    except ValidationError as error:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:3])
        return ChildResult(failure=f"the result is outside the contract ({where})")


def phases(total: float, result: ChildResult) -> dict[str, float]:
    """Where a child's wall time went: its own phases, and the rest (process start, imports, exit). A KEEP's
    record sums those of both its children."""
    return {**result.seconds, "process": max(0.0, total - sum(result.seconds.values()))}
