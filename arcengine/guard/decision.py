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
    failure_held_out: bool = False


def floor_us(problem: Problem, workload: Workload, ceilings: Ceilings | None) -> float:
    """The roofline time of a workload in microseconds (0 when the ceilings are unknown)."""
    if ceilings is None:
        return 0.0
    flops, nbytes = problem.flops(workload), problem.bytes(workload)
    return roofline_seconds(flops, nbytes, ceilings.flops_per_s, ceilings.bytes_per_s) * 1e6


def _measured(entry: dict[str, Any], workload: Workload, floor: float) -> WorkloadResult:
    time_us, ref_us = entry.get("time_us"), entry.get("ref_time_us")
    speedup = sol = None
    if time_us and ref_us:
        speedup = ref_us / max(time_us, floor)
        sol = sol_score(time_us, ref_us, floor)
    return WorkloadResult(
        index=workload.index, axes=workload.axes, held_out=workload.held_out,
        correct=bool(entry.get("correct")), failure=entry.get("failure"), max_abs_err=entry.get("max_abs_err"),
        time_us=time_us, ref_time_us=ref_us, incumbent_time_us=entry.get("incumbent_time_us"),
        speedup=speedup, sol_score=sol,
    )


def _label(w: WorkloadResult) -> str:
    return ", ".join(f"{k}={v}" for k, v in w.axes.items())


def judge(
    result: dict[str, Any],
    problem: Problem,
    workloads: list[Workload],
    thresholds: Thresholds,
    ceilings: Ceilings | None,
    has_incumbent: bool,
) -> Verdict:
    """The decision for a child that wrote a result (crashes and timeouts are judged by the caller)."""
    by_index = {w.index: w for w in workloads}
    floors = {w.index: floor_us(problem, w, ceilings) for w in workloads}
    results = tuple(_measured(e, by_index[e["index"]], floors[e["index"]]) for e in result.get("workloads", []))
    # Every workload must have been checked and say correct, whatever the child's summary claims.
    complete = {w.index for w in results if w.correct} == set(by_index)
    if not result.get("correct") or not complete:
        reason = result.get("failure") or "not every workload was checked correct"
        return Verdict("REVERT", f"incorrect: {reason}", False, workloads=results,
                       failure_held_out=bool(result.get("failure_held_out")))
    for w in results:
        floor = floors[w.index]
        if w.time_us is not None and floor > 0 and w.time_us < IMPOSSIBLE_FRACTION * floor:
            reason = (f"impossible time on {_label(w)}: {w.time_us:.2f} us is under half the roofline floor "
                      f"({floor:.2f} us)")
            return Verdict("REVERT", reason, False, workloads=results)
    visible = [w.speedup for w in results if not w.held_out and w.speedup]
    held_out = [w.speedup for w in results if w.held_out and w.speedup]
    speedup = geometric_mean(visible) if visible else None
    held_out_speedup = geometric_mean(held_out) if held_out else None
    if not has_incumbent:
        return Verdict("KEEP", "baseline: correct on every workload", True, speedup, held_out_speedup, None, results)
    # Paired times, both floored at the roofline, so a time under the floor cannot inflate the gain.
    paired = [max(w.incumbent_time_us, floors[w.index]) / max(w.time_us, floors[w.index])
              for w in results if not w.held_out and w.time_us and w.incumbent_time_us]
    if not paired:
        return Verdict("REVERT", "no paired timing against the incumbent", True, speedup, held_out_speedup,
                       None, results)
    ratio = geometric_mean(paired)
    args = (True, speedup, held_out_speedup, ratio, results)
    if ratio >= 1.0 + thresholds.margin:
        return Verdict("KEEP", f"{ratio:.3f}x the incumbent (margin {1 + thresholds.margin:.2f}x)", *args)
    if ratio >= 1.0 - thresholds.near_band:
        return Verdict("ACCEPT", f"{ratio:.3f}x the incumbent: within the near-best band", *args)
    return Verdict("REVERT", f"slower: {ratio:.3f}x the incumbent", *args)
