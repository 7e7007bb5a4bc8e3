"""Time a campaign's best kernel against its seed, the PyTorch reference and torch.compile of the reference,
in one process with the guard's own timing (interleaved rounds, L2 flushed, fresh inputs), and write the
figures as JSON beside the campaign's summary.

    python bench/compare.py SUMMARY.json OUT.json [COMMAND]
    # SUMMARY.json: the output of `arcengine run --json`; COMMAND: the campaign's command line, recorded
"""

from __future__ import annotations

import datetime
import json
import platform
import random
import sys
from pathlib import Path
from typing import Any

import torch

from arcengine.guard import timing
from arcengine.guard.ceilings import device_info
from arcengine.guard.child import load_module
from arcengine.guard.sol import geometric_mean
from arcengine.problem import load_problem

TIMING = timing.TimingConfig(warmup=5, min_reps=30, max_reps=400, target_rel_se=0.005,
                             max_seconds_per_workload=2.0)
POOL = 4


def compare(summary: dict[str, Any]) -> dict[str, Any]:
    problem = load_problem(summary.get("problem_dir", summary["problem"]))
    run_dir = Path(summary["run_dir"])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    reference = load_module(str(problem.reference_path), "bench_reference")
    fns = {
        "reference": reference.run,
        "torch_compile": torch.compile(reference.run),
        "seed": load_module(str(run_dir / "candidates" / "c0000.py"), "bench_seed").run,
        "best": load_module(str(run_dir / "best.py"), "bench_best").run,
    }
    timer = timing.make_timer(device)
    rows = []
    for workload in problem.workloads_for(device.type):
        pool = []
        for k in range(POOL):
            generator = torch.Generator(device=device).manual_seed(7_000_000 + k)
            pool.append(reference.make_inputs(dict(workload.axes), generator, device))
        measured = timing.time_interleaved(fns, timing.cycling(pool), timer, TIMING, random.Random(workload.index),
                                           audit_role="best")
        times = {role: measured.median_us(role) for role in fns}
        rows.append({"axes": workload.axes, "held_out": workload.held_out, "time_us": times,
                     "best_over_seed": times["seed"] / times["best"],
                     "best_over_reference": times["reference"] / times["best"],
                     "best_over_torch_compile": times["torch_compile"] / times["best"]})
    visible = [r for r in rows if not r["held_out"]]
    return {
        "problem": problem.name,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": device_info(device),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "triton": getattr(sys.modules.get("triton"), "__version__", None)},
        "campaign": summary,
        "headline": {
            key: geometric_mean(r[key] for r in visible)
            for key in ("best_over_seed", "best_over_reference", "best_over_torch_compile")
        },
        "workloads": rows,
    }


def main() -> None:
    summary_path, out_path = map(Path, sys.argv[1:3])
    result = compare(json.loads(summary_path.read_text()))
    result["command"] = sys.argv[3] if len(sys.argv) > 3 else None
    out_path.write_text(json.dumps(result, indent=2))
    print(json.dumps(result["headline"], indent=2))


if __name__ == "__main__":
    main()
