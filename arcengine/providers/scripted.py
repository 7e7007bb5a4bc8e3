"""The scripted provider, for tests: a list of sources handed out in order, or a function of the context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from arcengine.domain.events import CandidateDecided
from arcengine.providers.base import AgentContext, Proposal, ProviderExhausted, Reflection

Script = Sequence[str] | Callable[[AgentContext], str]


class ScriptedProvider:
    name = "scripted"

    def __init__(self, script: Script = (), cycle: bool = False, **_: Any) -> None:
        self._script = script
        self._cycle = cycle
        self._next = 0

    async def propose(self, context: AgentContext) -> Proposal:
        if callable(self._script):
            source = self._script(context)
        else:
            if not self._script or (self._next >= len(self._script) and not self._cycle):
                raise ProviderExhausted("scripted provider: script finished")
            source = self._script[self._next % len(self._script)]
            self._next += 1
        return Proposal(source=source, strategy=context.strategy.name, rationale="scripted",
                        request=context.agent_id, response=source)

    async def reflect(self, context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Reflection:
        return Reflection(summary=f"scripted candidate: {decided.decision}", reflection=decided.reason)
