"""Turn what the child measured into the guard's decision: KEEP, ACCEPT or REVERT, with the reason.

Pure functions: the same child result and settings always give the same decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arcengine.events import Decision, WorkloadResult
from arcengine.guard.sol import geometric_mean, roofline_seconds, sol_score
from arcengine.problem import Problem, Workload

# A measured time under this fraction of the roofline floor is physically impossible: the kernel skipped work.
IMPOSSIBLE_FRACTION = 0.5


@dataclass(frozen=True)
class Thresholds:
    margin: float  # KEEP needs incumbent/candidate beyond 1 + margin
    near_band: float  # ACCEPT when within 1 - near_band of the incumbent


@dataclass(frozen=True)
class Ceilings:
    flops_per_s: float
    bytes_per_s: float


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    correct: bool
    speedup: float | None = None
    held_out_speedup: float | None = None
    vs_incumbent: float | None = None
    workloads: tuple[WorkloadResult, ...] = ()


def _workload_results(
    measured: list[dict[str, Any]], workloads: list[Workload], problem: Problem, ceilings: Ceilings | None
) -> list[WorkloadResult]:
    by_index = {w.index: w for w in workloads}
    results = []
    for entry in measured:
        workload = by_index[entry["index"]]
        time_us, ref_us = entry.get("time_us"), entry.get("ref_time_us")
        speedup = sol = None
        if time_us and ref_us:
            floor_us = _floor_us(problem, workload, ceilings)
            speedup = ref_us / max(time_us, floor_us)
            sol = sol_score(time_us, ref_us, floor_us)
        results.append(
            WorkloadResult(
                index=workload.index, axes=workload.axes, held_out=workload.held_out,
                correct=bool(entry.get("correct")), failure=entry.get("failure"),
                max_abs_err=entry.get("max_abs_err"), time_us=time_us, ref_time_us=ref_us,
                incumbent_time_us=entry.get("incumbent_time_us"), speedup=speedup, sol_score=sol,
            )
        )
    return results


def _floor_us(problem: Problem, workload: Workload, ceilings: Ceilings | None) -> float:
    if ceilings is None:
        return 0.0
    seconds = roofline_seconds(
        problem.flops(workload), problem.bytes(workload), ceilings.flops_per_s, ceilings.bytes_per_s
    )
    return seconds * 1e6


def judge(
    result: dict[str, Any],
    problem: Problem,
    workloads: list[Workload],
    thresholds: Thresholds,
    ceilings: Ceilings | None,
    has_incumbent: bool,
) -> Verdict:
    """The decision for a child that wrote a result (crashes and timeouts are judged by the caller)."""
    results = _workload_results(result.get("workloads", []), workloads, problem, ceilings)
    if not result.get("correct"):
        reason = result.get("failure") or "incorrect"
        return Verdict("REVERT", f"incorrect: {reason}", False, workloads=tuple(results))
    for w in results:
        floor = _floor_us(problem, by_index(workloads, w.index), ceilings)
        if w.time_us is not None and floor > 0 and w.time_us < IMPOSSIBLE_FRACTION * floor:
            return Verdict(
                "REVERT",
                f"impossible time on {_label(w)}: {w.time_us:.2f} us is under half the roofline floor "
                f"({floor:.2f} us)",
                False, workloads=tuple(results),
            )
    visible = [w for w in results if not w.held_out and w.speedup]
    held_out = [w for w in results if w.held_out and w.speedup]
    speedup = geometric_mean(w.speedup for w in visible) if visible else None  # type: ignore[misc]
    held_out_speedup = geometric_mean(w.speedup for w in held_out) if held_out else None  # type: ignore[misc]
    if not has_incumbent:
        return Verdict("KEEP", "baseline: correct on every workload", True, speedup, held_out_speedup,
                       None, tuple(results))
    paired = [w.incumbent_time_us / w.time_us for w in results
              if not w.held_out and w.time_us and w.incumbent_time_us]
    if not paired:
        return Verdict("REVERT", "no paired timing against the incumbent", True, speedup, held_out_speedup,
                       None, tuple(results))
    ratio = geometric_mean(paired)
    args = (True, speedup, held_out_speedup, ratio, tuple(results))
    if ratio >= 1.0 + thresholds.margin:
        return Verdict("KEEP", f"{ratio:.3f}x the incumbent (margin {1 + thresholds.margin:.2f}x)", *args)
    if ratio >= 1.0 - thresholds.near_band:
        return Verdict("ACCEPT", f"{ratio:.3f}x the incumbent: within the near-best band", *args)
    return Verdict("REVERT", f"slower: {ratio:.3f}x the incumbent", *args)


def by_index(workloads: list[Workload], index: int) -> Workload:
    return next(w for w in workloads if w.index == index)


def _label(w: WorkloadResult) -> str:
    return ", ".join(f"{k}={v}" for k, v in w.axes.items())
