"""The report's plots, drawn on matplotlib canvases of their own (pyplot's global backend is never touched): the
runs compared (trajectory.png) and one run's trajectory with its decisions (an SVG element of the HTML page)."""

from __future__ import annotations

import io
import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib import colormaps, rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from arcengine.tools.report.details import RunDetails
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


# Each decision's look on a run's plot: (label, marker, color, filled). Colors are tab10's, as the PNG's.
MARK_STYLES: dict[str, tuple[str, str, str, bool]] = {
    "KEEP": ("KEEP", "o", "#2ca02c", True),
    "ACCEPT": ("ACCEPT", "D", "#1f77b4", False),
    "REVERT": ("REVERT", "v", "#ff7f0e", False),
    "REJECT": ("REJECT", "X", "#d62728", True),
}
NARROW_SPAN = 4.0  # a run's plot whose speedups span less than this ratio gets evenly spaced ticks


def run_trajectory_svg(details: RunDetails, id_prefix: str) -> str:
    """One run's plot as an ``<svg>`` element for an HTML page: the best-so-far step line over candidate position,
    each decided candidate marked by its decision at its speedup (a star where a KEEP raised the campaign's best),
    the reference (1x) and the seed as lines, and below, in a strip of their own, the candidates without a speedup
    (incorrect, or refused by the gate).

    Text stays text (svg.fonttype none: the page's fonts, no glyph outlines); every id is prefixed with
    ``id_prefix`` so several plots can share one page."""
    summary = details.summary
    unmeasured = [m for m in details.marks if m.speedup is None]
    figure = Figure(figsize=(8, 4.2 if unmeasured else 3.8), layout="constrained")
    FigureCanvasSVG(figure)
    if unmeasured:
        axes, strip = figure.subplots(2, 1, sharex=True, height_ratios=(6, 1))
    else:
        axes, strip = figure.add_subplot(), None
    best = [(p, b) for p, b in summary.trajectory if b is not None]
    if best:
        positions, values = zip(*best, strict=True)
        axes.step(positions, values, where="post", color="#444444", linewidth=1.6, label="best so far", zorder=2)
    for decision, (label, marker, color, filled) in MARK_STYLES.items():
        marks = [m for m in details.marks if m.decision == decision]
        if not marks:
            continue
        style = {"marker": marker, "s": 30, "facecolors": color if filled else "none", "edgecolors": color,
                 "linewidths": 1.2, "zorder": 3}
        measured = [m for m in marks if m.speedup is not None and not m.raised]  # risers: stars, below
        axes.scatter([m.position for m in measured], [m.speedup for m in measured], label=label, **style)
        if strip is not None:
            missing = [m.position for m in marks if m.speedup is None]
            strip.scatter(missing, [0.0] * len(missing), **style)
    risers = [m for m in details.marks if m.raised and m.speedup is not None]
    if risers:
        axes.scatter([m.position for m in risers], [m.speedup for m in risers], marker="*", s=160,
                     color=MARK_STYLES["KEEP"][2], edgecolors="#1b5e20", linewidths=0.6, zorder=4,
                     label="new campaign best")
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle=":", label="reference (1x)")
    if summary.seed_speedup:
        axes.axhline(summary.seed_speedup, color="#9467bd", linewidth=0.8, linestyle="--",
                     label=f"seed ({summary.seed_speedup:.3g}x)")
    axes.set_yscale("log")  # speedups are ratios: 0.5x and 2x lie as far from 1x
    low, high = axes.get_ylim()
    if high / low < NARROW_SPAN:  # within a few x, a power of ten or a 2 or 5 is seldom in view: evenly spaced ticks
        axes.yaxis.set_major_locator(MaxNLocator(nbins=6))
        axes.yaxis.set_minor_formatter(NullFormatter())
    else:
        axes.yaxis.set_minor_formatter(FuncFormatter(_times_minor))
    axes.yaxis.set_major_formatter(FuncFormatter(_times))
    axes.set_ylabel("speedup over the reference")
    axes.grid(True, which="major", alpha=0.25)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    bottom = strip if strip is not None else axes
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel("candidate position (0 = seed)")
    if strip is not None:
        strip.set_yticks([0.0], ["no\nspeedup"], fontsize="small")
        strip.set_ylim(-1.0, 1.0)
        strip.grid(True, axis="x", alpha=0.25)
    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": id_prefix}):  # hashsalt: the same ids every time
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return _inline_svg(buffer.getvalue(), id_prefix)


def _times(value: float, _position: float) -> str:
    return f"{value:.3g}x"


def _times_minor(value: float, _position: float) -> str:
    """Label the 2s and 5s between powers of ten (the log axis of a run spanning less than a decade has no
    major tick to read otherwise)."""
    mantissa = round(value / 10 ** math.floor(math.log10(value)), 6)
    return f"{value:g}x" if mantissa in (2.0, 5.0) else ""


def _inline_svg(document: str, id_prefix: str) -> str:
    """An SVG file as an element of an HTML page: no XML prolog or DOCTYPE, every id and reference to one
    prefixed (matplotlib numbers its groups figure_1, axes_1... in every plot alike)."""
    element = document[document.index("<svg"):]
    element = re.sub(r'\bid="([^"]+)"', rf'id="{id_prefix}\1"', element)
    element = element.replace('href="#', f'href="#{id_prefix}').replace("url(#", f"url(#{id_prefix}")
    return element
