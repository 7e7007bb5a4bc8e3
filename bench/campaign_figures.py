"""A campaign's figures measured one careful way, by the guard itself: its best kernel and its seed each judged by
``arcengine eval`` (fresh children, the baseline's routes checked and timed in the same interleaved rounds as the
reference), per workload the gain over the baseline (and which route won), over the reference and the SOL score.

    python bench/campaign_figures.py SUMMARY.json OUT.json [COMMAND] [--kernels DIR]
    # SUMMARY.json: the output of `arcengine run --json`; COMMAND: the campaign's command line, recorded;
    # DIR: where best.py and c0000.py (the seed; with several seeds, the incumbent's c0000-N.py) are, when not in
    # the summary's run folder (a later call on another machine: bench/h200_campaigns.sh with FIGURES=0 keeps
    # them under OUT)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from measure import environment, guard_eval

from arcengine.guard.sol import geometric_mean
from arcengine.tools.evaluate import HOST_KEY


def figures(summary: dict[str, Any], kernels: Path | None = None) -> dict[str, Any]:
    run_dir = Path(summary["run_dir"])
    # The seed the search started from: the incumbent, where the problem has several (c0000 otherwise).
    seed_id = next((s["candidate"] for s in summary.get("seeds", []) if s["incumbent"]), "c0000")
    best_path, seed_path = (kernels / "best.py", kernels / f"{seed_id}.py") if kernels else (
        run_dir / "best.py", run_dir / "candidates" / f"{seed_id}.py")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    problem_dir = summary["problem_dir"] if Path(summary["problem_dir"]).is_dir() else summary["problem"]
    best = guard_eval(problem_dir, str(best_path), device.type)
    seed = guard_eval(problem_dir, str(seed_path), device.type)
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
            # The best's host side per call, which the guard's GPU times leave out: past its time, host-bound.
            "host_us": {"best": mine["harness"].get(HOST_KEY), "reference": mine["harness"].get("host_median_us")},
        })
    visible = [r for r in rows if not r["held_out"]]
    faster = sum(1 for r in visible if (r["best_over_baseline"] or 0.0) > 1.0)
    headline: dict[str, Any] = {
        key: geometric_mean(r[key] for r in visible) if all(r[key] for r in visible) else None
        for key in ("best_over_baseline", "best_over_reference", "best_over_seed")
    }
    headline["shapes_faster_than_baseline"] = f"{faster}/{len(visible)}"
    headline["host_bound_shapes"] = sum(1 for r in visible
                                        if (r["host_us"]["best"] or 0.0) > (r["time_us"]["best"] or 0.0))
    return {"problem": summary["problem"], **environment(device), "campaign": summary, "headline": headline,
            "verdicts": {"best": best["verdict"], "seed": seed["verdict"]}, "workloads": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("summary", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("command", nargs="?")
    parser.add_argument("--kernels", type=Path, help="the folder holding best.py and the seed's file (c0000.py)")
    args = parser.parse_args()
    result = figures(json.loads(args.summary.read_text()), args.kernels)
    result["command"] = args.command
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result["headline"], indent=2))


if __name__ == "__main__":
    main()
