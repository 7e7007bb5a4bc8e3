"""One-shot guard verdicts outside a campaign: ``arcengine eval`` and ``arcengine problems check``."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel

from arcengine.domain.events import CandidateDecided, WorkloadResult
from arcengine.domain.formats import solution
from arcengine.domain.problem import Problem
from arcengine.guard.baseline_times import BaselineMode
from arcengine.guard.child.baselines import REFERENCE_ROUTE
from arcengine.guard.decision import PASSING, SUSPICIOUS_SPEEDUP, Thresholds
from arcengine.guard.gate import check_source
from arcengine.guard.service import GuardService
from arcengine.guard.sol import geometric_mean
from arcengine.recording.bus import Bus


async def evaluate_file(problem: Problem, candidate: Path, device: str, seeds: int = 5,
                        timeout_s: float = 600.0, memory_limit_gib: float | None = None,
                        suspicious_speedup: float = SUSPICIOUS_SPEEDUP,
                        baseline: BaselineMode = "every",
                        on_step: Callable[[str], None] | None = None) -> tuple[CandidateDecided, str]:
    """The guard's decision on one file against the reference (and the baseline, timed in the same rounds), and
    the device kind it ran on. A FlashInfer-Bench Solution (JSON) is judged by its entry source, called as it
    declares (see ``solution_candidate``)."""
    with solution_candidate(problem, candidate) as (problem, candidate):
        decided, used = await evaluate_files(problem, [candidate], device, seeds=seeds, timeout_s=timeout_s,
                                             memory_limit_gib=memory_limit_gib, suspicious_speedup=suspicious_speedup,
                                             baseline=baseline, on_step=on_step)
    return decided[0], used


@contextlib.contextmanager
def solution_candidate(problem: Problem, candidate: Path) -> Iterator[tuple[Problem, Path]]:
    """The problem and the file to judge for ``candidate``: a Solution's sources written to a temporary folder, its
    entry file judged, and the problem calling it as its spec says (``destination_passing_style``, true unless the
    Solution says false); any other file as it is."""
    if not solution.looks_like_solution(candidate):
        yield problem, candidate
        return
    found = solution.load_solution(candidate)
    if problem.entry != "run":
        raise solution.SolutionError(f"{candidate}: a Solution's entry point stands for run(); problem "
                                     f"{problem.name!r} asks for {problem.entry}")
    wanted = solution.definition_name(problem.directory, problem.name)
    if found.definition not in (wanted, problem.name):
        raise solution.SolutionError(f"{candidate}: solution {found.name!r} is for definition {found.definition!r}, "
                                     f"not {wanted!r}")
    with tempfile.TemporaryDirectory(prefix="arcengine-solution-") as folder:
        entry = solution.write_candidate(found, Path(folder))
        yield dataclasses.replace(problem, destination_passing=found.spec.destination_passing_style), entry


async def evaluate_files(problem: Problem, candidates: list[Path] | Callable[[str], list[Path]], device: str,
                         seeds: int = 5, timeout_s: float = 600.0, memory_limit_gib: float | None = None,
                         suspicious_speedup: float = SUSPICIOUS_SPEEDUP,
                         baseline: BaselineMode = "every",
                         on_step: Callable[[str], None] | None = None) -> tuple[list[CandidateDecided], str]:
    """The guard's decision on each file (judged one after another by one guard, each as ``evaluate_file`` judges
    its one), and the device kind they ran on. ``candidates`` may depend on that device (a problem's seeds).
    ``on_step`` hears each step as it starts (a progress display)."""
    step = on_step or (lambda text: None)
    guard = GuardService(problem, Bus(None), Thresholds(0.0, 0.0, suspicious_speedup), seeds=seeds, timeout_s=timeout_s,
                  memory_limit_gib=memory_limit_gib, baseline=baseline)
    if callable(candidates):
        step(f"profiling the device ({device})")
        await guard.profile(device)
        candidates = candidates(guard.device)
    submissions = []
    for candidate in candidates:
        source = candidate.read_text(encoding="utf-8")
        submissions.append({"candidate_id": candidate.stem, "agent_id": "eval", "source": source,
                            "candidate_path": candidate.resolve(), "incumbent_path": None})
    if not any(check_source(s["source"], problem.entry).ok for s in submissions):  # REJECTs need no device
        return [await guard.submit(**s) for s in submissions], "no device (rejected by the gate)"
    if not guard.slots:
        step(f"profiling the device ({device})")
        await guard.profile(device)
    decided: list[CandidateDecided] = []
    async with anyio.create_task_group() as workers:
        workers.start_soon(guard.work)
        for number, submission in enumerate(submissions, start=1):
            of = f" ({number} of {len(submissions)})" if len(submissions) > 1 else ""
            step(f"checking and timing {Path(submission['candidate_path']).name}{of} on {guard.device} against the "
                 f"reference, {len(guard.workloads)} workloads")
            decided.append(await guard.submit(**submission))
        workers.cancel_scope.cancel()
    return decided, guard.device


HOST_KEY = "candidate_host_median_us"  # in a workload's harness record: the candidate's host side per call


class EvalWorkload(BaseModel):
    """One workload of ``eval --json``."""

    axes: dict[str, Any]
    held_out: bool
    correct: bool
    time_us: float | None
    ref_time_us: float | None
    speedup: float | None
    sol_score: float | None
    failure: str | None
    baseline_route: str | None
    baseline_time_us: float | None
    speedup_over_baseline: float | None
    baseline_times_us: dict[str, float]
    baseline_failures: dict[str, str]
    harness: dict[str, float]  # how the timer and the workers behaved: head start, record reads, costs
    speedup_over_routes: dict[str, float]  # over each route timed here (KernelBench's eager and torch.compile)


class EvalReport(BaseModel):
    """The ``eval --json`` document."""

    verdict: Literal["pass", "fail", "reject"]
    reason: str
    speedup: float | None
    held_out_speedup: float | None
    # Over what a user would otherwise run (the problem's baseline; the reference where it declares none).
    speedup_over_baseline: float | None
    held_out_speedup_over_baseline: float | None
    # Over each route on its own, as KernelBench reports eager and torch.compile: the geometric mean over the visible
    # workloads, for the routes timed on every one of them.
    speedup_over_routes: dict[str, float]
    baseline: str  # one line: the gain over the baseline, the routes that won, "N/M shapes faster than baseline"
    # Why the pass was checked by a second, fresh child (None: one child), and whether that child agreed.
    suspicious: str | None
    confirmed: bool | None
    warnings: list[str]  # what the gate allowed but a reader should weigh (side streams, file writes, native code)
    workloads: list[EvalWorkload]
    device: dict[str, Any]
    # Where the guard's time went: compile (a workload's first calls: JIT, autotuning, torch.compile) apart from
    # the calls that were checked and timed.
    guard_seconds: float
    guard_phases: dict[str, float]


def eval_report(decided: CandidateDecided) -> EvalReport:
    """reject (gate), fail (ran and was wrong or broke, or a suspicious speedup a fresh child did not confirm:
    correct, but reverted), pass."""
    passed = decided.correct and decided.decision in PASSING
    fields = [name for name in EvalWorkload.model_fields if name != "speedup_over_routes"]
    return EvalReport(
        verdict="reject" if decided.decision == "REJECT" else "pass" if passed else "fail",
        reason=decided.reason, speedup=decided.speedup, held_out_speedup=decided.held_out_speedup,
        speedup_over_baseline=decided.speedup_over_baseline,
        held_out_speedup_over_baseline=decided.held_out_speedup_over_baseline,
        speedup_over_routes=over_routes(decided), baseline=baseline_note(decided), suspicious=decided.suspicious,
        confirmed=decided.confirmed, warnings=[*decided.warnings, *filter(None, [host_bound_note(decided)])],
        workloads=[EvalWorkload(**{name: getattr(w, name) for name in fields}, speedup_over_routes=route_gains(w))
                   for w in decided.workloads],
        device=decided.device, guard_seconds=decided.guard_seconds, guard_phases=decided.guard_phases,
    )


def host_bound_note(decided: CandidateDecided) -> str | None:
    """Where the candidate's host side per call outlasts its GPU time: the guard times the GPU (the head start
    hides the host, as a CUDA graph or a host running ahead would), so an eager loop of such calls runs slower
    than its figure says. None where no visible workload is host-bound, or the host was not measured (CPU)."""
    bound = [(w, host) for w in decided.workloads
             if not w.held_out and w.time_us and (host := w.harness.get(HOST_KEY, 0.0)) > w.time_us]
    if not bound:
        return None
    w, host = max(bound, key=lambda pair: pair[1] / (pair[0].time_us or 1.0))
    shape = ", ".join(f"{name}={value}" for name, value in w.axes.items())
    visible = sum(1 for w in decided.workloads if not w.held_out)
    return (f"host-bound on {len(bound)}/{visible} workloads ({shape}: {host:.1f} us of host per call against "
            f"{w.time_us:.1f} us on the GPU): the figures are GPU time, as under a CUDA graph; an eager loop of "
            "these calls runs at the host's pace")


def route_gains(w: WorkloadResult) -> dict[str, float]:
    """The candidate's gain over each route timed on this workload (through its speedup over the reference, so a
    time under the roofline floor counts as the floor there too)."""
    if not w.speedup or not w.ref_time_us:
        return {}
    return {route: w.speedup * time_us / w.ref_time_us for route, time_us in w.baseline_times_us.items()}


def over_routes(decided: CandidateDecided) -> dict[str, float]:
    """Per route timed on every visible workload, the geometric mean of the gains over it."""
    gains = [route_gains(w) for w in decided.workloads if not w.held_out]
    if not gains or not all(gains):
        return {}
    routes = [route for route in gains[0] if all(route in g for g in gains)]
    return {route: geometric_mean(g[route] for g in gains) for route in routes}


def baseline_note(decided: CandidateDecided) -> str:
    """One line on the gain over the baseline: its figure, the routes that won, or why the reference stood in."""
    visible = [w for w in decided.workloads if not w.held_out and w.baseline_route]
    if decided.speedup_over_baseline is None or not visible:
        return "no gain over the baseline measured"
    routes = sorted({w.baseline_route for w in visible if w.baseline_route})
    if routes == [REFERENCE_ROUTE]:
        reason = "the reference: no route declared, correct or faster"
        return f"{decided.speedup_over_baseline:.3f}x the baseline ({reason})"
    faster = sum(1 for w in visible if (w.speedup_over_baseline or 0) > 1)
    each = over_routes(decided)
    apart = "; " + ", ".join(f"{gain:.3f}x over {route}" for route, gain in each.items()) if len(each) > 1 else ""
    return (f"{decided.speedup_over_baseline:.3f}x the baseline ({', '.join(routes)}); "
            f"{faster}/{len(visible)} shapes faster than baseline{apart}")


class CheckedSeed(BaseModel):
    """One seed of ``problems check --json``."""

    file: str
    verdict: Literal["pass", "fail", "reject"]
    reason: str
    workloads: int
    speedup: float | None


class CheckedBaseline(BaseModel):
    """One baseline route of ``problems check --json``: on how many workloads it was correct."""

    route: str
    correct: int
    workloads: int
    failures: list[str]


class CheckReport(BaseModel):
    """The ``problems check --json`` document."""

    problem: str
    ok: bool  # every seed passes (or the device is not supported: then ``skipped`` says why)
    device: str | None
    skipped: str | None
    seeds: list[CheckedSeed]
    baselines: list[CheckedBaseline]
