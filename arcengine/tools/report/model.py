"""What a report shows, gathered: one run's outcome, and runs of different configurations compared.

Everything comes from each run's ``events.jsonl`` (the source of truth), so a report can be rebuilt from the log
alone; the renderers (markdown.py, plots.py) only lay out what this module gathers. Across runs the figures follow
the KernelArc paper's ablation: per configuration the geometric mean of the runs' best speedups with a 95%
bootstrap interval, and between configurations an exact permutation test.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from arcengine.domain.errors import UserError
from arcengine.domain.events import (
    DECISIONS,
    SEED_AGENT,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
    WorkloadResult,
)
from arcengine.domain.run import RunState
from arcengine.engine.config import CampaignConfig
from arcengine.recording.eventlog import EventLogError, read_events

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0  # fixed, so the same runs always give the same interval
EXACT_LIMIT = 1_000_000  # relabelings an exact permutation test may enumerate before it falls back to sampling
PERMUTATION_RESAMPLES = 99_999  # the fallback's sample size (only for very many runs per configuration)


class ReportError(UserError):
    """A run cannot be reported on; the message (one line) says why."""


@dataclass(frozen=True)
class WorkloadRow:
    """The best kernel's result on one workload."""

    axes: dict[str, int]
    held_out: bool
    correct: bool
    time_us: float | None
    ref_time_us: float | None
    speedup: float | None
    sol_score: float | None
    baseline_route: str | None = None  # what won here ("reference": no route declared, correct or faster)
    baseline_time_us: float | None = None
    speedup_over_baseline: float | None = None


@dataclass(frozen=True)
class RunSummary:
    """What one campaign achieved, read from its event log.

    ``candidates`` and ``decisions`` count the agents' candidates (positions 1..budget), as the campaign's own
    counters do; the seed is left out of them but is part of the best and of the trajectory.
    """

    run_dir: Path
    campaign_id: str
    problem: str
    config_label: str  # every setting that matters for comparison, e.g. "agents=4 memory=shared cap=16 model=offline"
    configuration: str  # the group this run is compared in, see configuration()
    device: str
    candidates: int
    decisions: dict[str, int]
    best_candidate_id: str | None
    best_agent_id: str | None
    best_speedup: float | None
    seed_speedup: float | None
    best_over_baseline: float | None
    best_workloads: tuple[WorkloadRow, ...]
    trajectory: tuple[tuple[int, float | None], ...]  # (position, best KEEP speedup at or before it)
    stop_reason: str | None
    provider_calls: int
    tokens: int  # input + output tokens, as the token budget counts them
    cost_usd: float


@dataclass(frozen=True)
class GroupStats:
    """One configuration's runs: the geometric mean of their best speedups and its bootstrap interval."""

    configuration: str
    campaign_ids: tuple[str, ...]  # the runs that found a best (a run whose seed failed has no speedup)
    speedups: tuple[float, ...]
    geometric_mean: float | None
    interval: tuple[float, float] | None  # 95% bootstrap interval; None with fewer than 2 runs
    without_best: tuple[str, ...]  # runs left out: no KEEP, so no speedup to compare


@dataclass(frozen=True)
class PairTest:
    """Whether two configurations differ: a permutation test of the difference in mean log best speedup."""

    first: str
    second: str
    log_difference: float  # mean log speedup of ``first`` minus that of ``second``
    ratio: float  # exp(log_difference): how many times faster ``first``'s geometric mean is
    p_value: float  # two-sided
    exact: bool  # every relabeling enumerated (False only past EXACT_LIMIT relabelings)


@dataclass(frozen=True)
class Comparison:
    """All configurations of a set of runs, and every pair of them tested."""

    groups: tuple[GroupStats, ...]
    tests: tuple[PairTest, ...]


# ---------------------------------------------------------------- configuration


def _setting(config: dict[str, Any], key: str) -> Any:
    """A setting from a logged config, else CampaignConfig's default (an older log may lack a newer key)."""
    if key in config:
        return config[key]
    return CampaignConfig.model_fields[key].default


def config_label(config: dict[str, Any]) -> str:
    """The settings that shape a search, spelled out: agents, memory scope and cap, model."""
    cap = _setting(config, "memory_cap")
    return (f"agents={_setting(config, 'agents')} memory={_setting(config, 'memory')} "
            f"cap={'none' if cap is None else cap} model={_setting(config, 'model')}")


def configuration(config: dict[str, Any]) -> str:
    """The label that groups runs for comparison: the search structure and the model.

    "single" is one agent (memory cap does not matter to it); with more agents "multi-bounded" has a capped
    memory and "multi-unbounded" keeps every entry (memory_cap None). The model follows, e.g.
    "multi-bounded model=offline", so runs with different models are never pooled.
    """
    if _setting(config, "agents") == 1:
        structure = "single"
    elif _setting(config, "memory_cap") is not None:
        structure = "multi-bounded"
    else:
        structure = "multi-unbounded"
    return f"{structure} model={_setting(config, 'model')}"


