"""The agent loop: recall, propose (or draft on a plateau), submit to the guard, record the conclusion.

An agent never times or judges its own work; it only reacts to the guard's decision:
KEEP resets the plateau counter and moves its best; ACCEPT moves its working point; REVERT returns the
working point to its best; REJECT changes nothing but the position it used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from arcengine.domain.events import CandidateDecided, CandidateProposed, Event, ProviderCalled
from arcengine.domain.figures import times
from arcengine.domain.run import Phase
from arcengine.domain.skills import Skill
from arcengine.guard.child.baselines import REFERENCE_ROUTE
from arcengine.providers.base import AgentContext, Proposal, Provider, ProviderError, ProviderExhausted, Reflection


@dataclass
class AgentState:
    best_id: str
    best_source: str
    best_speedup: float | None
    working_id: str
    working_source: str
    plateau: int = 0
    candidates: int = 0
    phase: Phase = Phase.STARTING
    last_feedback: str | None = None
    exhausted_because: str | None = None  # what its provider said when it had nothing left to propose

    @classmethod
    def from_seed(cls, source: str, speedup: float | None, seed_id: str = "c0000") -> AgentState:
        """Where an agent starts: a seed (c0000, the problem's first) as both its best and its working kernel."""
        return cls(best_id=seed_id, best_source=source, best_speedup=speedup, working_id=seed_id,
                   working_source=source)

    def apply(self, candidate_id: str, source: str, decided: CandidateDecided) -> None:
        """Move the working point and the best as the guard decided (REJECT changes neither)."""
        if decided.decision == "KEEP":
            self.best_id, self.best_source, self.best_speedup = candidate_id, source, decided.speedup
            self.working_id, self.working_source = candidate_id, source
            self.plateau = 0
        elif decided.decision == "ACCEPT":
            self.working_id, self.working_source = candidate_id, source
            self.plateau += 1
        elif decided.decision == "REVERT":
            self.working_id, self.working_source = self.best_id, self.best_source
            self.plateau += 1


class AgentHost(Protocol):
    """What an agent needs from the campaign it works in, and all it may touch (engine/campaign.py implements it;
    a test hands in its own): budget positions, its next proposal's context, the guard's judgement, the bus,
    memory and the files a user looks at."""

    @property
    def held_out_values(self) -> set[int]:
        """Axis values only held-out workloads have: the agent's feedback never names them."""
        ...

    def reserve_position(self, agent: Agent) -> bool:
        """A budget position for the agent's next candidate, or False: the campaign is done with it."""
        ...

    def release_position(self) -> None:
        """Give back a reserved position that brought no candidate."""
        ...

    def next_candidate(self) -> tuple[str, int]:
        """Turn the reserved position into a numbered candidate: its id and position."""
        ...

    def context(self, agent: Agent) -> AgentContext:
        """What the agent's provider is shown for its next proposal."""
        ...

    async def publish(self, events: list[Event]) -> None:
        """Record events together (a crash keeps all of them or none)."""
        ...

    async def judge(self, agent: Agent, candidate_id: str, proposal: Proposal) -> CandidateDecided:
        """The guard's decision on a proposal (a failed proposal is refused without running anything)."""
        ...

    async def remember(self, agent: Agent, proposal: Proposal, decided: CandidateDecided,
                       reflection: Reflection) -> None:
        """Keep a KEEP as a win or a REVERT as a trap in memory, with the provider's conclusion."""
        ...

    def put_file(self, path: Path, source: str) -> None:
        """Write a file for the user to look at (queued: the agent does not wait for the disk)."""
        ...

    async def after_decision(self, agent: Agent, decided: CandidateDecided) -> None:
        """The campaign's part once the agent has moved: the leaderboard, the best, the STOP rules."""
        ...


class Agent:
    def __init__(self, agent_id: str, strategy: Skill, provider: Provider, workdir: Path,
                 state: AgentState, seed_id: str = "c0000") -> None:
        self.id = agent_id
        self.strategy = strategy
        self.provider = provider
        self.workdir = workdir
        self.state = state
        self.seed_id = seed_id  # the seed it started from
        self.holding_position = False  # a reserved budget position not yet turned into a candidate
        self.interrupted: CandidateProposed | None = None  # proposed before a crash, not yet judged
        self._written: dict[str, str] = {}  # what write_files last put in each file
        workdir.mkdir(parents=True, exist_ok=True)

    async def run(self, host: AgentHost) -> None:
        """Propose and submit until the campaign has no position left or the provider is exhausted."""
        if self.interrupted is not None:  # a resumed campaign judges what a crash left in flight first
            await self.finish_interrupted(host)
        while host.reserve_position(self):
            self.holding_position = True
            try:
                await self.step(host)
            finally:
                if self.holding_position:  # the step ended before it took a candidate number
                    host.release_position()
                    self.holding_position = False
            if self.state.phase == Phase.EXHAUSTED:
                return
        self.state.phase = Phase.DONE

    async def step(self, host: AgentHost) -> None:
        context = host.context(self)
        self.state.phase = Phase.DRAFTING if context.drafting else Phase.PROPOSING
        try:
            proposal = await self.provider.propose(context)
        except ProviderExhausted as exhausted:
            self.state.phase = Phase.EXHAUSTED
            self.state.exhausted_because = str(exhausted)
            return
        except ProviderError as error:
            proposal = Proposal(source="", strategy=self.strategy.name, rationale=str(error),
                                request="", response=str(error), failure=str(error))
        candidate_id, position = host.next_candidate()
        self.holding_position = False
        await host.publish([  # together: a crash cannot keep the reply's cost and lose its candidate
            ProviderCalled(agent_id=self.id, candidate_id=candidate_id, provider=self.provider.name,
                           request=proposal.request, response=proposal.response, usage=proposal.usage),
            CandidateProposed(candidate_id=candidate_id, agent_id=self.id, position=position,
                              parent_id=self.state.working_id, strategy=proposal.strategy,
                              rationale=proposal.rationale, source=proposal.source, drafting=context.drafting),
        ])
        self.state.candidates += 1
        await self._conclude(host, context, candidate_id, proposal)

    async def finish_interrupted(self, host: AgentHost) -> None:
        proposed = self.interrupted
        assert proposed is not None
        proposal = Proposal(source=proposed.source, strategy=proposed.strategy, rationale=proposed.rationale,
                            request="", response="", failure=None if proposed.source else "interrupted by a crash")
        await self._conclude(host, host.context(self), proposed.candidate_id, proposal)
        self.interrupted = None

    async def _conclude(self, host: AgentHost, context: AgentContext, candidate_id: str,
                        proposal: Proposal) -> None:
        self.state.phase = Phase.JUDGING
        decided = await host.judge(self, candidate_id, proposal)
        self.state.apply(candidate_id, proposal.source, decided)
        self.write_files(host)
        shown = visible_decision(decided, host.held_out_values)  # all that the provider may learn of it
        self.state.last_feedback = feedback(candidate_id, proposal, shown)
        self.state.phase = Phase.REFLECTING
        await self._reflect(host, context, proposal, shown)
        await host.after_decision(self, decided)
        self.state.phase = Phase.PROPOSING  # between steps: its next one asks the provider

    def write_files(self, host: AgentHost) -> None:
        """The agent's working and best kernels on disk, for the user to look at (rewritten only on change)."""
        for name, source in (("working.py", self.state.working_source), ("best.py", self.state.best_source)):
            if self._written.get(name) != source:
                host.put_file(self.workdir / name, source)
                self._written[name] = source

    async def _reflect(self, host: AgentHost, context: AgentContext, proposal: Proposal,
                       decided: CandidateDecided) -> None:
        """KEEP becomes a win and REVERT a trap: the provider's conclusion, kept by the host's memory."""
        if decided.decision not in ("KEEP", "REVERT"):
            return
        context = replace(context, feedback=self.state.last_feedback)  # the reflection sees the decision
        reflection = await self.provider.reflect(context, proposal, decided)
        if reflection.request:
            await host.publish([ProviderCalled(
                agent_id=self.id, candidate_id=decided.candidate_id, provider=self.provider.name,
                request=reflection.request, response=reflection.response, usage=reflection.usage,
                purpose="reflect")])
        await host.remember(self, proposal, decided, reflection)


# The reason shown for a decision that concerns a held-out workload: pass or fail, nothing else (its shape,
# times, roofline floor or error would describe it).
HELD_OUT_FAILURE = "it failed on a held-out workload (details withheld)"
WITHHELD = "the guard's message is withheld (it may describe a shape you are not shown)"
# How the guard's child labels a held-out workload in its messages (arcengine/guard/child/judge.py).
HELD_OUT_LABEL = "held-out workload"
_NUMBER = re.compile(r"(?<![A-Za-z_\d])\d+")  # a number, not a name's digits ("float32" is not 32)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def _names_hidden(text: str, hidden_values: set[int]) -> bool:
    """Whether free text (a crash's last line, an exception message) writes a value only held-out shapes have."""
    return any(int(n) in hidden_values for n in _NUMBER.findall(_THOUSANDS.sub("", text)))


def visible_decision(decided: CandidateDecided, hidden_values: set[int]) -> CandidateDecided:
    """The decision as an agent and its provider may see it, built from visible data only: held-out workloads
    and their speedup dropped, and a reason about a held-out workload replaced whole, never masked number by
    number (a masked number inside a figure, "<held-out>.4 us", tells which value is held out)."""
    concerns_held_out = (decided.failure_held_out or any(w.held_out and not w.correct for w in decided.workloads)
                         or HELD_OUT_LABEL in decided.reason)
    if concerns_held_out and decided.decision in ("KEEP", "ACCEPT"):  # a pass: its visible figure, no more
        ratio = f": {decided.vs_incumbent:.3f}x the incumbent" if decided.vs_incumbent else ""
        reason = f"correct on every workload{ratio} ({HELD_OUT_LABEL} details withheld)"
    elif concerns_held_out:
        reason = HELD_OUT_FAILURE
    elif _names_hidden(decided.reason, hidden_values):  # text the candidate can steer (stderr) may quote a shape
        reason = WITHHELD
    else:
        reason = decided.reason
    workloads = [w.model_copy(update={"failure": WITHHELD}) if w.failure and _names_hidden(w.failure, hidden_values)
                 else w for w in decided.workloads if not w.held_out]
    return decided.model_copy(update={"reason": reason, "workloads": workloads, "held_out_speedup": None,
                                      "held_out_speedup_over_baseline": None})


def feedback(candidate_id: str, proposal: Proposal, shown: CandidateDecided) -> str:
    """What the agent is told about its last candidate, from ``visible_decision``'s view of the decision."""
    lines = [f"Your last candidate {candidate_id} ({proposal.rationale[:200]}): {shown.decision}: {shown.reason}."]
    for w in shown.workloads:
        axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
        if w.time_us is not None:
            sol = f", SOL {w.sol_score:.2f}" if w.sol_score is not None else ""
            base = (f"; baseline {w.baseline_route} {w.baseline_time_us:.1f} us ({times(w.speedup_over_baseline)})"
                    if w.baseline_time_us and w.speedup_over_baseline and w.baseline_route != REFERENCE_ROUTE else "")
            lines.append(f"  {axes}: {w.time_us:.1f} us vs reference {w.ref_time_us or 0:.1f} us "
                         f"({times(w.speedup or 0)}{sol}){base}")
        elif w.failure:
            lines.append(f"  {axes}: {w.failure}")
    return "\n".join(lines)
