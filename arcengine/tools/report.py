"""Campaign reports: one run's outcome, and runs of different configurations compared.

Everything comes from each run's ``events.jsonl`` (the source of truth), so a report can be rebuilt from the
log alone. Across runs the figures follow the KernelArc paper's ablation: per configuration the geometric mean
of the runs' best speedups with a 95% bootstrap interval, and between configurations an exact permutation test.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
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

REPORT_MD = "report.md"
REPORT_JSON = "report.json"
TRAJECTORY_PNG = "trajectory.png"
RUN_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))  # (line style, marker) per run of a configuration


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
    started = _campaign_started(events, run_dir)
    decided = [e for e in events if isinstance(e, CandidateDecided)]
    run = RunState()  # the one rule for the best, as the campaign applied it
    run.apply_all(events)
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


def _campaign_started(events: list[Event], run_dir: Path) -> CampaignStarted:
    """The campaign the log records; a log without one is not a run."""
    started = next((e for e in events if isinstance(e, CampaignStarted)), None)
    if started is None:
        raise ReportError(f"{run_dir / 'events.jsonl'} records no campaign (no campaign_started event)")
    return started


def decision_counts(decided: Iterable[CandidateDecided]) -> dict[str, int]:
    """How many of each decision, every decision named (zero when it never happened)."""
    counts = Counter(d.decision for d in decided)
    return {decision: counts[decision] for decision in DECISIONS}


def trajectory(events: Sequence[Event]) -> tuple[tuple[int, float | None], ...]:
    """Best-so-far speedup at each decided candidate position, in position order.

    Positions come from CandidateProposed (the seed at 0); agents run concurrently, so decisions may arrive out
    of position order. Only KEEPs move the best; before the first KEEP the best is None.
    """
    positions = {e.candidate_id: e.position for e in events if isinstance(e, CandidateProposed)}
    decided = sorted(((positions[e.candidate_id], e) for e in events
                      if isinstance(e, CandidateDecided) and e.candidate_id in positions),
                     key=lambda pair: pair[0])  # several seeds share position 0: they keep their log order
    points: list[tuple[int, float | None]] = []
    best: float | None = None
    for position, decision in decided:
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
    return WorkloadRow(axes=dict(workload.axes), held_out=workload.held_out, correct=workload.correct,
                       time_us=workload.time_us, ref_time_us=workload.ref_time_us, speedup=workload.speedup,
                       sol_score=workload.sol_score, baseline_route=workload.baseline_route,
                       baseline_time_us=workload.baseline_time_us,
                       speedup_over_baseline=workload.speedup_over_baseline)


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


# ---------------------------------------------------------------- writing


def write_report(run_dirs: list[Path], out: Path | None = None) -> Path:
    """Write report.md, report.json and trajectory.png for ``run_dirs``; return the folder they are in."""
    if not run_dirs:
        raise ReportError("no run folders given")
    summaries = [summarise_run(Path(d)) for d in run_dirs]
    comparison = compare(summaries)
    folder = Path(out) if out is not None else Path(run_dirs[0]) / "report"
    folder.mkdir(parents=True, exist_ok=True)
    plot_trajectories(summaries, folder / TRAJECTORY_PNG)
    (folder / REPORT_JSON).write_text(json.dumps(report_data(summaries, comparison), indent=2) + "\n",
                                      encoding="utf-8")
    (folder / REPORT_MD).write_text(render_markdown(summaries, comparison), encoding="utf-8")
    return folder


def report_data(summaries: Sequence[RunSummary], comparison: Comparison) -> dict[str, Any]:
    """The report's figures as JSON-ready data."""
    runs = [{**asdict(s), "run_dir": str(s.run_dir)} for s in summaries]
    return {"runs": runs, "comparison": asdict(comparison)}


def plot_trajectories(summaries: Sequence[RunSummary], path: Path) -> None:
    """Best-so-far speedup against candidate position, one step line per run, one color per configuration."""
    figure = Figure(figsize=(8, 4.5), layout="constrained")
    FigureCanvasAgg(figure)  # the Agg backend, without touching pyplot's global backend
    axes = figure.add_subplot()
    colors = _configuration_colors(summaries)
    seen: Counter[str] = Counter()  # runs drawn per configuration: same color, a different line style each
    for summary in summaries:
        points = [(p, b) for p, b in summary.trajectory if b is not None]
        if not points:
            continue
        positions, best = zip(*points, strict=True)
        style, marker = RUN_STYLES[seen[summary.configuration] % len(RUN_STYLES)]
        seen[summary.configuration] += 1
        axes.step(positions, best, where="post", linestyle=style, marker=marker, markersize=3,
                  color=colors[summary.configuration], label=f"{summary.campaign_id} ({summary.configuration})")
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    axes.set_xlabel("candidate position (0 = seed)")
    axes.set_ylabel("best speedup so far (x reference)")
    axes.set_title("Best-so-far speedup by candidate position")
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")
    figure.savefig(path, format="png", dpi=120)


def _configuration_colors(summaries: Sequence[RunSummary]) -> dict[str, Any]:
    """One tab10 color per configuration, so runs of the same configuration read as one family."""
    cmap = colormaps["tab10"]
    labels = sorted({s.configuration for s in summaries})
    return {label: cmap(i % cmap.N) for i, label in enumerate(labels)}


