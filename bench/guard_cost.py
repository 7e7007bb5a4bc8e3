"""Guard wall time per candidate, from campaigns' event logs: total, total less the wait for the device (the
headline), the phases (process start and exit, load and compile, correctness, timing), the part of it spent on the
device (the phases a child runs in its turn: what bounds a pipelined campaign), and the campaign's own pace (seconds
of wall clock per decided candidate after the seed's), per problem.

    python bench/guard_cost.py OUT.json RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import datetime
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from provenance import commit

from arcengine.domain.events import CampaignStarted, CandidateDecided
from arcengine.recording.eventlog import read_events

DEVICE_PHASES = ("compile", "correctness", "baseline", "timing")


def summarise(run_dirs: list[Path]) -> dict[str, object]:
    per_problem: dict[str, list[CandidateDecided]] = defaultdict(list)
    paces: dict[str, list[float]] = defaultdict(list)
    device: dict[str, object] = {}
    for run_dir in run_dirs:
        events = list(read_events(run_dir / "events.jsonl"))
        problem = next(e.problem for e in events if isinstance(e, CampaignStarted))
        decided = [e for e in events if isinstance(e, CandidateDecided) and e.decision != "REJECT"]
        per_problem[problem].extend(decided)
        device = next((e.device for e in decided if e.device), device)
        if len(decided) > 1:  # from the seed's decision (agents start then) to the last
            paces[problem].append((decided[-1].ts - decided[0].ts) / (len(decided) - 1))
    problems = {}
    for problem, decided in per_problem.items():
        phases = sorted({k for d in decided for k in d.guard_phases})
        problems[problem] = {
            "candidates": len(decided),
            "median_total_s": statistics.median(d.guard_seconds for d in decided),
            # Less the wait for the device while another child had it (the pipeline's next child waits ready):
            # what the candidate itself cost.
            "median_own_s": statistics.median(d.guard_seconds - d.guard_phases.get("wait", 0.0) for d in decided),
            "median_phase_s": {p: statistics.median(d.guard_phases.get(p, 0.0) for d in decided) for p in phases},
            # What a child does in its turn on the device (a KEEP's two children counted together).
            "median_device_s": statistics.median(sum(d.guard_phases.get(p, 0.0) for p in DEVICE_PHASES)
                                                 for d in decided),
            "campaign_seconds_per_candidate": statistics.mean(paces[problem]) if paces[problem] else None,
            # The campaign's own pace where it has one (its children overlap: one prepares while one is timed).
            "candidates_per_gpu_minute": 60 / (statistics.mean(paces[problem]) if paces[problem]
                                               else statistics.mean(d.guard_seconds for d in decided)),
        }
    return {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "device": device,
            "commit": commit(),
            "command": "python bench/guard_cost.py OUT " + " ".join(str(r) for r in run_dirs),
            "headline": {p: v["median_own_s"] for p, v in problems.items()}, "problems": problems}


def main() -> None:
    out, *runs = sys.argv[1:]
    result = summarise([Path(r) for r in runs])
    Path(out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result["headline"]))


if __name__ == "__main__":
    main()
