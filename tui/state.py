"""What the TUI shows: the run's fold (arcengine.domain.run: agents and their phases, best, budget, leaderboard)
and what only a screen needs, folded from the same events.

``CampaignView.apply`` is synchronous and does no I/O, so the same view serves a file being followed, events
pushed by the campaign's own process, and unit tests that hand-build an event sequence. Everything an agent is
doing is inferred from the events alone (the agents' in-memory state lives in another process).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from arcengine.domain.events import (
    CandidateDecided,
    CandidateProposed,
    Decision,
    Event,
    MemoryEvicted,
    MemoryRecorded,
    ProviderCalled,
)
from arcengine.domain.run import RunState


# A busy campaign brings thousands of candidates a second: their views and feed entries hold the events
# themselves (frozen, so safe to share) rather than copies of their fields, which cost the fold a third of its time.
# Slotted and not frozen: a frozen dataclass sets each field through object.__setattr__, three times slower.
@dataclass(slots=True)
class CandidateView:
    """A candidate: what was proposed and, once decided, what the guard found."""

    candidate_id: str
    agent_id: str
    proposal: CandidateProposed | None = None  # None: decided without a proposal in the log (the view attached late)
    verdict: CandidateDecided | None = None
    tokens: int = 0
    cost_usd: float = 0.0

    @property
    def decided(self) -> bool:
        return self.verdict is not None

    @property
    def decision(self) -> Decision | None:
        return self.verdict.decision if self.verdict is not None else None

    @property
    def position(self) -> int:
        return self.proposal.position if self.proposal is not None else -1

    @property
    def strategy(self) -> str:
        return self.proposal.strategy if self.proposal is not None else ""

    @property
    def parent_id(self) -> str | None:
        return self.proposal.parent_id if self.proposal is not None else None

    @property
    def source(self) -> str:
        return self.proposal.source if self.proposal is not None else ""


@dataclass(slots=True)
class FeedEntry:
    """One decision in the live feed (newest last)."""

    candidate: CandidateView
    verdict: CandidateDecided
    campaign_best: bool  # this decision raised the campaign's best


@dataclass(slots=True)
class MemoryEntry:
    """A conclusion still in memory (evicted ones are removed)."""

    entry_id: str
    kind: Literal["win", "trap"]
    agent_id: str
    candidate_id: str
    strategy: str
    speedup: float | None
    summary: str
    reflection: str
    context: str
    owner: str | None


@dataclass
class CampaignView(RunState):
    """The whole screen's state: the run's fold (arcengine.domain.run) and what only a screen needs, every
    candidate, the live feed, the memory's entries and the best after each decision."""

    candidates: dict[str, CandidateView] = field(default_factory=dict)
    feed: list[FeedEntry] = field(default_factory=list)
    memory: dict[str, MemoryEntry] = field(default_factory=dict)  # in record order
    best_curve: list[float] = field(default_factory=list)  # the campaign's best after each decision
    # a proposal's provider call is logged just before the candidate: its usage waits here for it
    _pending_usage: dict[str, tuple[int, float]] = field(default_factory=dict, init=False, repr=False, compare=False)

    _FOLDS: ClassVar[dict[type[Event], str]] = {**RunState._FOLDS, MemoryEvicted: "_memory_evicted"}

    # -- folding what only the screen needs --------------------------------------------------------------------

    def _memory_recorded(self, event: MemoryRecorded) -> None:
        self.memory[event.entry_id] = MemoryEntry(
            entry_id=event.entry_id, kind=event.kind, agent_id=event.agent_id,
            candidate_id=event.candidate_id, strategy=event.strategy, speedup=event.speedup,
            summary=event.summary, reflection=event.reflection, context=event.context, owner=event.owner)
        super()._memory_recorded(event)

    def _memory_evicted(self, event: MemoryEvicted) -> None:
        self.memory.pop(event.entry_id, None)

    def _provider_called(self, event: ProviderCalled) -> None:
        super()._provider_called(event)
        usage = event.usage
        tokens = usage.input_tokens + usage.output_tokens
        candidate = self.candidates.get(event.candidate_id)
        if candidate is not None:  # a reflection: the proposal's call comes before the candidate
            candidate.tokens += tokens
            candidate.cost_usd += usage.cost_usd
        else:
            self._pending_usage[event.candidate_id] = (tokens, usage.cost_usd)

    def _proposed(self, event: CandidateProposed) -> None:
        candidate = self.candidates.get(event.candidate_id) or CandidateView(event.candidate_id, event.agent_id)
        candidate.agent_id, candidate.proposal = event.agent_id, event
        candidate.tokens, candidate.cost_usd = self._pending_usage.pop(event.candidate_id, (0, 0.0))
        self.candidates[event.candidate_id] = candidate
        super()._proposed(event)

    def _decided(self, event: CandidateDecided) -> bool:
        candidate = self.candidates.get(event.candidate_id)
        if candidate is None:
            candidate = self.candidates[event.candidate_id] = CandidateView(event.candidate_id, event.agent_id)
        candidate.verdict = event
        raised = super()._decided(event)
        if self.best is not None:
            self.best_curve.append(self.best.speedup)
        self.feed.append(FeedEntry(candidate, event, raised))
        return raised

    # -- what the screens read ---------------------------------------------------------------------------------

    @property
    def wins(self) -> list[MemoryEntry]:
        """Wins in memory, best speedup first (as agents recall them)."""
        wins = [e for e in self.memory.values() if e.kind == "win"]
        return sorted(wins, key=lambda e: -(e.speedup or 0.0))

    @property
    def traps(self) -> list[MemoryEntry]:
        """Traps in memory, oldest first."""
        return [e for e in self.memory.values() if e.kind == "trap"]

    def parent_of(self, candidate_id: str) -> CandidateView | None:
        candidate = self.candidates.get(candidate_id)
        if candidate is None or candidate.parent_id is None:
            return None
        return self.candidates.get(candidate.parent_id)

    def diff(self, candidate_id: str, context: int = 3) -> str:
        """A unified diff of the candidate's source against its parent's ('' for the seed or an unknown id)."""
        candidate = self.candidates.get(candidate_id)
        parent = self.parent_of(candidate_id)
        if candidate is None or parent is None:
            return ""
        return candidate_diff(parent.source, candidate.source, parent.candidate_id, candidate.candidate_id, context)


def candidate_diff(old: str, new: str, old_name: str, new_name: str, context: int = 3) -> str:
    """``diff -u`` of two sources, as text."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=old_name, tofile=new_name, n=context)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