# ---------------------------------------------------------------- one run


def summarise_run(run_dir: Path) -> RunSummary:
    """Read ``run_dir/events.jsonl`` and reduce it to the figures a report shows."""
    run_dir = Path(run_dir)
    events = load_events(run_dir)
    return summarise(run_dir, events, fold(events))


def fold(events: Iterable[Event]) -> RunState:
    """The run's state: the one rule for the best, as the campaign applied it."""
    run = RunState()
    run.apply_all(events)
    return run


def summarise(run_dir: Path, events: list[Event], run: RunState) -> RunSummary:
    """The figures of a run whose log is already read and folded (``run`` is ``fold(events)``)."""
    started = campaign_started(events, run_dir)
    decided = [e for e in events if isinstance(e, CandidateDecided)]
    best = next(d for d in decided if d.candidate_id == run.best.candidate_id) if run.best else None
    agents = [d for d in decided if d.agent_id != SEED_AGENT]
    usage = run.budget
    return RunSummary(
        run_dir=run_dir,
        campaign_id=started.campaign_id,
        problem=started.problem,
        config_label=config_label(started.config),
        configuration=configuration(started.config),
        device=_device_name(events, best, started.device),
        candidates=len(agents),
        decisions=decision_counts(agents),
        best_candidate_id=best.candidate_id if best else None,
        best_agent_id=best.agent_id if best else None,
        best_speedup=best.speedup if best else None,
        seed_speedup=_seed_speedup(decided),
        best_over_baseline=best.speedup_over_baseline if best else None,
        best_workloads=tuple(_row(w) for w in best.workloads) if best else (),
        trajectory=trajectory(events),
        stop_reason=_stop_reason(events),
        provider_calls=usage.calls,
        tokens=usage.tokens,
        cost_usd=usage.cost_usd,
    )


def load_events(run_dir: Path) -> list[Event]:
    """The run's events, with a missing folder, a missing log or a damaged log as a ReportError."""
    if not run_dir.is_dir():
        raise ReportError(f"no run folder at {run_dir}")
    path = run_dir / "events.jsonl"
    if not path.is_file():
        raise ReportError(f"{run_dir} has no events.jsonl")
    try:
        return list(read_events(path))
    except EventLogError as error:
        raise ReportError(str(error)) from None


def campaign_started(events: list[Event], run_dir: Path) -> CampaignStarted:
    """The campaign the log records; a log without one is not a run."""
    started = next((e for e in events if isinstance(e, CampaignStarted)), None)
    if started is None:
        raise ReportError(f"{run_dir / 'events.jsonl'} records no campaign (no campaign_started event)")
    return started


def decision_counts(decided: Iterable[CandidateDecided]) -> dict[str, int]:
    """How many of each decision, every decision named (zero when it never happened)."""
    counts = Counter(d.decision for d in decided)
    return {decision: counts[decision] for decision in DECISIONS}


def decided_by_position(events: Sequence[Event]) -> list[tuple[int, CandidateDecided]]:
    """Every decided candidate with its position, in position order.

    Positions come from CandidateProposed (the seed at 0); agents run concurrently, so decisions may arrive out
    of position order. Several seeds share position 0: they keep their log order (the sort is stable).
    """
    positions = {e.candidate_id: e.position for e in events if isinstance(e, CandidateProposed)}
    return sorted(((positions[e.candidate_id], e) for e in events
                   if isinstance(e, CandidateDecided) and e.candidate_id in positions), key=lambda pair: pair[0])


def trajectory(events: Sequence[Event]) -> tuple[tuple[int, float | None], ...]:
    """Best-so-far speedup at each decided candidate position, in position order.

    Only KEEPs move the best; before the first KEEP the best is None.
    """
    points: list[tuple[int, float | None]] = []
    best: float | None = None
    for position, decision in decided_by_position(events):
        if decision.decision == "KEEP" and decision.speedup is not None:
            best = decision.speedup if best is None else max(best, decision.speedup)
        points.append((position, best))
    return tuple(points)


def _seed_speedup(decided: Iterable[CandidateDecided]) -> float | None:
    """The seed kernel's speedup over the reference: where the search started (with several seeds, the fastest
    that passed, the incumbent; where none passed, the first one's)."""
    seeds = [d for d in decided if d.agent_id == SEED_AGENT]
    passed = [d.speedup for d in seeds if d.decision == "KEEP" and d.speedup is not None]
    return max(passed) if passed else next((d.speedup for d in seeds), None)


def _row(workload: WorkloadResult) -> WorkloadRow:
    """The row's fields, each the guard's own (a row is a view of the result, not a second definition)."""
    return WorkloadRow(**{**{f.name: getattr(workload, f.name) for f in fields(WorkloadRow)},
                          "axes": dict(workload.axes)})


