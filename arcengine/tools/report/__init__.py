"""Campaign reports: one run's outcome, and runs of different configurations compared.

model.py gathers what a report shows from each run's ``events.jsonl``; markdown.py and plots.py lay it out.
``write_report`` writes the report folder (report.md, report.json, trajectory.png).
"""

from __future__ import annotations

import json
from pathlib import Path

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
    "write_report",
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