# ---------------------------------------------------------------- markdown


def render_markdown(summaries: Sequence[RunSummary], comparison: Comparison) -> str:
    """The readable report: the trajectory plot, a section per run, then the comparison of configurations."""
    parts = [
        "# arcengine report\n",
        f"{len(summaries)} run(s) in {len(comparison.groups)} configuration(s).\n",
        f"![Best-so-far speedup by candidate position]({TRAJECTORY_PNG})\n",
        "## Runs\n",
        *(run_markdown(s) for s in summaries),
        comparison_markdown(comparison),
    ]
    return "\n".join(parts)


def run_markdown(summary: RunSummary) -> str:
    """One run's section: facts, decision counts, the best kernel per workload, where the best moved."""
    best = (f"{summary.best_candidate_id} by {summary.best_agent_id}, {_x(summary.best_speedup)} the reference, "
            f"{_x(summary.best_over_baseline)} the baseline ({faster_than_baseline(summary.best_workloads)})"
            if summary.best_candidate_id else "none (no KEEP)")
    lines = [
        f"### {summary.campaign_id}\n",
        f"- problem: {summary.problem}",
        f"- configuration: {summary.configuration} ({summary.config_label})",
        f"- device: {summary.device}",
        f"- best: {best}; seed {_x(summary.seed_speedup)}",
        f"- candidates decided: {summary.candidates} (the seed not counted)",
        f"- stop reason: {summary.stop_reason or 'none logged'}",
        f"- provider: {summary.provider_calls} calls, {summary.tokens} tokens, ${summary.cost_usd:.4f}",
        "",
        _table(list(summary.decisions), [[str(n) for n in summary.decisions.values()]]),
        "",
        workloads_markdown(summary),
        "",
        f"Best so far, where it changed: {_trajectory_text(summary.trajectory)}\n",
    ]
    return "\n".join(lines)


def workloads_markdown(summary: RunSummary) -> str:
    """The best kernel's per-workload table; held-out workloads (never shown to agents) are marked."""
    if not summary.best_workloads:
        return "No best kernel, so no per-workload results."
    header = ["workload", "held out", "correct", "time (µs)", "baseline", "baseline (µs)", "over baseline",
              "faster than baseline", "reference (µs)", "over reference", "SOL score"]
    rows = [[_axes(w.axes), "yes (held out)" if w.held_out else "", "yes" if w.correct else "no",
             _num(w.time_us, ".2f"), w.baseline_route or "-", _num(w.baseline_time_us, ".2f"),
             _x(w.speedup_over_baseline), _faster(w.speedup_over_baseline), _num(w.ref_time_us, ".2f"),
             _x(w.speedup), _num(w.sol_score, ".3f")]
            for w in summary.best_workloads]
    return f"Best kernel {summary.best_candidate_id}, per workload:\n\n" + _table(header, rows)


def faster_than_baseline(rows: Sequence[WorkloadRow]) -> str:
    """"N/M shapes faster than baseline", over the visible workloads, as the KernelArc paper counts them."""
    visible = [w for w in rows if not w.held_out and w.speedup_over_baseline is not None]
    faster = sum(1 for w in visible if (w.speedup_over_baseline or 0.0) > 1.0)
    return f"{faster}/{len(visible)} shapes faster than baseline"


def _faster(ratio: float | None) -> str:
    return "-" if ratio is None else "yes" if ratio > 1.0 else "no"


def comparison_markdown(comparison: Comparison) -> str:
    """The configurations' geometric means and intervals, and the pairwise permutation tests."""
    header = ["configuration", "runs", "best speedups", "geometric mean", "95% bootstrap CI", "left out (no best)"]
    rows = [[g.configuration, str(len(g.speedups)), ", ".join(_x(v) for v in g.speedups), _x(g.geometric_mean),
             _interval(g.interval), ", ".join(g.without_best)] for g in comparison.groups]
    lines = [
        "## Comparison across configurations\n",
        "Per configuration: the geometric mean of the runs' best speedups, with a 95% percentile-bootstrap "
        "interval (none with fewer than 2 runs).\n",
        _table(header, rows),
        "",
    ]
    if comparison.tests:
        lines += [
            "Between configurations: a two-sided permutation test of the difference in mean log best speedup "
            "(exact: every relabeling of the runs enumerated).\n",
            _table(["first", "second", "ratio of geometric means", "difference in mean log speedup", "p-value",
                    "exact"],
                   [[t.first, t.second, _x(t.ratio), f"{t.log_difference:+.4f}", f"{t.p_value:.4g}",
                     "yes" if t.exact else "no (sampled)"] for t in comparison.tests]),
            "",
        ]
    else:
        lines.append("Only one configuration with results: nothing to test.\n")
    return "\n".join(lines)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _trajectory_text(points: Sequence[tuple[int, float | None]]) -> str:
    changes = [(p, b) for i, (p, b) in enumerate(points) if b is not None and (i == 0 or points[i - 1][1] != b)]
    return ", ".join(f"position {p}: {_x(b)}" for p, b in changes) or "never (no KEEP)"


def _axes(axes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in axes.items()) or "(no axes)"


def _x(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}x"


def _num(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _interval(interval: tuple[float, float] | None) -> str:
    return "–" if interval is None else f"[{_x(interval[0])}, {_x(interval[1])}]"
