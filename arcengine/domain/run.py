"""The run's state, folded from its events: the one place that says what a campaign's log means.

Agents and their phases, the campaign's best and its rises, the device, each agent's plateau counter, the budget
spent and the leaderboard. ``RunState.apply`` is synchronous and does no I/O, so the same fold serves the engine
(a bus subscriber: its counts, best and STOP rules), ``run --resume``, ``report``, ``export`` and the terminal UI
(which adds what only a screen needs: arcengine_tui.state). One definition of best: the campaign's best is the
first KEEP whose speedup is above every earlier KEEP's (the seed's KEEP starts it). Where a problem has several
seeds, "the seed" is the incumbent: the passing seed of the highest speedup (the first decided, on a tie).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal

from arcengine.domain.events import (
    SEED_AGENT,
    AgentFailed,
    AgentStarted,
    BestImproved,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
    MemoryRecorded,
    ProviderCalled,
)
from arcengine.domain.usage import UsageTotals

Status = Literal["waiting", "running", "stopped"]


class Phase(StrEnum):
    """What an agent is doing, as its events show it (the engine sets the same values as it goes)."""

    STARTING = "starting"
    PROPOSING = "proposing"  # asking its provider for a candidate
    DRAFTING = "drafting"  # asking for a structurally different one: its plateau counter reached r_draft
    JUDGING = "waiting for the guard"
    REFLECTING = "reflecting"  # a KEEP or REVERT becomes a win or a trap
    RELAUNCHING = "relaunching"  # it raised; relaunched after a pause
    EXHAUSTED = "exhausted"  # its provider has nothing left to propose
    FAILED = "failed"  # relaunched too often, or its provider failed fatally
    DONE = "done"


BETWEEN_STEPS = (Phase.STARTING, Phase.PROPOSING, Phase.DRAFTING)  # no candidate in flight: the budget can end these
ENDED = (Phase.EXHAUSTED, Phase.FAILED, Phase.DONE)


@dataclass
class AgentRecord:
    """One agent as the log shows it."""

    agent_id: str
    strategy: str
    provider: str = ""
    phase: Phase = Phase.STARTING
    plateau: int = 0  # KEEP resets, ACCEPT and REVERT add one, REJECT leaves it
    candidates: int = 0
    decisions: dict[str, int] = field(default_factory=dict)
    # Its best: its latest KEEP, the incumbent its next candidates are compared with (a KEEP beat the one before
    # it in a paired comparison, though its speedup over the reference, timed in another child, may read a little
    # lower). None until its first KEEP.
    best_speedup: float | None = None
    best_over_baseline: float | None = None  # that KEEP's gain over the problem's baseline
    best_candidate_id: str | None = None
    last_candidate_id: str | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    failures: int = 0
    last_error: str | None = None


@dataclass
class SeedRecord:
    """One of the campaign's seeds as the log shows it."""

    candidate_id: str
    file: str | None  # relative to the problem folder; None in logs from before problems could have several
    decision: str | None = None  # None until decided
    reason: str = ""
    speedup: float | None = None
    over_baseline: float | None = None

    @property
    def passed(self) -> bool:
        return self.decision == "KEEP"


@dataclass(frozen=True)
class BestPoint:
    """A rise of the campaign's best: the candidate at ``position`` raised it to ``speedup``."""

    position: int
    speedup: float
    candidate_id: str
    agent_id: str
    over_baseline: float | None = None

    def reached(self, target: float, against: str) -> bool:
        """Whether this best meets ``--target`` over the reference or (``against="baseline"``) the baseline."""
        figure = self.over_baseline if against == "baseline" else self.speedup
        return figure is not None and figure >= target


