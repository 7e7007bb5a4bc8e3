"""Stand-ins for the two slow parts of a campaign, so the engine itself can be tested and benchmarked at scale:
a provider that answers at once and a guard that decides at once. Everything else (bus, event log, database,
memory, agents, leaderboard, displays) is the real thing.

A synthetic candidate states its own speed (``SPEED = 1.23``); the stub guard compares it with the incumbent's
as the real guard would compare measured times: KEEP beyond the margin, ACCEPT within the near band, REVERT
below. Never use these outside tests and benchmarks: the stub guard runs nothing and checks nothing.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio

from arcengine.domain.events import (
    SEED_AGENT,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
    Usage,
)
from arcengine.domain.problem import Problem
from arcengine.guard.decision import Thresholds
from arcengine.guard.sandbox import ChildLauncher
from arcengine.guard.service import GuardService, Job, Slot, Worker
from arcengine.providers.base import AgentContext, Proposal, Reflection
from arcengine.recording.bus import Bus

_SPEED = re.compile(r"^SPEED = ([0-9.]+)$", re.MULTILINE)


def stated_speed(source: str) -> float:
    match = _SPEED.search(source)
    return float(match.group(1)) if match else 1.0


class SyntheticProvider:
    """Proposes ``SPEED = x`` kernels at once, x drifting from the working kernel's; 100 input and 20 output
    tokens per call, so token budgets have something to count."""

    name = "synthetic"

    def __init__(self, seed: int = 0, **_: Any) -> None:
        self._seed = seed
        self._proposed: Counter[str] = Counter()

    def restore(self, events: Iterable[Event]) -> None:
        """A resumed campaign: number the next proposals after the ones made before the crash."""
        self._proposed = Counter(e.agent_id for e in events if isinstance(e, CandidateProposed))

    async def propose(self, context: AgentContext) -> Proposal:
        n = self._proposed[context.agent_id] = self._proposed[context.agent_id] + 1
        speed = max(0.05, stated_speed(context.working_source) * (0.9 + 0.22 * self._draw(context.agent_id, n)))
        source = (f"# synthetic candidate {n} of {context.agent_id}\nSPEED = {speed:.6f}\n\n\n"
                  "def run(*inputs):\n    return inputs[0]\n")
        return Proposal(source=source, strategy=context.strategy.name, rationale=f"synthetic step {n}",
                        request=f"{context.agent_id} #{n}", response=source,
                        usage=Usage(input_tokens=100, output_tokens=20), params={"SPEED": round(speed, 6)})

    def _draw(self, agent_id: str, n: int) -> float:
        """A number in [0, 1) fixed by the seed, the agent and its proposal's number, so a resumed campaign draws
        what the uninterrupted one would have. A hash: seeding a ``random.Random`` for each proposal took 8 us, 2% of
        the engine's time per candidate in its benchmark."""
        digest = hashlib.blake2b(f"{self._seed}:{agent_id}:{n}".encode(), digest_size=8).digest()
        return int.from_bytes(digest) / 2**64

    async def reflect(self, context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Reflection:
        return Reflection(summary=f"SPEED {proposal.params.get('SPEED')}: {decided.decision}",
                          reflection=decided.reason)


class StubGuard(GuardService):
    """The real guard's gate, queue, workers and fairness, with the child replaced by a decision from the stated
    speeds after an optional random pause (``delay_s``: low and high seconds). It implements the guard's interface
    (arcengine.guard.interface) by injecting its decision and a launcher that never starts a warm parent, and by
    profiling no device."""

    def __init__(self, problem: Problem, bus: Bus, thresholds: Thresholds | None = None,
                 delay_s: tuple[float, float] = (0.0, 0.0), seed: int = 0) -> None:
        super().__init__(problem, bus, thresholds or Thresholds(0.02, 0.05), seeds=1, timeout_s=1.0,
                         launcher=lambda: ChildLauncher(use_zygote=False), decide=self._decide)
        self.delay_s = delay_s
        self._rng = random.Random(seed)
        self._speeds: dict[Path, float] = {}  # by candidate file: no file is read back while judging

    async def profile(self, requested: str, gpus: str | None = None) -> list[DeviceProfiled]:
        self.device = "cpu"
        self.slots = [Slot(None, {"device": {"name": "stub guard", "kind": "cpu"}, "flops_per_s": 1e11,
                                  "bandwidth_bytes_per_s": 1e10})]
        return [await self.bus.publish(self.slots[0].event())]  # type: ignore[list-item]

    def _speed(self, path: Path) -> float:
        if path not in self._speeds:  # judged before a crash: read it back
            self._speeds[path] = stated_speed(path.read_text(encoding="utf-8"))
        return self._speeds[path]

    async def _decide(self, job: Job, worker: Worker) -> CandidateDecided:
        """No child loads the file (the speed comes with the submission), so the guard does not wait for the disk."""
        if job.source:
            self._speeds[job.candidate_path] = stated_speed(job.source)
        low, high = self.delay_s
        if high:
            await anyio.sleep(self._rng.uniform(low, high))
        speed = self._speed(job.candidate_path)
        incumbent = self._speed(job.incumbent_path) if job.incumbent_path else None
        if job.agent_id == SEED_AGENT or incumbent is None:
            decision, reason = "KEEP", "baseline"
        elif speed > incumbent * (1 + self.thresholds.margin):
            decision, reason = "KEEP", f"{speed / incumbent:.3f}x the incumbent"
        elif speed >= incumbent * (1 - self.thresholds.near_band):
            decision, reason = "ACCEPT", "within the near-best band"
        else:
            decision, reason = "REVERT", f"slower: {speed / incumbent:.3f}x the incumbent"
        return CandidateDecided(candidate_id=job.candidate_id, agent_id=job.agent_id, decision=decision,
                                reason=reason, correct=True, speedup=speed, held_out_speedup=speed,
                                vs_incumbent=speed / incumbent if incumbent else None)
