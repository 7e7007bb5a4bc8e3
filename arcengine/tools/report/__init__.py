"""Campaign reports: one run's outcome, and runs of different configurations compared.

model.py (and details.py, for one run in full) gathers what a report shows from each run's ``events.jsonl``;
markdown.py, html.py and plots.py lay it out. ``write_report`` writes the report folder (report.md, report.json,
trajectory.png), ``write_html`` one self-contained page.
"""

from __future__ import annotations

import json
from pathlib import Path

from arcengine.tools.report.details import run_details
from arcengine.tools.report.html import render_html
from arcengine.tools.report.markdown import render_markdown
from arcengine.tools.report.model import (
    Comparison,
    GroupStats,
    PairTest,
    ReportError,
    RunSummary,
    WorkloadRow,
    bootstrap_interval,
    compare,
    config_label,
    configuration,
    report_data,
    summarise_run,
    trajectory,
)
from arcengine.tools.report.plots import TRAJECTORY_PNG, plot_trajectories

__all__ = [
    "REPORT_JSON", "REPORT_MD", "TRAJECTORY_PNG", "Comparison", "GroupStats", "PairTest", "ReportError", "RunSummary",
    "WorkloadRow", "bootstrap_interval", "compare", "config_label", "configuration", "summarise_run", "trajectory",
    "write_html", "write_report",
]

REPORT_MD = "report.md"
REPORT_JSON = "report.json"


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


def write_html(run_dirs: list[Path], path: Path) -> Path:
    """Write the report of ``run_dirs`` as one self-contained HTML page at ``path``; return the path. The comparison
    of configurations is on it only for several runs (one run has nothing to compare)."""
    if not run_dirs:
        raise ReportError("no run folders given")
    runs = [run_details(Path(d)) for d in run_dirs]
    comparison = compare([r.summary for r in runs]) if len(runs) > 1 else None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(runs, comparison), encoding="utf-8")
    return path
