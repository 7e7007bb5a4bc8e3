"""The report as one self-contained HTML page (``arcengine report RUN --html OUT.html``).

Nothing on the page is fetched: the CSS is inline, each run's plot an inline SVG element, and there is no script
(``<details>`` folds the kernels' sources and diffs). Every text that comes from a run (sources, rationales,
reasons, names) goes through Jinja2's autoescape, so a kernel whose comment holds ``</script>`` or ``<b>`` reads
as that text.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined

import arcengine
from arcengine.tools.report import formatting as fmt
from arcengine.tools.report.details import RunDetails
from arcengine.tools.report.model import Comparison, faster_than_baseline
from arcengine.tools.report.plots import MARK_STYLES, run_trajectory_svg

TEMPLATE = "report.html.j2"


@cache
def environment() -> Environment:
    """The templates' environment: autoescape on, and an undefined name is an error rather than an empty cell."""
    env = Environment(loader=PackageLoader("arcengine.tools.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(x=fmt.x, num=fmt.num, axes=fmt.axes, faster=fmt.faster, interval=fmt.interval,
                       when=fmt.when, duration=fmt.duration, diff_class=diff_class)
    return env


def render_html(runs: Sequence[RunDetails], comparison: Comparison | None) -> str:
    """The page: a section per run, then (for several runs) the comparison of their configurations."""
    # matplotlib's SVG, which escapes the text it draws: the one thing the template marks safe
    plots = [run_trajectory_svg(run, f"run{number}-") for number, run in enumerate(runs, start=1)]
    return environment().get_template(TEMPLATE).render(
        runs=runs, comparison=comparison, plots=plots, faster_than_baseline=faster_than_baseline,
        decision_colors={decision: style[2] for decision, style in MARK_STYLES.items()},
        version=arcengine.__version__)


def diff_class(line: str) -> str:
    """The CSS class of a unified diff line."""
    if line.startswith(("+++", "---")):
        return "diff-file"
    if line.startswith("@@"):
        return "diff-hunk"
    return {"+": "diff-add", "-": "diff-del"}.get(line[:1], "diff-same")
