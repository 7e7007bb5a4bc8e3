"""A campaign's figures measured one careful way, by the guard itself: its best kernel and its seed each judged by
``arcengine eval`` (fresh children, the baseline's routes checked and timed in the same interleaved rounds as the
reference), per workload the gain over the baseline (and which route won), over the reference and the SOL score.

    python bench/campaign_figures.py SUMMARY.json OUT.json [COMMAND]
    # SUMMARY.json: the output of `arcengine run --json`; COMMAND: the campaign's command line, recorded
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
from measure import environment, guard_eval

from arcengine.guard.sol import geometric_mean


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    run_dir = Path(summary["run_dir"])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    best = guard_eval(summary["problem_dir"], str(run_dir / "best.py"), device.type)
    seed = guard_eval(summary["problem_dir"], str(run_dir / "candidates" / "c0000.py"), device.type)
    rows = []
    for mine, first in zip(best["workloads"], seed["workloads"], strict=False):
        rows.append({
            "axes": mine["axes"], "held_out": mine["held_out"], "correct": mine["correct"],
            "time_us": {"best": mine["time_us"], "seed": first["time_us"], "reference": mine["ref_time_us"],
                        "baseline": mine["baseline_time_us"]},
            "baseline_route": mine["baseline_route"],  # the fastest correct route: the baseline that won here
            "baseline_routes_us": mine["baseline_times_us"],
            "baseline_failures": mine["baseline_failures"],
            "best_over_baseline": mine["speedup_over_baseline"],
            "best_over_reference": mine["speedup"],
            "best_over_seed": first["time_us"] / mine["time_us"] if mine["time_us"] and first["time_us"] else None,
            "sol_score": mine["sol_score"],
        })
    visible = [r for r in rows if not r["held_out"]]
    faster = sum(1 for r in visible if (r["best_over_baseline"] or 0.0) > 1.0)
    headline: dict[str, Any] = {
        key: geometric_mean(r[key] for r in visible) if all(r[key] for r in visible) else None
        for key in ("best_over_baseline", "best_over_reference", "best_over_seed")
    }
    headline["shapes_faster_than_baseline"] = f"{faster}/{len(visible)}"
    return {"problem": summary["problem"], **environment(device), "campaign": summary, "headline": headline,
            "verdicts": {"best": best["verdict"], "seed": seed["verdict"]}, "workloads": rows}


def main() -> None:
    summary_path, out_path = map(Path, sys.argv[1:3])
    result = figures(json.loads(summary_path.read_text()))
    result["command"] = sys.argv[3] if len(sys.argv) > 3 else None
    out_path.write_text(json.dumps(result, indent=2))
    print(json.dumps(result["headline"], indent=2))


if __name__ == "__main__":
    main()
