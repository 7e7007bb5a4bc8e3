"""The guard's pipeline on a GPU: the same campaign with --no-pipeline (one child at a time: start, import,
compile, check, time) and with it (the next child starts, imports and compiles while one is checked and timed).

Per shipped problem and mode: the GPU's busy fraction (the seconds children spent checking and timing, over the
wall time from the seed's decision to the last decision, while agents kept candidates waiting) and the
candidates judged per GPU-minute; per problem, how many candidates got the same decision in both modes. With two
GPUs visible the two modes run side by side, one on each; on one GPU one campaign at a time.

    python bench/pipeline.py OUT_DIR [--problems NAME ...] [--modes before after] [--agents 4] [--budget 10]

Writes OUT_DIR/pipeline-h200.json (headline: gpu_busy_fraction and candidates_per_gpu_minute per problem) after
each run, and keeps every run folder; a rerun on the same OUT_DIR measures only the (problem, mode) runs not in it.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import torch
from measure import CampaignFailed, environment, run_campaign

from arcengine.domain.events import SEED_AGENT, CandidateDecided
from arcengine.domain.problem import shipped_problem_names
from arcengine.recording.eventlog import read_events

MODES = {"before": ["--no-pipeline"], "after": ["--pipeline"]}
BUSY_PHASES = ("correctness", "timing")  # the child's kernels checked and timed: the GPU's useful work


def campaign(problem: str, mode: str, gpu: int | None, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [problem, "--agents", str(args.agents), "--budget", str(args.budget), "--device", "cuda",
               "--plateau", "1000", "--out", str(out / f"runs-{mode}"), *MODES[mode]]
    shown = "arcengine run " + " ".join(command)
    try:
        summary = run_campaign(command, {"CUDA_VISIBLE_DEVICES": str(gpu)} if gpu is not None else None)
    except CampaignFailed as error:
        return {"error": str(error), "command": shown}
    return {"command": shown, "gpu": gpu, **analyse(Path(summary["run_dir"]))}


def analyse(run_dir: Path) -> dict[str, Any]:
    decided = [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, CandidateDecided)]
    seeds_done = max(e.ts for e in decided if e.agent_id == SEED_AGENT)  # the last seed's decision (several: any order)
    judged = [e for e in decided if e.agent_id != SEED_AGENT and e.decision != "REJECT"]
    wall_s = max(e.ts for e in judged) - seeds_done
    busy_s = sum(e.guard_phases.get(phase, 0.0) for e in judged for phase in BUSY_PHASES)
    phase_names = sorted({name for e in judged for name in e.guard_phases})
    return {
        "run_dir": str(run_dir),
        "judged": len(judged),
        "decisions": {d: sum(e.decision == d for e in judged) for d in ("KEEP", "ACCEPT", "REVERT")},
        "decided": {e.candidate_id: e.decision for e in decided},  # the run folder stays on the GPU machine
        "wall_s": wall_s,
        "busy_s": busy_s,
        "gpu_busy_fraction": busy_s / wall_s,
        "candidates_per_gpu_minute": len(judged) / (wall_s / 60),
        "mean_phase_s": {name: sum(e.guard_phases.get(name, 0.0) for e in judged) / len(judged)
                         for name in phase_names},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--modes", nargs="*", choices=list(MODES), default=list(MODES))
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--budget", type=int, default=10)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    side_by_side = torch.cuda.device_count() >= 2 and len(args.modes) == 2
    result: dict[str, Any] = {**environment(torch.device("cuda")),
                              "command": "python bench/pipeline.py OUT " + " ".join(sys.argv[2:]),
                              "side_by_side": side_by_side, "problems": {}, "same_decisions": {}}
    saved = args.out / "pipeline-h200.json"
    if saved.is_file():  # a rerun keeps the (problem, mode) runs measured before and measures the others
        earlier = json.loads(saved.read_text())
        result["problems"], result["same_decisions"] = earlier["problems"], earlier.get("same_decisions", {})
    for problem in args.problems or shipped_problem_names():
        runs = result["problems"].setdefault(problem, {})
        modes = [mode for mode in args.modes if mode not in runs]
        together = side_by_side and len(modes) == 2  # on one GPU, never two campaigns at once
        gpus = dict(zip(modes, (0, 1), strict=True)) if together else dict.fromkeys(modes)
        with ThreadPoolExecutor(2 if together else 1) as pool:
            futures = {pool.submit(campaign, problem, mode, gpus[mode], args.out, args): mode for mode in modes}
            for future in as_completed(futures):  # each run saved as it ends: a cut-short call loses no other
                runs[futures[future]] = future.result()
                result["same_decisions"][problem] = same_decisions(runs)
                result["headline"] = headline(result["problems"])
                saved.write_text(json.dumps(result, indent=1))
        print(problem, {mode: (round(run["gpu_busy_fraction"], 3), round(run["candidates_per_gpu_minute"], 1))
                        for mode, run in runs.items() if "error" not in run},
              {mode: run["error"] for mode, run in runs.items() if "error" in run}, flush=True)


def same_decisions(runs: dict[str, Any]) -> dict[str, Any] | None:
    """How many candidates (by id) got the same decision in both modes, and the decisions of those that did not:
    the offline provider proposes the same candidates while decisions agree, so a pipeline that disturbed the
    timing would show here first."""
    if not all(mode in runs and "decided" in runs[mode] for mode in MODES):
        return None
    decided = [runs[mode]["decided"] for mode in MODES]
    met = sorted(decided[0].keys() & decided[1].keys())
    differ = {c: dict(zip(MODES, (decided[0][c], decided[1][c]), strict=True)) for c in met
              if decided[0][c] != decided[1][c]}
    return {"candidates": len(met), "same": len(met) - len(differ), "differ": differ}


def headline(problems: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The issue's figures: the pipelined busy fraction, and candidates per GPU-minute in both modes."""
    return {
        "gpu_busy_fraction": {name: runs.get("after", {}).get("gpu_busy_fraction") for name, runs in problems.items()},
        "candidates_per_gpu_minute": {name: {mode: run.get("candidates_per_gpu_minute") for mode, run in runs.items()}
                                      for name, runs in problems.items()},
    }


if __name__ == "__main__":
    main()
