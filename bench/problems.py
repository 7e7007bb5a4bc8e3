"""Every shipped problem on this device, per workload: the PyTorch reference, the seed kernel, torch.compile of
the reference (default and max-autotune) and the roofline time (the problem's FLOPs and bytes over the measured
ceilings). Results are saved after each problem, so a run cut short keeps what it measured.

    python bench/problems.py OUT.json [--problems NAME ...] [--no-max-autotune]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from measure import environment, time_workload

from arcengine.guard.ceilings import measure_ceilings
from arcengine.guard.child import load_module
from arcengine.problem import Problem, load_problem, shipped_problem_names


def compiled_for_workload(fn: Any, max_autotune: bool) -> dict[str, Any]:
    """torch.compile of the reference specialised to one workload's shapes (dynamic=False), its best case: a
    fresh compilation per workload, so no shape falls back to a dynamic-shape kernel or to eager."""
    torch._dynamo.reset()
    fns = {"torch_compile": torch.compile(fn, dynamic=False)}
    if max_autotune:
        fns["torch_compile_max_autotune"] = torch.compile(fn, dynamic=False, mode="max-autotune")
    return fns


def measure_problem(problem: Problem, device: torch.device, ceilings: dict[str, float],
                    max_autotune: bool, save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Measures every workload, calling `save` with what it has after each one (max-autotune takes minutes)."""
    reference = load_module(str(problem.reference_path), f"bench_{problem.name}_reference")
    seed = load_module(str(problem.seed_path), f"bench_{problem.name}_seed")
    rows: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    started = time.monotonic()
    result = {"category": problem.category, "kernel_type": problem.kernel_type, "workloads": rows,
              "errors": errors, "complete": False}
    for workload in problem.workloads_for(device.type):
        fns = {"reference": reference.run, "seed": seed.run, **compiled_for_workload(reference.run, max_autotune)}
        try:
            times = time_workload(reference, workload, fns, device, audit_role="seed", pool_size=2)
        except Exception as error:  # one role failing (a compile error, out of memory) must not lose the rest
            errors[workload.label()] = f"{type(error).__name__}: {str(error)[:300]}"
            continue
        floor_s = max(problem.flops(workload) / ceilings["flops_per_s"],
                      problem.bytes(workload) / ceilings["bandwidth_bytes_per_s"])
        rows.append({"axes": workload.axes, "held_out": workload.held_out, "time_us": times,
                     "roofline_us": floor_s * 1e6,
                     "seed_over_reference": times["reference"] / times["seed"],
                     "seed_sol_fraction": floor_s * 1e6 / times["seed"]})
        if device.type == "cuda":
            torch.cuda.empty_cache()
        save({**result, "seconds": round(time.monotonic() - started, 1)})
    result.update(complete=True, seconds=round(time.monotonic() - started, 1))
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--no-max-autotune", action="store_true")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ceilings = measure_ceilings(device)
    result: dict[str, Any] = {**environment(device), "ceilings": ceilings,
                              "command": "python bench/problems.py OUT" + (" --no-max-autotune" * args.no_max_autotune),
                              "problems": {}}
    if args.out.is_file():  # resume: keep the problems an earlier (cut-short) run measured
        result["problems"] = json.loads(args.out.read_text()).get("problems", {})
    for name in args.problems or shipped_problem_names():
        problem = load_problem(name)
        if device.type == "cpu" and problem.cpu_unsupported:
            continue

        def save(measured: dict[str, Any], name: str = problem.name) -> None:
            result["problems"][name] = measured
            args.out.write_text(json.dumps(result, indent=1))

        save(measure_problem(problem, device, ceilings, not args.no_max_autotune, save))
        print(problem.name, result["problems"][problem.name]["seconds"], "s", flush=True)


if __name__ == "__main__":
    main()
