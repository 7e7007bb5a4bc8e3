"""Turn what the child measured into the guard's decision: KEEP, ACCEPT or REVERT, with the reason.

Pure functions: the same child result and settings always give the same decision.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from arcengine.domain.events import Decision, WorkloadResult
from arcengine.domain.figures import times
from arcengine.domain.problem import Problem, Workload
from arcengine.guard.baseline_times import DRIFT, BaselineTime, chain_holds
from arcengine.guard.child.baselines import EAGER_ROUTE, REFERENCE_ROUTE
from arcengine.guard.contract import ChildResult, WorkloadOutcome
from arcengine.guard.sol import geometric_mean, roofline_seconds, sol_score

# A measured time under this fraction of the roofline floor is physically impossible: the kernel skipped work.
IMPOSSIBLE_FRACTION = 0.5
CONFIDENCE = 0.95
RESAMPLES = 2000
# A pass this many times faster than the reference on a visible workload is checked by a second, fresh child
# before it is believed. The best honest kernels of the H200 campaigns reached 6x (rmsnorm) and 3x (softmax),
# torch.compile 10-11x on rmsnorm's largest shapes only; a result that skips the work or its launch goes far
# past it on the small shapes, where the roofline floor is too low to catch it. A false alarm costs one child.
SUSPICIOUS_SPEEDUP = 10.0
# A confirming child agrees when each figure it measures again is within this factor of the first's, either way:
# a few percent of drift between processes is normal; a result that hangs on inputs or round order moves more.
AGREEMENT = 1.25
PASSING: tuple[Decision, ...] = ("KEEP", "ACCEPT")


@dataclass(frozen=True)
class Thresholds:
    margin: float  # KEEP needs incumbent/candidate beyond 1 + margin
    near_band: float  # ACCEPT when within 1 - near_band of the incumbent
    suspicious_speedup: float = SUSPICIOUS_SPEEDUP  # a pass past this over the reference is checked twice


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
    speedup_over_baseline: float | None = None  # geometric mean over visible workloads, vs the baseline
    held_out_speedup_over_baseline: float | None = None
    failure_held_out: bool = False
    vs_incumbent_interval: tuple[float, float] | None = None  # 95% bootstrap interval of vs_incumbent
    suspicious: str | None = None  # why this pass is too good to believe from one child (set on passes only)
    suspects: tuple[int, ...] = ()  # the workloads (indices) that made it suspicious


def floor_us(problem: Problem, workload: Workload, ceilings: Ceilings | None) -> float:
    """The roofline time of a workload in microseconds (0 when the ceilings are unknown)."""
    if ceilings is None:
        return 0.0
    flops, nbytes = problem.flops(workload), problem.bytes(workload)
    return roofline_seconds(flops, nbytes, ceilings.flops_per_s, ceilings.bytes_per_s) * 1e6


def _over_baseline(entry: WorkloadOutcome, speedup: float | None, floor: float,
                   kept: BaselineTime | None, stale: bool = False, eager: bool = False) -> dict[str, Any]:
    """The workload's baseline and the candidate's gain over it: timed in this child (paired); else read through
    the reference from a child that timed it, if this child's reference agrees with that one's; else, where no
    route is declared or correct, the reference stands in and says so. ``stale``: the kept times no longer
    hold (the references moved), and no figure is given. ``eager``: the problem names the reference as a route
    (KernelBench's eager baseline), so its time is that route's, and where it beat the timed routes it is named."""
    time_us = entry.time_us
    times = entry.baseline_times_us
    if eager and entry.ref_time_us:
        times = {EAGER_ROUTE: entry.ref_time_us, **times}
    found: dict[str, Any] = {"baseline_times_us": times, "baseline_failures": entry.baseline_failures}
    if speedup is None or not time_us:
        return found

    def named(route: str | None) -> str | None:
        return EAGER_ROUTE if eager and route == REFERENCE_ROUTE else route

    if entry.baseline_time_us:
        base_us = entry.baseline_time_us
        return {**found, "baseline_route": named(entry.baseline_route), "baseline_time_us": base_us,
                "speedup_over_baseline": base_us / max(time_us, floor)}
    if stale:
        return found
    if kept is not None and entry.ref_time_us:  # the references agree (chain_holds): the ratio to them holds
        ratio = kept.time_us / kept.ref_time_us
        return {**found, "baseline_route": named(kept.route), "baseline_time_us": ratio * entry.ref_time_us,
                "speedup_over_baseline": speedup * ratio}
    # No route timed (none declared but eager, none correct, or not timed): the reference stands in, and says so.
    return {**found, "baseline_route": REFERENCE_ROUTE, "baseline_time_us": entry.ref_time_us,
            "speedup_over_baseline": speedup}


def _measured(entry: WorkloadOutcome, workload: Workload, floor: float,
              kept: BaselineTime | None = None, stale: bool = False, eager: bool = False) -> WorkloadResult:
    time_us, ref_us = entry.time_us, entry.ref_time_us
    speedup = sol = None
    if time_us and ref_us:
        speedup = ref_us / max(time_us, floor)
        sol = sol_score(time_us, ref_us, floor)
    return WorkloadResult(
        index=workload.index, axes=workload.axes, held_out=workload.held_out,
        correct=entry.correct, failure=entry.failure, max_abs_err=entry.max_abs_err,
        time_us=time_us, ref_time_us=ref_us, incumbent_time_us=entry.incumbent_time_us,
        speedup=speedup, sol_score=sol, reps=entry.reps, rel_se=entry.rel_se,
        harness=entry.harness, **_over_baseline(entry, speedup, floor, kept, stale, eager),
    )


def _geomean_of_medians(*ratios: np.ndarray, axis: int = -1) -> np.ndarray:
    medians = np.stack([np.median(r, axis=axis) for r in ratios])
    return np.exp(np.mean(np.log(medians), axis=0))


def paired_gain(ratios: list[list[float]], seed: int = 0) -> tuple[float, float, float]:
    """The geometric mean over workloads of the median per-round incumbent/candidate ratio, and its 95%
    bootstrap interval (rounds resampled within each workload)."""
    samples = tuple(np.asarray(r, dtype=float) for r in ratios if len(r) > 0)
    point = float(_geomean_of_medians(*samples))
    if any(len(s) < 2 for s in samples) or all(np.ptp(s) == 0 for s in samples):
        return point, point, point
    from scipy import stats  # 1.5 s to import: only a campaign's comparisons need it, not `arcengine eval`

    result = stats.bootstrap(samples, _geomean_of_medians, vectorized=True, paired=False,
                             n_resamples=RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                             random_state=np.random.default_rng(seed))
    interval = result.confidence_interval
    return point, float(interval.low), float(interval.high)


def _geomeans(results: tuple[WorkloadResult, ...], figure: str) -> tuple[float | None, float | None]:
    """A figure's geometric mean over the visible workloads that have it, and over the held-out ones."""
    means: list[float | None] = []
    for held_out in (False, True):
        values = [value for w in results if w.held_out == held_out and (value := getattr(w, figure))]
        means.append(geometric_mean(values) if values else None)
    return means[0], means[1]


def _label(w: WorkloadResult) -> str:
    return ", ".join(f"{k}={v}" for k, v in w.axes.items())


def judge(
    result: ChildResult,
    problem: Problem,
    workloads: list[Workload],
    thresholds: Thresholds,
    ceilings: Ceilings | None,
    has_incumbent: bool,
    baselines: dict[int, BaselineTime] | None = None,
    drift: float = DRIFT["cuda"],
    routes: tuple[str, ...] = (),
    incumbent_speedup: float | None = None,
) -> Verdict:
    """The decision for a child that wrote a result (crashes and timeouts are judged by the caller).
    ``baselines``: the baseline times a child that did not time the baseline reads its gains through, while its
    references agree with theirs within ``drift`` (see baseline_times.chain_holds). ``routes``: the baseline's
    routes declared for this device (only whether ``eager`` is among them matters here). ``incumbent_speedup``:
    the incumbent's speedup over the reference when it was kept; where the incumbent was dropped in this child,
    or ran here outside AGREEMENT of it, the candidate is compared with that record instead (see _against_record)."""
    by_index = {w.index: w for w in workloads}
    floors = {w.index: floor_us(problem, w, ceilings) for w in workloads}
    kept = baselines or {}
    # Read through the reference only while this child's references agree with those timed beside the baseline;
    # else no figure rather than a wrong one.
    stale = bool(kept) and not chain_holds(kept, result.workloads, drift)
    eager = EAGER_ROUTE in routes
    results = tuple(_measured(e, by_index[e.index], floors[e.index], kept.get(e.index), stale, eager)
                    for e in result.workloads)
    # Every workload must have been checked and say correct, whatever the child's summary claims.
    complete = {w.index for w in results if w.correct} == set(by_index)
    if not result.correct or not complete:
        reason = result.failure or "not every workload was checked correct"
        return Verdict("REVERT", f"incorrect: {reason}", False, workloads=results,
                       failure_held_out=result.failure_held_out)
    for w in results:
        floor = floors[w.index]
        if w.time_us is not None and floor > 0 and w.time_us < IMPOSSIBLE_FRACTION * floor:
            reason = (f"impossible time on {_label(w)}: {w.time_us:.2f} us is under half the roofline floor "
                      f"({floor:.2f} us)")
            # On a held-out workload the reason describes it (axes, time, floor): flagged so agents see none of it.
            return Verdict("REVERT", reason, False, workloads=results, failure_held_out=w.held_out)
    speedup, held_out_speedup = _geomeans(results, "speedup")
    over_baseline, held_out_over_baseline = _geomeans(results, "speedup_over_baseline")
    suspicious, suspects = _suspicion(results, floors, thresholds.suspicious_speedup)
    gains = {"speedup_over_baseline": over_baseline, "held_out_speedup_over_baseline": held_out_over_baseline}
    if has_incumbent and (why := _incumbent_astray(result, results, floors, incumbent_speedup)) is not None:
        return _against_record(why, speedup, incumbent_speedup, thresholds,
                               Verdict("REVERT", "", True, speedup, held_out_speedup, None, results,
                                       suspicious=suspicious, suspects=suspects, **gains))
    if not has_incumbent:
        return Verdict("KEEP", "baseline: correct on every workload", True, speedup, held_out_speedup, None, results,
                       suspicious=suspicious, suspects=suspects, **gains)
    ratios = [e.paired_ratios for e in result.workloads if not by_index[e.index].held_out]
    if not ratios or not all(ratios):
        return Verdict("REVERT", "no paired timing against the incumbent", True, speedup, held_out_speedup,
                       None, results, **gains)
    ratio, low, high = paired_gain(ratios)
    shown = f"{ratio:.3f}x the incumbent (95% CI {low:.3f}-{high:.3f})"
    verdict = Verdict("REVERT", "", True, speedup, held_out_speedup, ratio, results,
                      vs_incumbent_interval=(low, high), **gains)
    # KEEP only when the whole interval clears the margin: one lucky median is not evidence.
    if low >= 1.0 + thresholds.margin:
        return replace(verdict, decision="KEEP", reason=f"{shown}, beyond the {1 + thresholds.margin:.2f}x margin",
                       suspicious=suspicious, suspects=suspects)
    if ratio >= 1.0 - thresholds.near_band:
        return replace(verdict, decision="ACCEPT", reason=f"{shown}: within the near-best band",
                       suspicious=suspicious, suspects=suspects)
    return replace(verdict, reason=f"slower: {shown}")


def _incumbent_astray(result: ChildResult, results: tuple[WorkloadResult, ...], floors: dict[int, float],
                      recorded: float | None) -> str | None:
    """Why the incumbent in this child is no fair bar, or None: it was dropped (it broke, or its audited timed
    outputs were wrong), or it ran outside AGREEMENT of the speedup it was kept at. The incumbent is untrusted code
    as the candidate is: slow or wrong as the incumbent only, it would make every candidate after it win or lose."""
    if result.incumbent_failure:
        return f"the incumbent was dropped here ({result.incumbent_failure[:160]})"
    seen = [_incumbent_speedup(w, floors[w.index]) for w in results if not w.held_out]
    if not recorded or not seen or not all(seen):
        return None
    here = geometric_mean(seen)
    if _agree(recorded, here):
        return None
    return (f"the incumbent ran at {times(here)} the reference here, outside {AGREEMENT:g}x of the "
            f"{times(recorded)} it was kept at")


def _against_record(why: str, speedup: float | None, recorded: float | None, thresholds: Thresholds,
                    verdict: Verdict) -> Verdict:
    """The candidate against the incumbent's recorded speedup (its own over the reference in this child, over
    that record), the margins as for a paired ratio; kept as the first of its line where there is no record."""
    if not recorded or not speedup:
        return replace(verdict, decision="KEEP", reason=f"baseline: correct on every workload; {why}")
    ratio = speedup / recorded
    shown = f"{ratio:.3f}x the incumbent's recorded speedup ({why})"
    if ratio >= 1.0 + thresholds.margin:
        return replace(verdict, decision="KEEP", reason=shown, vs_incumbent=ratio)
    if ratio >= 1.0 - thresholds.near_band:
        return replace(verdict, decision="ACCEPT", reason=f"{shown}: within the near-best band", vs_incumbent=ratio)
    return replace(verdict, reason=f"slower: {shown}", vs_incumbent=ratio, suspicious=None, suspects=())


def _suspicion(results: tuple[WorkloadResult, ...], floors: dict[int, float],
               threshold: float) -> tuple[str | None, tuple[int, ...]]:
    """Why a correct result is too good to believe from one child, and on which workloads (None, () if it is
    not): a time under the roofline floor (a SOL score above 1: faster than the device allows), or a visible
    workload past ``threshold`` times the reference (the geometric mean cannot pass it unless one does), unless
    the incumbent, timed in the same rounds, is within AGREEMENT of it there: a level already believed is no
    news, and problems whose seed is 10-130x their naive reference would otherwise check every pass twice."""
    why: list[str] = []
    suspects: list[int] = []
    for w in results:
        floor = floors[w.index]
        if w.time_us is not None and floor > 0 and w.time_us < floor:
            if w.held_out:  # agents hear nothing of a held-out shape's figures
                why.append("a held-out workload: under its roofline floor (a SOL score above 1)")
            else:
                sol = f"SOL score {w.sol_score:.2f}, " if w.sol_score is not None else ""
                why.append(f"{_label(w)}: {sol}{w.time_us:.2f} us under the {floor:.2f} us roofline floor")
        elif (not w.held_out and w.speedup is not None and w.speedup > threshold
              and w.speedup > AGREEMENT * _incumbent_speedup(w, floor)):
            why.append(f"{_label(w)}: {times(w.speedup)} the reference, past {threshold:g}x")
        else:
            continue
        suspects.append(w.index)
    return ("; ".join(why) or None), tuple(suspects)


def _incumbent_speedup(w: WorkloadResult, floor: float) -> float:
    if not w.incumbent_time_us or not w.ref_time_us:
        return 0.0
    return w.ref_time_us / max(w.incumbent_time_us, floor)


def _agree(first: float | None, second: float | None) -> bool:
    if not first or not second:
        return False
    return 1 / AGREEMENT <= second / first <= AGREEMENT


def _x(value: float | None) -> str:
    return times(value) if value is not None else "no speedup"


def _disagreement(first: Verdict, second: Verdict) -> str | None:
    """Where a fresh child that passed again disagrees with a suspicious first one (None: it confirms it): its
    speedup and its time on every suspect workload must each be within AGREEMENT of the first child's, either way."""
    figures = [("speedup", first.speedup, second.speedup, f"{_x(first.speedup)} then {_x(second.speedup)}")]
    again = {w.index: w for w in second.workloads}
    for w in first.workloads:
        if w.index in first.suspects:
            time = again[w.index].time_us if w.index in again else None
            if w.held_out:  # neither its shape nor its figures reach agents
                figures.append(("a held-out workload:", w.time_us, time, "its time moved by more than 25%"))
            else:
                figures.append((_label(w), w.time_us, time, f"{w.time_us or 0:.2f} us then {time or 0:.2f} us"))
    off = [f"{name} {shown}" for name, a, b, shown in figures if not _agree(a, b)]
    return "; ".join(off) or None


def confirm(first: Verdict, second: Verdict, *, keep: bool) -> tuple[Verdict, bool]:
    """The decision once a second, fresh child has judged the same candidate, and whether it confirmed the
    first. ``keep``: the first is a KEEP over an incumbent, which must be a KEEP again. A suspicious first must
    pass again: a fresh child that does not is a REVERT; one that passes with figures that disagree (beyond
    AGREEMENT: an autotuner may pick another configuration in each process, a trick may work in one) leaves the
    slower child's verdict and figures, never the faster one's. Not confirmed, the reason names both children's
    figures."""
    flagged = {"suspicious": first.suspicious, "suspects": first.suspects}  # the record says why it ran twice
    if first.suspicious and second.decision not in PASSING:
        return replace(second, decision="REVERT", reason=(
            f"suspicious pass not confirmed by a fresh child ({first.suspicious}): the first measured "
            f"{_x(first.speedup)} the reference; the fresh child did not pass: {second.reason}"), **flagged), False
    if keep and second.decision != "KEEP":
        return replace(second, reason=f"KEEP not confirmed by a fresh child ({first.reason}); "
                                      f"confirmation: {second.reason}", **flagged), False
    off = _disagreement(first, second) if first.suspicious else None
    if off is not None:
        # The fresh child's, unless the first measured less (a held-out shape that moved leaves the mean alone).
        slower = first if (first.speedup or 0.0) < (second.speedup or 0.0) else second
        which = "first" if slower is first else "fresh"
        return replace(slower, reason=f"{slower.reason}; suspicious ({first.suspicious}), not reproduced by a fresh "
                                      f"child ({off}): the slower, {which} child's figures stand", **flagged), False
    if first.suspicious:
        return replace(first, reason=f"{first.reason}; suspicious ({first.suspicious}), confirmed by a fresh "
                                     f"child: speedup {_x(first.speedup)} then {_x(second.speedup)}"), True
    return first, True
