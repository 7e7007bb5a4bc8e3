"""``replay:RUN_DIR``: answers from a recorded campaign's event log, so the campaign re-runs without network.

Each agent gets, in order, the candidates and the conclusions that the agent of the same id produced in the
recorded run; the guard judges them afresh. A recorded reply without usable code replays as the same REJECT.
When an agent's recorded proposals run out, that agent is done."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from arcengine.events import SEED_AGENT, CandidateDecided, CandidateProposed, MemoryRecorded
from arcengine.providers.base import AgentContext, Proposal, ProviderExhausted, ProviderFatal, Reflection
from arcengine.recording import Recording, ReplayError, read_recording


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
        self._proposals: dict[str, deque[CandidateProposed]] = {
            agent: deque(step.proposed for step in steps)
            for agent, steps in recording.steps.items() if agent != SEED_AGENT}
        self._conclusions: dict[str, deque[MemoryRecorded]] = {
            agent: deque(entries) for agent, entries in recording.conclusions.items()}

    async def propose(self, context: AgentContext) -> Proposal:
        recorded = self._proposals.get(context.agent_id)
        if not recorded:
            raise ProviderExhausted(f"replay: the recorded run has no more candidates from {context.agent_id}")
        event = recorded.popleft()
        return Proposal(source=event.source, strategy=event.strategy, rationale=event.rationale,
                        request=f"replay of {event.candidate_id}", response=event.source,
                        failure=None if event.source.strip() else event.rationale)

    async def reflect(self, context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Reflection:
        recorded = self._conclusions.get(context.agent_id)
        if recorded:
            event = recorded.popleft()
            return Reflection(summary=event.summary, reflection=event.reflection)
        return Reflection(summary=f"{decided.decision}: {decided.reason}", reflection=decided.reason)
