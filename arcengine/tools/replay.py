"""``arcengine replay RUN_DIR``: re-drive the engine from a campaign's event log, with its recorded provider
replies (the replay provider) and its recorded guard decisions (``RecordedGuard``): no network, no GPU, no guard
child. The engine's own logic (agents' working points and plateau counters, drafting, memory, the leaderboard,
STOP) runs for real; the replay then checks that every agent proposed the same candidates and got the same
decisions in the same order, and says where they first differ."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

import anyio

from arcengine.domain.events import SEED_AGENT, CandidateDecided, DeviceProfiled
from arcengine.domain.problem import Problem, Workload
from arcengine.engine.campaign import Campaign, Display
from arcengine.engine.config import CampaignConfig
from arcengine.engine.summary import CampaignSummary
from arcengine.guard.interface import Guard
from arcengine.guard.service import Slot
from arcengine.providers.replay import ReplayProvider
from arcengine.recording.bus import Bus
from arcengine.recording.recorded import Recording, read_recording


class RecordedGuard:
    """The guard's interface (arcengine.guard.interface), answered from the recording: each agent's n-th submission
    gets that agent's n-th recorded decision, provided it is the same candidate source; the first mismatch stops
    the replay."""

    def __init__(self, problem: Problem, bus: Bus, recording: Recording, speed: float | None = None) -> None:
        self.problem, self.bus = problem, bus
        self.device = recording.device
        self.slots: list[Slot] = []
        self.recording = recording
        self.speed = speed
        self.pending = {agent: deque(steps) for agent, steps in recording.steps.items()}
        self.divergence: str | None = None
        self._last_ts: float | None = None

    async def profile(self, requested: str, gpus: str | None = None) -> list[DeviceProfiled]:
        self.device = self.recording.device
        profiled = self.recording.profiled or [DeviceProfiled(device={"kind": "cpu"}, bandwidth_bytes_per_s=1.0,
                                                              flops_per_s=1.0)]
        return [await self.bus.publish(event) for event in profiled]  # type: ignore[misc]

    @property
    def workloads(self) -> list[Workload]:
        return self.problem.workloads_for(self.device)

    async def work(self) -> None:
        await anyio.sleep_forever()  # nothing to drain: answers come straight from the recording

    async def submit(self, *, candidate_id: str, agent_id: str, source: str, candidate_path: Path,
                     incumbent_path: Path | None, written: anyio.Event | None = None,
                     incumbent_speedup: float | None = None) -> CandidateDecided:
        return await self._answer(candidate_id, agent_id, source)

    async def refuse(self, *, candidate_id: str, agent_id: str, reason: str) -> CandidateDecided:
        return await self._answer(candidate_id, agent_id, "")

    async def _answer(self, candidate_id: str, agent_id: str, source: str) -> CandidateDecided:
        queue = self.pending.get(agent_id)
        if agent_id == SEED_AGENT and queue:  # seeds are judged side by side: each is matched by its id
            match = next((step for step in queue if step.proposed.candidate_id == candidate_id), None)
            if match is not None:
                queue.remove(match)
                queue.appendleft(match)
        done = len(self.recording.steps.get(agent_id, [])) - len(queue or ())
        if not queue:
            return await self._diverge(candidate_id, agent_id,
                                       f"{agent_id} proposed a candidate #{done + 1} that the recording does not have")
        step = queue.popleft()
        if source != step.proposed.source:
            return await self._diverge(candidate_id, agent_id,
                                       f"{agent_id}'s candidate #{done + 1} differs from the recorded "
                                       f"{step.proposed.candidate_id} (its source changed)")
        await self._pace(step.decided.ts)
        decided = step.decided.model_copy(update={"candidate_id": candidate_id})
        return await self.bus.publish(decided)  # type: ignore[return-value]

    async def _diverge(self, candidate_id: str, agent_id: str, why: str) -> CandidateDecided:
        if self.divergence is None:
            self.divergence = why
        event = CandidateDecided(candidate_id=candidate_id, agent_id=agent_id, decision="REJECT",
                                 reason=f"replay diverged: {why}", correct=False)
        return await self.bus.publish(event)  # type: ignore[return-value]

    async def _pace(self, recorded_ts: float) -> None:
        """With --speed, wait the recorded gap between decisions divided by the speed."""
        if self.speed and self._last_ts is not None:
            await anyio.sleep(max(0.0, recorded_ts - self._last_ts) / self.speed)
        self._last_ts = recorded_ts


def compare_runs(recording: Recording, replayed: Recording, partial: bool = False) -> str | None:
    """The first place, per agent, where the replay differs from the recording (a candidate's source, parent,
    drafting flag or decision; then the conclusions memory got); None if it reproduced the recording."""
    fields = ("source", "parent", "drafting", "decision")
    for agent in sorted(set(recording.steps) | set(replayed.steps)):
        before, after = recording.steps.get(agent, []), replayed.steps.get(agent, [])
        for index in range(min(len(before), len(after))):
            old, new = recording.fingerprint(agent, index), replayed.fingerprint(agent, index)
            for name, was, now in zip(fields, old, new, strict=True):
                if was != now:
                    shown = (was, now) if name != "source" else ("recorded source", "another source")
                    return (f"{agent}'s candidate #{index + 1} ({before[index].proposed.candidate_id}): "
                            f"{name} was {shown[0]}, replayed {shown[1]}")
        if len(before) != len(after):
            return f"{agent}: {len(before)} candidates recorded, {len(after)} replayed"
        recorded, got = recording.memory(agent), replayed.memory(agent)
        if got[: len(recorded)] != recorded or (len(got) != len(recorded) and not partial):  # --until cuts one off
            return f"{agent}: the conclusions recorded in memory differ"
    return None


@dataclass(frozen=True)
class ReplayResult:
    summary: CampaignSummary
    divergence: str | None  # where the replay first differs from the recording; None: it reproduced it


async def replay_run(run_dir: Path, out: Path, *, speed: float | None = None, until_seq: int | None = None,
                     display: Display | None = None) -> ReplayResult:
    """Replay the campaign recorded in ``run_dir`` into a new run folder under ``out`` and compare decisions."""
    recording = read_recording(run_dir, until_seq)
    config = dict(recording.started.config)
    recorded = sum(len(steps) for agent, steps in recording.steps.items() if agent != SEED_AGENT)
    # Only what was recorded: the budget of its candidates, no clock; the replay provider gives each agent its
    # own recorded proposals, and an agent whose recording runs out is done.
    config.update(model=f"replay:{run_dir}", out=out, time_limit_s=None, plateau=None, target_speedup=None,
                  budget=max(recorded, int(config.get("agents", 1))), device=recording.device)
    if not Path(recording.started.problem_dir).is_dir():  # recorded elsewhere: the shipped problem of that name
        config["problem"] = recording.started.problem
    guards: list[RecordedGuard] = []

    def recorded_guard(campaign: Campaign) -> Guard:
        guards.append(RecordedGuard(campaign.problem, campaign.bus, recording, speed))
        return guards[0]

    provider = ReplayProvider(str(run_dir), recording=recording)
    campaign = Campaign(CampaignConfig(**config), display=display, provider=provider, guard_factory=recorded_guard)
    summary = await campaign.run()
    replayed = read_recording(Path(summary.run_dir))
    divergence = guards[0].divergence if guards and guards[0].divergence else None
    divergence = divergence or compare_runs(recording, replayed, partial=until_seq is not None)
    return ReplayResult(summary, divergence)
