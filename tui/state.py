"""What the TUI shows, as a pure fold over campaign events.

``CampaignView.apply`` is synchronous and does no I/O, so the same view serves a file being followed, events
pushed by the campaign's own process, and unit tests that hand-build an event sequence. Everything an agent is
doing is inferred from the events alone (the agents' in-memory state lives in another process).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from arcengine.domain.events import (
    SEED_AGENT,
    AgentFailed,
    AgentStarted,
    BestImproved,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    Decision,
    DeviceProfiled,
    Event,
    MemoryEvicted,
    MemoryRecorded,
    ProviderCalled,
)
from arcengine.domain.usage import UsageTotals

Status = Literal["waiting", "running", "stopped"]

# Phases an agent can be seen in. The engine's own phase is not logged, so these follow from its last event.
STARTING = "starting"
PROPOSING = "proposing"
DRAFTING = "drafting"
GUARD = "waiting for the guard"
REFLECTING = "reflecting"
RELAUNCHING = "relaunching"
FAILED = "failed"
DONE = "done"

_BETWEEN_STEPS = (STARTING, PROPOSING, DRAFTING)  # no candidate in flight: the budget can end these


@dataclass
class AgentView:
    """One agent as the agents table and the leaderboard show it."""

    agent_id: str
    strategy: str
    provider: str = ""
    phase: str = STARTING
    plateau: int = 0  # as the engine counts it: KEEP resets, ACCEPT and REVERT add one, REJECT leaves it
    candidates: int = 0
    decisions: dict[str, int] = field(default_factory=dict)
    best_speedup: float | None = None  # its best KEEP; None until its first
    best_over_baseline: float | None = None  # that KEEP's gain over the problem's baseline
    best_candidate_id: str | None = None
    last_candidate_id: str | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    failures: int = 0
    last_error: str | None = None


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


@dataclass(frozen=True)
class TrajectoryPoint:
    """A step of the campaign's best-so-far: the candidate at ``position`` raised it to ``speedup``."""

    position: int
    speedup: float
    candidate_id: str
    agent_id: str


@dataclass(frozen=True)
class LeaderRow:
    """An agent's (or the seed's) best KEEP, for the leaderboard."""

    agent_id: str
    strategy: str
    speedup: float | None
    candidate_id: str | None
    over_seed: float | None  # its best relative to the seed's speedup
    over_baseline: float | None = None  # its best over the problem's baseline


@dataclass
class BudgetView(UsageTotals):
    """What the campaign has spent: positions, wall time (from event timestamps), and the providers' calls,
    tokens and dollars (the totals the engine keeps, by the same rule)."""

    budget: int = 0
    proposed: int = 0  # agents' candidates (the seed is not counted, as in the engine)
    decided: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    time_limit_s: float | None = None

    @property
    def elapsed_s(self) -> float:
        """From the first event to the last: deterministic for a given log, unlike the wall clock."""
        if self.first_ts is None or self.last_ts is None:
            return 0.0
        return max(0.0, self.last_ts - self.first_ts)


