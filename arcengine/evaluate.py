"""One-shot guard verdicts outside a campaign: ``arcengine eval`` and ``arcengine problems check``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from arcengine.bus import Bus
from arcengine.events import CandidateDecided
from arcengine.guard.decision import PASSING, SUSPICIOUS_SPEEDUP, Thresholds
from arcengine.guard.gate import check_source
from arcengine.guard.service import Guard
from arcengine.problem import Problem


async def evaluate_file(problem: Problem, candidate: Path, device: str, seeds: int = 5,
                        timeout_s: float = 600.0, memory_limit_gib: float | None = None,
                        suspicious_speedup: float = SUSPICIOUS_SPEEDUP) -> tuple[CandidateDecided, str]:
    """The guard's decision on one file against the reference, and the device kind it ran on."""
    guard = Guard(problem, Bus(None), Thresholds(0.0, 0.0, suspicious_speedup), seeds=seeds, timeout_s=timeout_s,
                  memory_limit_gib=memory_limit_gib)
    source = candidate.read_text(encoding="utf-8")
    submission = {"candidate_id": candidate.stem, "agent_id": "eval", "source": source,
                  "candidate_path": candidate.resolve(), "incumbent_path": None}
    if not check_source(source, problem.entry).ok:  # the gate's REJECT needs no device: answer at once
        return await guard.submit(**submission), "no device (rejected by the gate)"
    await guard.profile(device)
    async with anyio.create_task_group() as workers:
        workers.start_soon(guard.work)
        decided = await guard.submit(**submission)
        workers.cancel_scope.cancel()
    return decided, guard.device


def verdict_json(decided: CandidateDecided) -> dict[str, Any]:
    """The ``eval --json`` document: reject (gate), fail (ran and was wrong or broke, or a suspicious speedup a
    fresh child did not confirm: correct, but reverted), pass."""
    passed = decided.correct and decided.decision in PASSING
    verdict = "reject" if decided.decision == "REJECT" else "pass" if passed else "fail"
    return {
        "verdict": verdict,
        "reason": decided.reason,
        "speedup": decided.speedup,
        "held_out_speedup": decided.held_out_speedup,
        # Why the pass was checked by a second, fresh child (None: one child), and whether that child agreed.
        "suspicious": decided.suspicious,
        "confirmed": decided.confirmed,
        "workloads": [
            {"axes": w.axes, "held_out": w.held_out, "correct": w.correct, "time_us": w.time_us,
             "ref_time_us": w.ref_time_us, "speedup": w.speedup, "sol_score": w.sol_score, "failure": w.failure,
             "harness": w.harness}  # how the timer and the workers behaved: head start, record reads, costs
            for w in decided.workloads
        ],
        "device": decided.device,
        # Where the guard's time went: compile (a workload's first calls: JIT, autotuning, torch.compile) apart
        # from the calls that were checked and timed.
        "guard_seconds": decided.guard_seconds,
        "guard_phases": decided.guard_phases,
    }
