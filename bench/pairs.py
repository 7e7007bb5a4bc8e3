"""Paired decisions judged again: candidates of a recorded campaign, each against the incumbent it was judged
against, in N fresh guard children on this device. Per pair: the decisions, the candidate-over-incumbent ratio
of each child, and per workload the candidate's and the incumbent's median times with their spread. It shows
whether a decision near the margin is the measurement's (the same pair decided both ways) or the campaign's.

    python bench/pairs.py RUN_DIR OUT.json CANDIDATE_ID... [--repeats 4] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import torch
from measure import environment

from arcengine.domain.events import SEED_AGENT, AgentStarted, CampaignStarted, CandidateDecided, CandidateProposed
from arcengine.domain.problem import load_problem
from arcengine.engine.config import CampaignConfig
from arcengine.guard.decision import Thresholds
from arcengine.guard.service import GuardService
from arcengine.recording.bus import Bus
from arcengine.recording.eventlog import read_events


def incumbents(events: list[Any]) -> dict[str, str]:
    """Each agent candidate's incumbent: its agent's best when it was proposed (at first the seed it started from)."""
    best: dict[str, str] = {}
    found: dict[str, str] = {}
    for event in events:
        if isinstance(event, AgentStarted) and event.seed_id:
            best.setdefault(event.agent_id, event.seed_id)
        elif isinstance(event, CandidateProposed) and event.agent_id != SEED_AGENT:
            found[event.candidate_id] = best.get(event.agent_id, "c0000")
        elif isinstance(event, CandidateDecided) and event.decision == "KEEP" and event.agent_id != SEED_AGENT:
            best[event.agent_id] = event.candidate_id
    return found


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "cv": statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0}


def summary(incumbent: str, recorded: CandidateDecided, decided: list[CandidateDecided]) -> dict[str, Any]:
    return {
        "incumbent": incumbent,
        "recorded": {"decision": recorded.decision, "vs_incumbent": recorded.vs_incumbent},
        "decisions": [d.decision for d in decided],
        "vs_incumbent": [d.vs_incumbent for d in decided],
        "intervals": [d.vs_incumbent_interval for d in decided],
        "workloads": {
            str(w.axes): {"candidate_us": spread([d.workloads[i].time_us or 0.0 for d in decided]),
                          "incumbent_us": spread([d.workloads[i].incumbent_time_us or 0.0 for d in decided]),
                          "reps": [d.workloads[i].reps for d in decided],
                          "harness": [d.workloads[i].harness for d in decided]}
            for i, w in enumerate(decided[0].workloads) if not w.held_out and w.time_us},
    }


async def judge_again(run_dir: Path, ids: list[str], repeats: int, device: str) -> dict[str, Any]:
    events = list(read_events(run_dir / "events.jsonl"))
    started = next(e for e in events if isinstance(e, CampaignStarted))
    config = CampaignConfig(**{**started.config, "problem": started.problem})
    sources = {e.candidate_id: e.source for e in events if isinstance(e, CandidateProposed)}
    recorded = {e.candidate_id: e for e in events if isinstance(e, CandidateDecided)}
    incumbent_of = incumbents(events)
    thresholds = Thresholds(config.margin, config.near_band, config.suspicious_speedup)
    guard = GuardService(load_problem(started.problem), Bus(None), thresholds, seeds=config.seeds, timeout_s=600)
    await guard.profile(device)
    pairs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in {*ids, *(incumbent_of[i] for i in ids)}:
            (Path(folder) / f"{name}.py").write_text(sources[name])
        async with anyio.create_task_group() as workers:
            workers.start_soon(guard.work)
            for candidate in ids:
                folder_of = Path(folder)
                decided = [await guard.submit(candidate_id=f"{candidate}-{k}", agent_id=f"bench-{k}",
                                              source=sources[candidate], candidate_path=folder_of / f"{candidate}.py",
                                              incumbent_path=folder_of / f"{incumbent_of[candidate]}.py")
                           for k in range(repeats)]
                pairs[candidate] = summary(incumbent_of[candidate], recorded[candidate], decided)
                print(candidate, pairs[candidate]["recorded"], pairs[candidate]["decisions"],
                      [round(v or 0, 3) for v in pairs[candidate]["vs_incumbent"]], flush=True)
            workers.cancel_scope.cancel()
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    pairs = anyio.run(judge_again, args.run_dir, args.candidates, args.repeats, args.device)
    result = {**environment(torch.device(args.device)),
              "command": "python bench/pairs.py RUN_DIR OUT " + " ".join(sys.argv[3:]), "pairs": pairs}
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