@dataclass
class CampaignView:
    """The whole screen's state, built by folding events in log order with ``apply``."""

    campaign_id: str = ""
    problem: str = ""
    kernel_type: str = ""
    device: str = ""
    gpus: list[int] = field(default_factory=list)  # the GPUs the guard benchmarks on
    model: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    status: Status = "waiting"
    stop_reason: str | None = None
    agents: dict[str, AgentView] = field(default_factory=dict)  # in start order; the seed is not an agent
    candidates: dict[str, CandidateView] = field(default_factory=dict)
    feed: list[FeedEntry] = field(default_factory=list)
    memory: dict[str, MemoryEntry] = field(default_factory=dict)  # in record order
    trajectory: list[TrajectoryPoint] = field(default_factory=list)  # each rise of the campaign's best
    best_curve: list[float] = field(default_factory=list)  # the campaign's best after each decision
    budget: BudgetView = field(default_factory=BudgetView)
    seed_speedup: float | None = None
    seed_over_baseline: float | None = None
    events: int = 0  # events applied
    last_seq: int = 0
    # a proposal's provider call is logged just before the candidate: its usage waits here for it
    _pending_usage: dict[str, tuple[int, float]] = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- folding -----------------------------------------------------------------------------------------------

    def apply(self, event: Event) -> bool:
        """Fold one event in. Returns False (and changes nothing) for an event already applied, so a view fed
        both from the file and by the campaign's process cannot count anything twice."""
        if event.seq and event.seq <= self.last_seq:
            return False
        if event.seq > self.last_seq:
            self.last_seq = event.seq
        self.events += 1
        if event.ts:
            budget = self.budget
            if budget.first_ts is None:
                budget.first_ts = event.ts
            if budget.last_ts is None or event.ts > budget.last_ts:
                budget.last_ts = event.ts
        fold = _FOLDS.get(type(event))  # by type, not a match over every kind: a busy campaign brings 8,000 a second
        if fold is not None:
            fold(self, event)
        return True

    def apply_all(self, events: Iterable[Event]) -> int:
        """Fold several events; returns how many changed the view."""
        return sum(self.apply(event) for event in events)

    def _agent_started(self, event: AgentStarted) -> None:
        agent = self._agent(event.agent_id, event.strategy)
        agent.strategy, agent.provider = event.strategy, event.provider
        if agent.phase in (STARTING, RELAUNCHING, FAILED, DONE):
            self._between_steps(agent)

    def _memory_recorded(self, event: MemoryRecorded) -> None:
        self.memory[event.entry_id] = MemoryEntry(
            entry_id=event.entry_id, kind=event.kind, agent_id=event.agent_id,
            candidate_id=event.candidate_id, strategy=event.strategy, speedup=event.speedup,
            summary=event.summary, reflection=event.reflection, context=event.context, owner=event.owner)
        agent = self.agents.get(event.agent_id)
        if agent is not None and agent.phase == REFLECTING:
            self._between_steps(agent)

    def _memory_evicted(self, event: MemoryEvicted) -> None:
        self.memory.pop(event.entry_id, None)

    def _agent_failed(self, event: AgentFailed) -> None:
        agent = self._agent(event.agent_id)
        agent.failures += 1
        agent.last_error = event.error
        agent.phase = RELAUNCHING if event.relaunch else FAILED

    def _stopped(self, event: CampaignStopped) -> None:
        self.status = "stopped"
        self.stop_reason = event.reason
        for agent in self.agents.values():
            if agent.phase != FAILED:
                agent.phase = DONE

    def _started(self, event: CampaignStarted) -> None:
        config = event.config
        self.campaign_id, self.problem, self.kernel_type = event.campaign_id, event.problem, event.kernel_type
        self.config = dict(config)
        self.device = self.device or event.device
        self.model = str(config.get("model", ""))
        self.status = "running"
        budget = self.budget
        budget.budget = int(config.get("budget") or 0)
        budget.max_tokens = config.get("max_tokens")
        budget.max_cost_usd = config.get("max_cost_usd")
        budget.time_limit_s = config.get("time_limit_s")

    def _profiled(self, event: DeviceProfiled) -> None:
        name = str(event.device.get("name") or self.device)
        if event.gpu is not None and event.gpu not in self.gpus:
            self.gpus.append(event.gpu)
        self.device = f"{len(self.gpus)}x {name}" if len(self.gpus) > 1 else name

    def _agent(self, agent_id: str, strategy: str = "") -> AgentView:
        agent = self.agents.get(agent_id)
        if agent is None:
            agent = self.agents[agent_id] = AgentView(agent_id=agent_id, strategy=strategy)
        return agent

    def _between_steps(self, agent: AgentView) -> None:
        """The agent has no candidate in flight: it is asking its provider, unless the budget is spent."""
        if self.status == "stopped" or (self.budget.budget and self.budget.proposed >= self.budget.budget):
            agent.phase = DONE
        elif agent.plateau >= int(self.config.get("r_draft") or 0) > 0:
            agent.phase = DRAFTING
        else:
            agent.phase = PROPOSING

    def _provider_called(self, event: ProviderCalled) -> None:
        usage = event.usage
        self.budget.add(usage)
        tokens = usage.input_tokens + usage.output_tokens
        if event.agent_id != SEED_AGENT:
            agent = self._agent(event.agent_id)
            agent.tokens += tokens
            agent.cost_usd += usage.cost_usd
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
        if event.agent_id == SEED_AGENT:
            return
        self.budget.proposed += 1
        agent = self._agent(event.agent_id, event.strategy)
        agent.candidates += 1
        agent.last_candidate_id = event.candidate_id
        agent.phase = GUARD
        if self.budget.budget and self.budget.proposed >= self.budget.budget:
            for other in self.agents.values():  # no position is left for agents not already in a step
                if other.phase in _BETWEEN_STEPS:
                    other.phase = DONE

    def _decided(self, event: CandidateDecided) -> None:
        candidate = self.candidates.get(event.candidate_id)
        if candidate is None:
            candidate = self.candidates[event.candidate_id] = CandidateView(event.candidate_id, event.agent_id)
        candidate.verdict = event
        raised = False
        if event.decision == "KEEP" and event.speedup is not None:
            raised = self._raise_best(candidate, event.speedup)
        if event.agent_id == SEED_AGENT:
            if event.decision == "KEEP":
                self.seed_speedup, self.seed_over_baseline = event.speedup, event.speedup_over_baseline
        else:
            self.budget.decided += 1
            agent = self._agent(event.agent_id, candidate.strategy)
            agent.decisions[event.decision] = agent.decisions.get(event.decision, 0) + 1
            if event.decision == "KEEP":
                agent.plateau = 0
                if event.speedup is not None and (agent.best_speedup is None or event.speedup > agent.best_speedup):
                    agent.best_speedup, agent.best_candidate_id = event.speedup, event.candidate_id
                    agent.best_over_baseline = event.speedup_over_baseline
            elif event.decision in ("ACCEPT", "REVERT"):
                agent.plateau += 1
            if agent.phase not in (FAILED, RELAUNCHING, DONE):
                if event.decision in ("KEEP", "REVERT"):  # these become a win or a trap: the agent reflects
                    agent.phase = REFLECTING
                else:
                    self._between_steps(agent)
        if self.best is not None:
            self.best_curve.append(self.best.speedup)
        self.feed.append(FeedEntry(candidate, event, raised))

    def _raise_best(self, candidate: CandidateView, speedup: float) -> bool:
        """The engine's rule: a KEEP above the campaign's best is the new best (the seed's KEEP starts it)."""
        if self.best is not None and speedup <= self.best.speedup:
            return False
        self.trajectory.append(TrajectoryPoint(max(candidate.position, 0), speedup, candidate.candidate_id,
                                               candidate.agent_id))
        return True

    def _best_improved(self, event: BestImproved) -> None:
        agent = self._agent(event.agent_id)
        if agent.best_speedup is None or event.speedup > agent.best_speedup:
            agent.best_speedup, agent.best_candidate_id = event.speedup, event.candidate_id
            agent.best_over_baseline = event.speedup_over_baseline
        if event.campaign_best and (self.best is None or event.speedup > self.best.speedup):
            candidate = self.candidates.get(event.candidate_id) or CandidateView(event.candidate_id, event.agent_id)
            self._raise_best(candidate, event.speedup)
        if agent.phase == REFLECTING:
            self._between_steps(agent)

    # -- what the screens read ---------------------------------------------------------------------------------

    @property
    def best(self) -> TrajectoryPoint | None:
        """The campaign's best so far."""
        return self.trajectory[-1] if self.trajectory else None

    @property
    def leaderboard(self) -> list[LeaderRow]:
        """The seed and every agent, best speedup first (agents without a KEEP last, in start order)."""
        rows = [LeaderRow(a.agent_id, a.strategy, a.best_speedup, a.best_candidate_id, self._over_seed(a.best_speedup),
                          a.best_over_baseline) for a in self.agents.values()]
        if self.seed_speedup is not None:
            rows.append(LeaderRow(SEED_AGENT, "seed", self.seed_speedup, self.seed_candidate_id, 1.0,
                                  self.seed_over_baseline))
        order = {row.agent_id: number for number, row in enumerate(rows)}
        return sorted(rows, key=lambda r: (r.speedup is None, -(r.speedup or 0.0), order[r.agent_id]))

    def _over_seed(self, speedup: float | None) -> float | None:
        return speedup / self.seed_speedup if speedup is not None and self.seed_speedup else None

    @property
    def seed_candidate_id(self) -> str | None:
        return next((c.candidate_id for c in self.candidates.values() if c.agent_id == SEED_AGENT), None)

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


_FOLDS: dict[type[Event], Callable[[CampaignView, Any], None]] = {
    CampaignStarted: CampaignView._started, DeviceProfiled: CampaignView._profiled,
    AgentStarted: CampaignView._agent_started, ProviderCalled: CampaignView._provider_called,
    CandidateProposed: CampaignView._proposed, CandidateDecided: CampaignView._decided,
    BestImproved: CampaignView._best_improved, MemoryRecorded: CampaignView._memory_recorded,
    MemoryEvicted: CampaignView._memory_evicted, AgentFailed: CampaignView._agent_failed,
    CampaignStopped: CampaignView._stopped,
}


def candidate_diff(old: str, new: str, old_name: str, new_name: str, context: int = 3) -> str:
    """``diff -u`` of two sources, as text."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=old_name, tofile=new_name, n=context)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
