"""The H200 table of docs/problems.md, from bench/results/problems-h200.json: per problem, the geometric means
over its measured workloads of each contender's speedup over the PyTorch reference, and how close the seed is
to the roofline. Replaces the text between the table markers in the docs.

    python bench/problems_table.py [RESULTS.json] [DOC.md]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from statistics import geometric_mean
from typing import Any

from arcengine.domain.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- h200-table:begin -->", "<!-- h200-table:end -->"
CONTENDERS = ("seed", "torch_compile", "torch_compile_max_autotune")


def speedup(rows: list[dict[str, Any]], contender: str) -> str:
    ratios = [row["time_us"]["reference"] / row["time_us"][contender] for row in rows if contender in row["time_us"]]
    if not ratios:
        return "not measured"
    partial = f" ({len(ratios)} of {len(rows)})" if len(ratios) < len(rows) else ""
    return f"{geometric_mean(ratios):.2f}x{partial}"


def workload_count(name: str, rows: list[dict[str, Any]]) -> str:
    """How many workloads the rows cover, and of how many the problem has now: a workload added since the
    measurement shows as missing rather than going unnoticed."""
    wanted = [workload.axes for workload in load_problem(name).workloads]
    measured = sum(axes in wanted for axes in (row["axes"] for row in rows))
    return f"{measured}" if measured == len(wanted) else f"{measured} of {len(wanted)} (partial)"


def baseline(rows: list[dict[str, Any]]) -> list[str]:
    """The guard's baseline (from one `arcengine eval` of the seed): its speedup over the reference and the seed's
    over it, both timed in the same rounds, and which route won how many workloads."""
    judged = [row["baseline"] for row in rows if "baseline" in row]
    if not judged:
        return ["not measured"] * 3
    partial = f" ({len(judged)} of {len(rows)})" if len(judged) < len(rows) else ""
    over_reference = geometric_mean([b["reference_us"] / b["time_us"] for b in judged])
    seed_over = geometric_mean([b["time_us"] / b["seed_us"] for b in judged])
    wins = Counter(b["route"] for b in judged)
    return [f"{over_reference:.2f}x{partial}", f"{seed_over:.2f}x",
            ", ".join(f"{route} {count}" for route, count in wins.most_common())]


def table(results: dict[str, Any]) -> str:
    lines = ["| problem | workloads | seed | torch.compile | max-autotune | baseline | seed / baseline "
             "| baseline won by | seed at roofline |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, problem in sorted(results["problems"].items()):
        rows = problem["workloads"]
        sol = geometric_mean([row["seed_sol_fraction"] for row in rows])
        count = workload_count(name, rows)
        cells = [speedup(rows, c) for c in CONTENDERS] + baseline(rows)
        lines.append(f"| `{name}` | {count} | " + " | ".join(cells) + f" | {sol:.0%} |")
    device = results["device"]
    days = sorted({run["date"][:10] for run in [*results.get("earlier_runs", []), results]})
    measured_on = days[0] if len(days) == 1 else f"measured from {days[0]} to {days[-1]}"
    lines.append("")
    lines.append(f"Speedups over the PyTorch reference, geometric mean over the measured workloads (held-out ones "
                 f"included); \"baseline\": the guard's baseline (per workload the fastest correct route, or the "
                 f"reference where it is faster; `arcengine eval` of the seed) over the reference, both timed in the "
                 f"same rounds; \"seed at roofline\": the roofline time over the seed's time. {device['name']}, "
                 f"torch {results['versions']['torch']}, triton {results['versions']['triton']}, "
                 f"{measured_on}. Per workload: `bench/results/problems-h200.json`.")
    return "\n".join(lines)


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench/results/problems-h200.json"
    doc = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs/problems.md"
    text = doc.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    doc.write_text(f"{head}{BEGIN}\n{table(json.loads(source.read_text()))}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    main()
