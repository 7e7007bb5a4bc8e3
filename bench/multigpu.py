"""The same campaign on 1 GPU and on 2: candidates judged per minute, and whether the same candidate against the
same incumbent, met in both runs, got the same decision. Run on a machine with two GPUs, from the repository root:

    python bench/multigpu.py OUT_DIR [--problem rmsnorm] [--agents 4] [--budget 40] [--no-pipeline]

Writes OUT_DIR/multigpu-h200x2.json (headline: throughput_ratio_2_vs_1) and keeps both run folders.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from measure import CampaignFailed, environment, run_campaign
from pairs import incumbents

from arcengine.domain.events import SEED_AGENT, CampaignStopped, CandidateDecided, CandidateProposed, DeviceProfiled
from arcengine.recording.eventlog import read_events


def campaign(out: Path, gpus: int, args: argparse.Namespace) -> tuple[list[str], dict[str, Any]]:
    command = [args.problem, "--agents", str(args.agents), "--budget", str(args.budget), "--device", "cuda",
               "--gpus", str(gpus), "--plateau", "1000", "--out", str(out / f"runs-{gpus}gpu"),
               "--no-pipeline" if args.no_pipeline else "--pipeline"]
    try:
        return ["arcengine", "run", *command, "--json"], run_campaign(command)
    except CampaignFailed as error:
        raise SystemExit(f"arcengine run {' '.join(command)} failed: {error}") from None


def judged_pairs(events: list[Any]) -> dict[str, dict[str, Any]]:
    """Each agent candidate's decision, keyed by what was compared: its source and its incumbent's (the agent's
    best when it was proposed). Runs diverge, so only a pair met in both runs is the same question asked twice."""
    sources = {e.candidate_id: e.source for e in events if isinstance(e, CandidateProposed)}
    incumbent = incumbents(events)
    pairs = {}
    for e in events:
        if isinstance(e, CandidateDecided) and e.candidate_id in incumbent and e.decision != "REJECT":
            key = hashlib.sha256((sources[e.candidate_id] + "\0" + sources[incumbent[e.candidate_id]]).encode())
            pairs[key.hexdigest()] = {"candidate": e.candidate_id, "decision": e.decision, "gpu": e.gpu,
                                      "vs_incumbent": e.vs_incumbent, "interval": e.vs_incumbent_interval}
    return pairs


def overlap(first: list[float] | None, second: list[float] | None) -> bool | None:
    if not first or not second:
        return None
    return first[0] <= second[1] and second[0] <= first[1]


def analyse(run_dir: Path) -> dict[str, Any]:
    """Throughput over the agents' part of the campaign (seed judged to stop) and each candidate's decision."""
    events = list(read_events(run_dir / "events.jsonl"))
    decided = [e for e in events if isinstance(e, CandidateDecided)]
    seeds_done = max(e.ts for e in decided if e.agent_id == SEED_AGENT)  # the last seed's decision (several: any order)
    stopped = next(e for e in events if isinstance(e, CampaignStopped))
    judged = [e for e in decided if e.agent_id != SEED_AGENT and e.decision != "REJECT"]
    minutes = (stopped.ts - seeds_done) / 60
    return {
        "run_dir": str(run_dir),
        "devices": [{"gpu": e.gpu, "uuid": e.device.get("uuid"), "bandwidth_bytes_per_s": e.bandwidth_bytes_per_s,
                     "flops_per_s": e.flops_per_s} for e in events if isinstance(e, DeviceProfiled)],
        "judged": len(judged),
        "minutes": minutes,
        "candidates_per_minute": len(judged) / minutes,
        "judged_per_gpu": dict(Counter(str(e.gpu) for e in judged)),
        "decisions": dict(Counter(e.decision for e in judged)),
        "pairs": judged_pairs(events),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--problem", default="rmsnorm")
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--no-pipeline", action="store_true", help="judge one child at a time on each GPU")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for gpus in (1, 2):
        command, summary = campaign(args.out, gpus, args)
        runs[gpus] = {"command": " ".join(command), **analyse(Path(summary["run_dir"]))}
        print(gpus, "GPU:", runs[gpus]["judged"], "judged in", round(runs[gpus]["minutes"], 2), "min", flush=True)
    common = sorted(runs[1]["pairs"].keys() & runs[2]["pairs"].keys())
    both = [{"1_gpu": runs[1]["pairs"][k], "2_gpus": runs[2]["pairs"][k]} for k in common]
    same = sum(pair["1_gpu"]["decision"] == pair["2_gpus"]["decision"] for pair in both)
    for pair in both:
        pair["intervals_overlap"] = overlap(pair["1_gpu"]["interval"], pair["2_gpus"]["interval"])
    for run in runs.values():
        run.pop("pairs")
    result = {
        **environment(torch.device("cuda")),
        "command": "python bench/multigpu.py OUT " + " ".join(sys.argv[2:]),
        "headline": {
            "throughput_ratio_2_vs_1": runs[2]["candidates_per_minute"] / runs[1]["candidates_per_minute"],
            "candidates_per_minute_1_gpu": runs[1]["candidates_per_minute"],
            "candidates_per_minute_2_gpus": runs[2]["candidates_per_minute"],
            "pairs_in_both_runs": len(common),
            "same_decision_in_both_runs": same,
            # a different decision from intervals that overlap is one measurement near a threshold; from
            # disjoint intervals, the two runs measured different things
            "different_decisions_with_disjoint_intervals": sum(
                not pair["intervals_overlap"] for pair in both
                if pair["1_gpu"]["decision"] != pair["2_gpus"]["decision"]),
        },
        "pairs_in_both_runs": both,  # the same candidate against the same incumbent, judged in each run
        "runs": {f"{gpus}_gpu": run for gpus, run in runs.items()},
    }
    (args.out / "multigpu-h200x2.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result["headline"], indent=1))


if __name__ == "__main__":
    main()
