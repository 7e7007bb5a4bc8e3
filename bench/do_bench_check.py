"""An independent check of a campaign's figures, outside the guard: triton.testing.do_bench (its median; it clears
the L2 before every call) in a plain process, per GPU workload, for the kernel, the reference, torch.compile of the
reference compiled afresh for the workload, and each library route of the problem's baseline.py. Written beside
the guard's own figures (``bench/campaign_figures.py``) so the two can be compared.

    python bench/do_bench_check.py PROBLEM KERNEL.py OUT.json [--routes [ROUTE ...]]

``--routes`` names the baseline routes to time (all the problem declares, by default); given with none, only the
kernel and the reference are timed (no compilation: a check of the guard's own figures in a short GPU slot).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
import triton.testing
from measure import environment

from arcengine.domain.problem import load_problem
from arcengine.guard.child.baselines import COMPILE_MODES
from arcengine.guard.child.worker import load_module
from arcengine.guard.sol import geometric_mean


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("kernel", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--routes", nargs="*", default=None, metavar="ROUTE")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    device = torch.device("cuda")
    reference = load_module(str(problem.reference_path), "check_reference")
    kernel = load_module(str(args.kernel), "check_kernel")
    routes = [route for route in problem.baseline_routes_for("cuda") if args.routes is None or route in args.routes]
    library = load_module(str(problem.baseline_path), "check_baseline") if problem.baseline_path.is_file() else None
    rows = []
    for workload in problem.workloads_for("cuda"):
        generator = torch.Generator(device=device).manual_seed(1234 + workload.index)
        inputs = reference.make_inputs(dict(workload.axes), generator, device)
        fns: dict[str, Any] = {"kernel": kernel.run, "reference": reference.run}
        for route in routes:
            if route in COMPILE_MODES:
                torch._dynamo.reset()  # a fresh compilation for this shape: no recompile cascade
                fns[route] = torch.compile(reference.run, dynamic=False, mode=COMPILE_MODES[route])
            elif library is not None:
                fns[route] = getattr(library, route)
        times = {}
        for name, fn in fns.items():
            try:
                fn(*inputs)  # compiles a compiled route, outside the timing
                torch.cuda.synchronize(device)
                call = lambda fn=fn, inputs=inputs: fn(*inputs)  # noqa: E731
                times[name] = triton.testing.do_bench(call, return_mode="median") * 1e3
            except Exception as error:  # a route this shape cannot run is left out, with why
                times[name] = f"{type(error).__name__}: {str(error)[:200]}"
        timed = {k: v for k, v in times.items() if isinstance(v, float)}
        best_route = min((r for r in routes if r in timed), key=timed.get, default=None)
        rows.append({"axes": workload.axes, "held_out": workload.held_out, "times_us": times,
                     "fastest_route": best_route,
                     "kernel_over_reference": timed["reference"] / timed["kernel"],
                     "kernel_over_fastest_route": timed[best_route] / timed["kernel"] if best_route else None})
        print(workload.label(), {k: round(v, 2) if isinstance(v, float) else v for k, v in times.items()},
              flush=True)
    over_route = [r["kernel_over_fastest_route"] for r in rows if r["kernel_over_fastest_route"]]
    result = {**environment(device), "command": "python bench/do_bench_check.py " + " ".join(sys.argv[1:]),
              "problem": problem.name,
              "headline": {"kernel_over_reference": geometric_mean([r["kernel_over_reference"] for r in rows]),
                           "kernel_over_fastest_route": geometric_mean(over_route) if over_route else None},
              "workloads": rows}
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
