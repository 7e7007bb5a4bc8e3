"""An independent check of a campaign's figures, outside the guard: triton.testing.do_bench (its median; it clears
the L2 before every call) in a plain process, per GPU workload, for the kernel, the reference, torch.compile of the
reference compiled afresh for the workload, and each library route of the problem's baseline.py. Written beside
the guard's own figures (``bench/campaign_figures.py``) so the two can be compared.

do_bench's calls follow each other as an eager loop's do, so a host side slower than the GPU is in its figure; the
guard's is GPU time (its head start hides the host). ``gpu_times_us`` measures that too, its own way: CUDA events
around each call, queued behind a cleared L2 and a busy-wait of a millisecond, so the host is done before the GPU
starts the call. Where the two figures part, the call is host-bound.

    python bench/do_bench_check.py PROBLEM KERNEL.py OUT.json [--routes [ROUTE ...]]

``--routes`` names the baseline routes to time (all the problem declares, by default); given with none, only the
kernel and the reference are timed (no compilation: a check of the guard's own figures in a short GPU slot).
"""

from __future__ import annotations

import argparse
import json
import statistics
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

HEAD_START_CYCLES = 2_000_000  # about a millisecond of GPU busy-wait at H100/H200 clocks
GPU_REPS = 50


def gpu_time_us(fn: Any, cache: torch.Tensor) -> float:
    """The median GPU time of a call whose host side is hidden behind a busy-wait (see the module's doc)."""
    times = []
    for _ in range(GPU_REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        cache.zero_()
        torch.cuda._sleep(HEAD_START_CYCLES)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


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
    cache = torch.empty(256 << 20, dtype=torch.int8, device=device)  # larger than any L2, as do_bench clears
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
        times, gpu_times = {}, {}
        for name, fn in fns.items():
            try:
                fn(*inputs)  # compiles a compiled route, outside the timing
                torch.cuda.synchronize(device)
                call = lambda fn=fn, inputs=inputs: fn(*inputs)  # noqa: E731
                times[name] = triton.testing.do_bench(call, return_mode="median") * 1e3
                gpu_times[name] = gpu_time_us(call, cache)
            except Exception as error:  # a route this shape cannot run is left out, with why
                times[name] = f"{type(error).__name__}: {str(error)[:200]}"
        timed = {k: v for k, v in times.items() if isinstance(v, float)}
        best_route = min((r for r in routes if r in timed), key=timed.get, default=None)
        rows.append({"axes": workload.axes, "held_out": workload.held_out, "times_us": times,
                     "gpu_times_us": gpu_times, "fastest_route": best_route,
                     "kernel_over_reference": timed["reference"] / timed["kernel"],
                     "kernel_over_fastest_route": timed[best_route] / timed["kernel"] if best_route else None})
        print(workload.label(), {k: round(v, 2) if isinstance(v, float) else v for k, v in times.items()},
              "gpu", {k: round(v, 2) for k, v in gpu_times.items()}, flush=True)
    over_route = [r["kernel_over_fastest_route"] for r in rows if r["kernel_over_fastest_route"]]
    result = {**environment(device), "command": "python bench/do_bench_check.py " + " ".join(sys.argv[1:]),
              "problem": problem.name,
              "headline": {"kernel_over_reference": geometric_mean([r["kernel_over_reference"] for r in rows]),
                           "kernel_over_fastest_route": geometric_mean(over_route) if over_route else None},
              "workloads": rows}
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