def plateau_reached(agents: Iterable[tuple[Phase, int]], plateau: int) -> bool:
    """The plateau STOP rule over (phase, plateau counter) pairs: every agent still searching went ``plateau``
    candidates without a KEEP (none searching: False)."""
    live = [counter for phase, counter in agents if phase not in ENDED]
    return bool(live) and all(counter >= plateau for counter in live)


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
class Spending(UsageTotals):
    """What the campaign has spent: positions, wall time (from event timestamps), and the providers' calls,
    tokens and dollars."""

    budget: int = 0
    proposed: int = 0  # agents' candidates (the seed is not counted)
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
class RunState:
    """A campaign's state, built by folding its events in log order with ``apply``."""

    campaign_id: str = ""
    problem: str = ""
    kernel_type: str = ""
    device: str = ""
    gpus: list[int] = field(default_factory=list)  # the GPUs the guard benchmarks on
    model: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    status: Status = "waiting"
    stop_reason: str | None = None
    agents: dict[str, AgentRecord] = field(default_factory=dict)  # in start order; the seed is not an agent
    decisions: dict[str, int] = field(default_factory=dict)  # the agents' decisions (the seed's is not counted)
    trajectory: list[BestPoint] = field(default_factory=list)  # each rise of the campaign's best
    budget: Spending = field(default_factory=Spending)
    seeds: dict[str, SeedRecord] = field(default_factory=dict)  # every seed, by candidate id, in proposal order
    seed_candidate_id: str | None = None  # the incumbent seed (before any seed passes: the first one proposed)
    seed_speedup: float | None = None
    seed_over_baseline: float | None = None
    events: int = 0  # events applied
    last_seq: int = 0
    _positions: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)  # undecided
    _risers: set[str] = field(default_factory=set, init=False, repr=False, compare=False)  # the trajectory's ids

    # The method that folds each kind of event (by type, not a match over every kind: a busy campaign brings
    # thousands a second). A subclass overrides a method to fold more of the same event.
    _FOLDS: ClassVar[dict[type[Event], str]] = {
        CampaignStarted: "_started", DeviceProfiled: "_profiled", AgentStarted: "_agent_started",
        ProviderCalled: "_provider_called", CandidateProposed: "_proposed", CandidateDecided: "_decided",
        BestImproved: "_best_improved", MemoryRecorded: "_memory_recorded", AgentFailed: "_agent_failed",
        CampaignStopped: "_stopped",
    }

    def __post_init__(self) -> None:
        # bound once: a getattr per event cost the engine's loop a tenth more time in a 10,000-candidate campaign
        self._dispatch: dict[type[Event], Callable[[Any], object]] = {
            kind: getattr(self, name) for kind, name in self._FOLDS.items()}

    def apply(self, event: Event) -> bool:
        """Fold one event in. Returns False (and changes nothing) for an event already applied, so a state fed
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
        fold = self._dispatch.get(type(event))
        if fold is not None:
            fold(event)
        return True

    def apply_all(self, events: Iterable[Event]) -> int:
        """Fold several events; returns how many changed the state."""
        return sum(self.apply(event) for event in events)

    # -- what it says ------------------------------------------------------------------------------------------

    @property
    def best(self) -> BestPoint | None:
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

    def plateaued(self, plateau: int) -> bool:
        """The plateau STOP rule on the agents as the log shows them."""
        return plateau_reached(((a.phase, a.plateau) for a in self.agents.values()), plateau)

    def raised(self, candidate_id: str) -> bool:
        """Whether this candidate's KEEP raised the campaign's best when it was decided."""
        return candidate_id in self._risers

    def _over_seed(self, speedup: float | None) -> float | None:
        return speedup / self.seed_speedup if speedup is not None and self.seed_speedup else None

    # -- folding -----------------------------------------------------------------------------------------------

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

    def _agent(self, agent_id: str, strategy: str = "") -> AgentRecord:
        agent = self.agents.get(agent_id)
        if agent is None:
            agent = self.agents[agent_id] = AgentRecord(agent_id=agent_id, strategy=strategy)
        return agent

    def _agent_started(self, event: AgentStarted) -> None:
        agent = self._agent(event.agent_id, event.strategy)
        agent.strategy, agent.provider = event.strategy, event.provider
        if agent.phase in (Phase.STARTING, Phase.RELAUNCHING, Phase.FAILED, Phase.DONE):
            self._between_steps(agent)

    def _between_steps(self, agent: AgentRecord) -> None:
        """The agent has no candidate in flight: it is asking its provider, unless the budget is spent."""
        if self.status == "stopped" or (self.budget.budget and self.budget.proposed >= self.budget.budget):
            agent.phase = Phase.DONE
        elif agent.plateau >= int(self.config.get("r_draft") or 0) > 0:
            agent.phase = Phase.DRAFTING
        else:
            agent.phase = Phase.PROPOSING

    def _provider_called(self, event: ProviderCalled) -> None:
        usage = event.usage
        self.budget.add(usage)
        if event.agent_id != SEED_AGENT:
            agent = self._agent(event.agent_id)
            agent.tokens += usage.input_tokens + usage.output_tokens
            agent.cost_usd += usage.cost_usd

    def _proposed(self, event: CandidateProposed) -> None:
        self._positions[event.candidate_id] = max(event.position, 0)
        if event.agent_id == SEED_AGENT:
            self.seeds[event.candidate_id] = SeedRecord(event.candidate_id, event.seed_file)
            if self.seed_candidate_id is None:
                self.seed_candidate_id = event.candidate_id
            return
        self.budget.proposed += 1
        agent = self._agent(event.agent_id, event.strategy)
        agent.candidates += 1
        agent.last_candidate_id = event.candidate_id
        agent.phase = Phase.JUDGING
        if self.budget.budget and self.budget.proposed >= self.budget.budget:
            for other in self.agents.values():  # no position is left for agents not already in a step
                if other.phase in BETWEEN_STEPS:
                    other.phase = Phase.DONE

    def _decided(self, event: CandidateDecided) -> bool:
        """Returns whether the decision raised the campaign's best (a subclass's fold may want to know)."""
        position = self._positions.pop(event.candidate_id, 0)
        raised = event.decision == "KEEP" and event.speedup is not None and self._raise_best(
            BestPoint(position, event.speedup, event.candidate_id, event.agent_id, event.speedup_over_baseline))
        if event.agent_id == SEED_AGENT:
            self._seed_decided_as(event)
            return raised
        self.budget.decided += 1
        self.decisions[event.decision] = self.decisions.get(event.decision, 0) + 1
        agent = self._agent(event.agent_id)
        agent.decisions[event.decision] = agent.decisions.get(event.decision, 0) + 1
        if event.decision == "KEEP":
            agent.plateau = 0
            agent.best_speedup, agent.best_candidate_id = event.speedup, event.candidate_id
            agent.best_over_baseline = event.speedup_over_baseline
        elif event.decision in ("ACCEPT", "REVERT"):
            agent.plateau += 1
        if agent.phase not in (Phase.FAILED, Phase.RELAUNCHING, Phase.DONE, Phase.EXHAUSTED):
            if event.decision in ("KEEP", "REVERT"):  # these become a win or a trap: the agent reflects
                agent.phase = Phase.REFLECTING
            else:
                self._between_steps(agent)
        return raised

    def _seed_decided_as(self, event: CandidateDecided) -> None:
        """A seed's decision; a passing seed faster than the incumbent seed (or the first to pass) replaces it."""
        record = self.seeds.setdefault(event.candidate_id, SeedRecord(event.candidate_id, None))
        record.decision, record.reason = event.decision, event.reason
        record.speedup, record.over_baseline = event.speedup, event.speedup_over_baseline
        if event.decision != "KEEP":
            return
        incumbent = self.seeds.get(self.seed_candidate_id or "")
        faster = event.speedup is not None and (self.seed_speedup is None or event.speedup > self.seed_speedup)
        if incumbent is None or incumbent is record or not incumbent.passed or faster:
            self.seed_candidate_id = event.candidate_id
            self.seed_speedup, self.seed_over_baseline = event.speedup, event.speedup_over_baseline

    def _raise_best(self, point: BestPoint) -> bool:
        """The one rule: a KEEP above the campaign's best is the new best (the seed's KEEP starts it)."""
        if self.best is not None and point.speedup <= self.best.speedup:
            return False
        self.trajectory.append(point)
        self._risers.add(point.candidate_id)
        return True

    def _best_improved(self, event: BestImproved) -> None:
        """An announcement: it only restates a KEEP, unless the log holds the announcement without its decision
        (a view attached late)."""
        agent = self._agent(event.agent_id)
        if agent.best_candidate_id is None:
            agent.best_speedup, agent.best_candidate_id = event.speedup, event.candidate_id
            agent.best_over_baseline = event.speedup_over_baseline
        if event.campaign_best:
            self._raise_best(BestPoint(self._positions.get(event.candidate_id, 0), event.speedup, event.candidate_id,
                                       event.agent_id, event.speedup_over_baseline))
        if agent.phase == Phase.REFLECTING:
            self._between_steps(agent)

    def _memory_recorded(self, event: MemoryRecorded) -> None:
        agent = self.agents.get(event.agent_id)
        if agent is not None and agent.phase == Phase.REFLECTING:
            self._between_steps(agent)

    def _agent_failed(self, event: AgentFailed) -> None:
        agent = self._agent(event.agent_id)
        agent.failures += 1
        agent.last_error = event.error
        agent.phase = Phase.RELAUNCHING if event.relaunch else Phase.FAILED

    def _stopped(self, event: CampaignStopped) -> None:
        self.status = "stopped"
        self.stop_reason = event.reason
        for agent in self.agents.values():
            if agent.phase != Phase.FAILED:
                agent.phase = Phase.DONE
