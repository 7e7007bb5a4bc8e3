"""Time a campaign's best kernel against its seed, the PyTorch reference and torch.compile of the reference,
in one process with the guard's own timing (interleaved rounds, L2 flushed, fresh inputs), and write the
figures as JSON beside the campaign's summary.

    python bench/compare.py SUMMARY.json OUT.json [COMMAND]
    # SUMMARY.json: the output of `arcengine run --json`; COMMAND: the campaign's command line, recorded
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
from measure import environment, input_pool, time_workload

from arcengine.guard.child import load_module
from arcengine.guard.sol import geometric_mean
from arcengine.problem import load_problem


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
    rows = []
    for workload in problem.workloads_for(device.type):
        times = time_workload(workload, fns, input_pool(reference, workload, device, 4), device, audit_role="best")
        rows.append({"axes": workload.axes, "held_out": workload.held_out, "time_us": times,
                     "best_over_seed": times["seed"] / times["best"],
                     "best_over_reference": times["reference"] / times["best"],
                     "best_over_torch_compile": times["torch_compile"] / times["best"]})
    visible = [r for r in rows if not r["held_out"]]
    return {
        "problem": problem.name,
        **environment(device),
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
