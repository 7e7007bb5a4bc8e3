"""Guard fidelity: one kernel measured in N fresh guard children; per workload the coefficient of variation
of its median time, beside what triton.testing.do_bench gives for the same kernel and inputs in this process.

    python bench/fidelity.py PROBLEM OUT.json [--repeats 10] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import torch
from measure import environment

from arcengine.domain.problem import Problem, load_problem
from arcengine.guard.child.judge import load_module
from arcengine.guard.decision import Thresholds
from arcengine.guard.service import GuardService
from arcengine.recording.bus import Bus
from arcengine.recording.logs import configure_logging


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0


@dataclass
class GuardRuns:
    times: dict[int, list[float]] = field(default_factory=dict)  # per workload, the median of each child
    harness: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # per workload, each child's timer
    phases: list[dict[str, float]] = field(default_factory=list)  # per child, where its wall time went


async def guard_times(problem: Problem, kernel: Path, device: str, repeats: int) -> GuardRuns:
    """The candidate measured in ``repeats`` fresh children."""
    guard = GuardService(problem, Bus(None), Thresholds(0.0, 0.0), seeds=5, timeout_s=600, baseline="off")
    await guard.profile(device)
    runs = GuardRuns()
    async with anyio.create_task_group() as workers:
        workers.start_soon(guard.work)
        for k in range(repeats):
            decided = await guard.submit(candidate_id=f"fidelity-{k}", agent_id="bench", source=kernel.read_text(),
                                         candidate_path=kernel, incumbent_path=None)
            assert decided.correct, decided.reason
            runs.phases.append({"total": decided.guard_seconds, **decided.guard_phases})
            for w in decided.workloads:
                runs.times.setdefault(w.index, []).append(w.time_us or float("nan"))
                runs.harness.setdefault(w.index, []).append({"reps": w.reps, "rel_se": w.rel_se, **w.harness})
        workers.cancel_scope.cancel()
    return runs


def do_bench_times(problem: Problem, kernel: Path, device: str, repeats: int) -> dict[int, list[float]]:
    import triton.testing

    reference = load_module(str(problem.reference_path), "fidelity_reference")
    run = load_module(str(kernel), "fidelity_kernel").run
    times: dict[int, list[float]] = {}
    for workload in problem.workloads_for(device):
        generator = torch.Generator(device=device).manual_seed(1)
        inputs = reference.make_inputs(dict(workload.axes), generator, device)
        times[workload.index] = [
            triton.testing.do_bench(lambda inputs=inputs: run(*inputs), return_mode="median") * 1e3
            for _ in range(repeats)
        ]
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("out", type=Path)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--kernel", type=Path, help="the kernel to measure [the problem's seed]")
    args = parser.parse_args()
    configure_logging(None)
    problem = load_problem(args.problem)
    kernel = (args.kernel or problem.seed_path).resolve()
    runs = anyio.run(guard_times, problem, kernel, args.device, args.repeats)
    bench = do_bench_times(problem, kernel, args.device, args.repeats) if args.device == "cuda" else {}
    rows: list[dict[str, Any]] = []
    for workload in problem.workloads_for(args.device):
        g = runs.times[workload.index]
        rows.append({"axes": workload.axes, "held_out": workload.held_out, "guard_us": g,
                     "guard_harness": runs.harness[workload.index],
                     "guard_median_us": statistics.median(g), "guard_cv": cv(g),
                     "do_bench_us": bench.get(workload.index), "do_bench_cv": cv(bench.get(workload.index, []))})
    long = [r for r in rows if r["guard_median_us"] >= 20]
    result = {
        "problem": problem.name, "kernel": str(kernel.name), "repeats": args.repeats,
        **environment(torch.device(args.device)),
        "command": f"python bench/fidelity.py {args.problem} OUT --repeats {args.repeats} --device {args.device}",
        "headline": {"max_cv_kernels_20us_or_more": max((r["guard_cv"] for r in long), default=None),
                     "workloads_20us_or_more": len(long)},
        "guard_phases_s": runs.phases,
        "workloads": rows,
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result["headline"]))


if __name__ == "__main__":
    main()
