"""``replay:RUN_DIR``: answers from a recorded campaign's event log, so the campaign re-runs without network.

Each agent gets, in order, the candidates that the agent of the same id produced in the recorded run, and for
each the conclusion it gave memory; the guard judges them afresh. A recorded reply without usable code replays
as the same REJECT. When an agent's recorded proposals run out, that agent is done."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from arcengine.domain.events import SEED_AGENT, CandidateDecided, CandidateProposed, MemoryRecorded
from arcengine.providers.base import AgentContext, Proposal, ProviderExhausted, ProviderFatal, Reflection
from arcengine.recording.recorded import Recording, ReplayError, read_recording


class ReplayProvider:
    def __init__(self, model: str = "", recording: Recording | None = None, **_: Any) -> None:
        if recording is None:
            if not model:
                raise ProviderFatal("replay needs a recorded run: --model replay:RUN_DIR")
            path = Path(model).expanduser()
            try:
                recording = read_recording(path if path.is_dir() else path.parent)
            except ReplayError as error:
                raise ProviderFatal(f"replay: {error}") from None
        self.name = f"replay:{model}"
        # The recorded campaign's provider: its agents started where that provider's did (arcengine.engine.seeds).
        self.replayed_model = str(recording.started.config.get("model") or "")
        self._proposals: dict[str, deque[CandidateProposed]] = {
            agent: deque(step.proposed for step in steps)
            for agent, steps in recording.steps.items() if agent != SEED_AGENT}
        # By the recorded candidate they concluded on: a conclusion memory dropped at once left no event, so an
        # agent's conclusions are not one per reflection.
        self._conclusions: dict[str, MemoryRecorded] = {
            entry.candidate_id: entry for entries in recording.conclusions.values() for entry in entries}
        self._replaying: dict[str, str] = {}  # each agent's recorded candidate now being replayed

    async def propose(self, context: AgentContext) -> Proposal:
        recorded = self._proposals.get(context.agent_id)
        if not recorded:
            raise ProviderExhausted(f"replay: the recorded run has no more candidates from {context.agent_id}")
        event = recorded.popleft()
        self._replaying[context.agent_id] = event.candidate_id
        return Proposal(source=event.source, strategy=event.strategy, rationale=event.rationale,
                        request=f"replay of {event.candidate_id}", response=event.source,
                        failure=None if event.source.strip() else event.rationale)

    async def reflect(self, context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Reflection:
        event = self._conclusions.get(self._replaying.get(context.agent_id, ""))
        if event is not None:
            return Reflection(summary=event.summary, reflection=event.reflection)
        return Reflection(summary=f"{decided.decision}: {decided.reason}", reflection=decided.reason)
