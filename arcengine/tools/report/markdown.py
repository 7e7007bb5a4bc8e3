"""The report as markdown (report.md): a section per run, then the comparison of configurations."""

from __future__ import annotations

from collections.abc import Sequence

from arcengine.tools.report import formatting as fmt
from arcengine.tools.report.model import Comparison, RunSummary, faster_than_baseline
from arcengine.tools.report.plots import TRAJECTORY_PNG


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
    best = (f"{summary.best_candidate_id} by {summary.best_agent_id}, {fmt.x(summary.best_speedup)} the reference, "
            f"{fmt.x(summary.best_over_baseline)} the baseline ({faster_than_baseline(summary.best_workloads)})"
            if summary.best_candidate_id else "none (no KEEP)")
    lines = [
        f"### {summary.campaign_id}\n",
        f"- problem: {summary.problem}",
        f"- configuration: {summary.configuration} ({summary.config_label})",
        f"- device: {summary.device}",
        f"- best: {best}; seed {fmt.x(summary.seed_speedup)}",
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
    rows = [[fmt.axes(w.axes), "yes (held out)" if w.held_out else "", "yes" if w.correct else "no",
             fmt.num(w.time_us, ".2f"), w.baseline_route or "-", fmt.num(w.baseline_time_us, ".2f"),
             fmt.x(w.speedup_over_baseline), fmt.faster(w.speedup_over_baseline), fmt.num(w.ref_time_us, ".2f"),
             fmt.x(w.speedup), fmt.num(w.sol_score, ".3f")]
            for w in summary.best_workloads]
    return f"Best kernel {summary.best_candidate_id}, per workload:\n\n" + _table(header, rows)


def comparison_markdown(comparison: Comparison) -> str:
    """The configurations' geometric means and intervals, and the pairwise permutation tests."""
    header = ["configuration", "runs", "best speedups", "geometric mean", "95% bootstrap CI", "left out (no best)"]
    rows = [[g.configuration, str(len(g.speedups)), ", ".join(fmt.x(v) for v in g.speedups), fmt.x(g.geometric_mean),
             fmt.interval(g.interval), ", ".join(g.without_best)] for g in comparison.groups]
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
                   [[t.first, t.second, fmt.x(t.ratio), f"{t.log_difference:+.4f}", f"{t.p_value:.4g}",
                     "yes" if t.exact else "no (sampled)"] for t in comparison.tests]),
            "",
        ]
    else:
        lines.append("No test: one needs two configurations with two or more runs each that found a best.\n")
    return "\n".join(lines)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _trajectory_text(points: Sequence[tuple[int, float | None]]) -> str:
    changes = [(p, b) for i, (p, b) in enumerate(points) if b is not None and (i == 0 or points[i - 1][1] != b)]
    return ", ".join(f"position {p}: {fmt.x(b)}" for p, b in changes) or "never (no KEEP)"
