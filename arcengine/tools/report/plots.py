"""The report's plots, drawn with matplotlib's Agg canvas (pyplot's global backend is never touched)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from arcengine.tools.report.model import RunSummary

TRAJECTORY_PNG = "trajectory.png"
RUN_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))  # (line style, marker) per run of a configuration


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