def _device_name(events: list[Event], best: CandidateDecided | None, fallback: str) -> str:
    """The GPU the best kernel was judged on, else the profiled device, else the configured device."""
    if best is not None and best.device.get("name"):
        return str(best.device["name"])
    profiled = next((e for e in events if isinstance(e, DeviceProfiled) and e.device.get("name")), None)
    return str(profiled.device["name"]) if profiled else fallback


def _stop_reason(events: list[Event]) -> str | None:
    """Why the campaign stopped; None when the log has no stop (the run is live or crashed)."""
    stops = [e for e in events if isinstance(e, CampaignStopped)]
    return stops[-1].reason if stops else None


# ---------------------------------------------------------------- across runs


def group_by_configuration(summaries: Iterable[RunSummary]) -> dict[str, list[RunSummary]]:
    """Runs per configuration label, labels in sorted order so reports are stable."""
    groups: defaultdict[str, list[RunSummary]] = defaultdict(list)
    for summary in summaries:
        groups[summary.configuration].append(summary)
    return dict(sorted(groups.items()))


def bootstrap_interval(speedups: Sequence[float]) -> tuple[float, float] | None:
    """95% percentile-bootstrap interval of the geometric mean; None with fewer than 2 runs.

    Percentile rather than BCa: with a handful of runs BCa's jackknife estimate is unstable, and it is undefined
    when every run reached the same speedup; the percentile interval always lies within the runs' range.
    """
    if len(speedups) < 2:
        return None
    result = stats.bootstrap((np.asarray(speedups, dtype=float),), stats.gmean, vectorized=True,
                             n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                             random_state=np.random.default_rng(BOOTSTRAP_SEED))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def group_stats(label: str, summaries: Sequence[RunSummary]) -> GroupStats:
    """One configuration's geometric mean and interval over the runs that found a best."""
    found = [s for s in summaries if s.best_speedup is not None]
    speedups = tuple(float(s.best_speedup) for s in found if s.best_speedup is not None)
    return GroupStats(
        configuration=label,
        campaign_ids=tuple(s.campaign_id for s in found),
        speedups=speedups,
        geometric_mean=float(stats.gmean(speedups)) if speedups else None,
        interval=bootstrap_interval(speedups),
        without_best=tuple(s.campaign_id for s in summaries if s.best_speedup is None),
    )


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def permutation_p_value(first: Sequence[float], second: Sequence[float]) -> tuple[float, bool]:
    """Two-sided p-value of the difference in mean log speedup, and whether the test was exact.

    Every relabeling of the runs into groups of the same sizes is enumerated (n_resamples=inf) while there are
    at most EXACT_LIMIT of them, which covers any ablation of a few runs per configuration.
    """
    relabelings = math.comb(len(first) + len(second), len(first))
    exact = relabelings <= EXACT_LIMIT
    result = stats.permutation_test(
        (np.log(np.asarray(first, dtype=float)), np.log(np.asarray(second, dtype=float))), _mean_difference,
        permutation_type="independent", vectorized=True, alternative="two-sided",
        n_resamples=np.inf if exact else PERMUTATION_RESAMPLES, random_state=np.random.default_rng(0))
    return float(result.pvalue), exact


def pair_test(first: GroupStats, second: GroupStats) -> PairTest:
    """The permutation test between two configurations."""
    difference = float(np.mean(np.log(first.speedups)) - np.mean(np.log(second.speedups)))
    p_value, exact = permutation_p_value(first.speedups, second.speedups)
    return PairTest(first=first.configuration, second=second.configuration, log_difference=difference,
                    ratio=math.exp(difference), p_value=p_value, exact=exact)


def compare(summaries: Iterable[RunSummary]) -> Comparison:
    """Every configuration's statistics and a test between every pair that both have two or more runs with a best
    (scipy's permutation test needs two observations per sample; with one run each it could only say p = 1)."""
    groups = tuple(group_stats(label, runs) for label, runs in group_by_configuration(summaries).items())
    testable = [g for g in groups if len(g.speedups) >= 2]
    tests = tuple(pair_test(a, b) for a, b in itertools.combinations(testable, 2))
    return Comparison(groups=groups, tests=tests)


def report_data(summaries: Sequence[RunSummary], comparison: Comparison) -> dict[str, Any]:
    """The report's figures as JSON-ready data."""
    runs = [{**asdict(s), "run_dir": str(s.run_dir)} for s in summaries]
    return {"runs": runs, "comparison": asdict(comparison)}


def faster_than_baseline(rows: Sequence[WorkloadRow]) -> str:
    """"N/M shapes faster than baseline", over the visible workloads, as the KernelArc paper counts them."""
    visible = [w for w in rows if not w.held_out and w.speedup_over_baseline is not None]
    faster = sum(1 for w in visible if (w.speedup_over_baseline or 0.0) > 1.0)
    return f"{faster}/{len(visible)} shapes faster than baseline"
