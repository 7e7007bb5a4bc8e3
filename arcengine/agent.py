"""The agent loop: recall, propose (or draft on a plateau), submit to the guard, record the conclusion.

An agent never times or judges its own work; it only reacts to the guard's decision:
KEEP resets the plateau counter and moves its best; ACCEPT moves its working point; REVERT returns the
working point to its best; REJECT changes nothing but the position it used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from arcengine.events import CandidateDecided, CandidateProposed, ProviderCalled
from arcengine.files import FileWriter
from arcengine.guard.baselines import REFERENCE_ROUTE
from arcengine.providers.base import AgentContext, Proposal, Provider, ProviderError, ProviderExhausted
from arcengine.skills import Skill

if TYPE_CHECKING:
    from arcengine.campaign import Campaign


@dataclass
class AgentState:
    best_id: str
    best_source: str
    best_speedup: float | None
    working_id: str
    working_source: str
    plateau: int = 0
    candidates: int = 0
    phase: str = "idle"
    last_feedback: str | None = None
    exhausted: bool = False

    @classmethod
    def from_seed(cls, source: str, speedup: float | None) -> AgentState:
        """Where every agent starts: the seed (c0000) as both its best and its working kernel."""
        return cls(best_id="c0000", best_source=source, best_speedup=speedup, working_id="c0000",
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


class Agent:
    def __init__(self, agent_id: str, strategy: Skill, provider: Provider, workdir: Path,
                 state: AgentState) -> None:
        self.id = agent_id
        self.strategy = strategy
        self.provider = provider
        self.workdir = workdir
        self.state = state
        self.holding_position = False  # a reserved budget position not yet turned into a candidate
        self.interrupted: CandidateProposed | None = None  # proposed before a crash, not yet judged
        self._written: dict[str, str] = {}  # what write_files last put in each file
        workdir.mkdir(parents=True, exist_ok=True)

    def drafting(self, r_draft: int) -> bool:
        return self.state.plateau >= r_draft

    def context(self, campaign: Campaign) -> AgentContext:
        problem = campaign.problem
        return AgentContext(
            agent_id=self.id,
            strategy=self.strategy,
            problem_name=problem.name,
            problem_description=problem.description,
            kernel_type=problem.kernel_type,
            reference_source=problem.reference_source,
            visible_workloads=[w for w in campaign.guard.workloads if not w.held_out],
            working_source=self.state.working_source,
            best_source=self.state.best_source,
            best_speedup=self.state.best_speedup,
            plateau=self.state.plateau,
            drafting=self.drafting(campaign.config.r_draft),
            recall=campaign.memory.recall(problem.kernel_type, self.id),
            leaderboard=campaign.leaderboard(exclude=self.id) if campaign.config.leaderboard else None,
            feedback=self.state.last_feedback,
            device=campaign.guard.device,
        )

    async def run(self, campaign: Campaign) -> None:
        """Propose and submit until the campaign has no position left or the provider is exhausted."""
        if self.interrupted is not None:  # a resumed campaign judges what a crash left in flight first
            await self.finish_interrupted(campaign)
        while campaign.reserve_position(self):
            self.holding_position = True
            try:
                await self.step(campaign)
            finally:
                if self.holding_position:  # the step ended before it took a candidate number
                    campaign.release_position()
                    self.holding_position = False
            if self.state.exhausted:
                return
        self.state.phase = "done"

    async def step(self, campaign: Campaign) -> None:
        context = self.context(campaign)
        self.state.phase = "drafting" if context.drafting else "proposing"
        try:
            proposal = await self.provider.propose(context)
        except ProviderExhausted as error:
            self.state.exhausted = True
            self.state.phase = f"exhausted: {error}"
            return
        except ProviderError as error:
            proposal = Proposal(source="", strategy=self.strategy.name, rationale=str(error),
                                request="", response=str(error), failure=str(error))
        candidate_id, position = campaign.next_candidate()
        self.holding_position = False
        await campaign.bus.publish_all([  # together: a crash cannot keep the reply's cost and lose its candidate
            ProviderCalled(agent_id=self.id, candidate_id=candidate_id, provider=self.provider.name,
                           request=proposal.request, response=proposal.response, usage=proposal.usage),
            CandidateProposed(candidate_id=candidate_id, agent_id=self.id, position=position,
                              parent_id=self.state.working_id, strategy=proposal.strategy,
                              rationale=proposal.rationale, source=proposal.source, drafting=context.drafting),
        ])
        self.state.candidates += 1
        await self._conclude(campaign, context, candidate_id, proposal)

    async def finish_interrupted(self, campaign: Campaign) -> None:
        proposed = self.interrupted
        assert proposed is not None
        proposal = Proposal(source=proposed.source, strategy=proposed.strategy, rationale=proposed.rationale,
                            request="", response="", failure=None if proposed.source else "interrupted by a crash")
        await self._conclude(campaign, self.context(campaign), proposed.candidate_id, proposal)
        self.interrupted = None

    async def _conclude(self, campaign: Campaign, context: AgentContext, candidate_id: str,
                        proposal: Proposal) -> None:
        self.state.phase = "waiting for the guard"
        decided = await self._judge(campaign, candidate_id, proposal)
        self.state.apply(candidate_id, proposal.source, decided)
        self.write_files(campaign.files)
        shown = visible_decision(decided, campaign.held_out_values)  # all that the provider may learn of it
        self.state.last_feedback = feedback(candidate_id, proposal, shown)
        self.state.phase = "reflecting"
        await self._remember(campaign, context, proposal, shown)
        await campaign.after_decision(self, decided)
        self.state.phase = "idle"

    async def _judge(self, campaign: Campaign, candidate_id: str, proposal: Proposal) -> CandidateDecided:
        if proposal.failure is not None:  # the position is spent; the agent hears why in its feedback
            return await campaign.guard.refuse(candidate_id=candidate_id, agent_id=self.id,
                                               reason=f"no usable candidate: {proposal.failure}")
        path, written = campaign.write_candidate(candidate_id, proposal.source)
        return await campaign.guard.submit(
            candidate_id=candidate_id, agent_id=self.id, source=proposal.source, candidate_path=path,
            incumbent_path=campaign.candidate_path(self.state.best_id), written=written)

    def write_files(self, files: FileWriter) -> None:
        """The agent's working and best kernels on disk, for the user to look at (rewritten only on change)."""
        for name, source in (("working.py", self.state.working_source), ("best.py", self.state.best_source)):
            if self._written.get(name) != source:
                files.put(self.workdir / name, source)
                self._written[name] = source

    async def _remember(self, campaign: Campaign, context: AgentContext, proposal: Proposal,
                        decided: CandidateDecided) -> None:
        """KEEP becomes a win and REVERT a trap: the provider's conclusion, within memory's field limits."""
        if decided.decision not in ("KEEP", "REVERT"):
            return
        context = replace(context, feedback=self.state.last_feedback)  # the reflection sees the decision
        reflection = await self.provider.reflect(context, proposal, decided)
        if reflection.request:
            await campaign.bus.publish(ProviderCalled(
                agent_id=self.id, candidate_id=decided.candidate_id, provider=self.provider.name,
                request=reflection.request, response=reflection.response, usage=reflection.usage,
                purpose="reflect"))
        problem = campaign.problem
        await campaign.memory.record(
            campaign.bus.publish_all,
            kind="win" if decided.decision == "KEEP" else "trap",
            kernel_type=problem.kernel_type, agent_id=self.id, candidate_id=decided.candidate_id,
            strategy=proposal.strategy, speedup=decided.speedup,
            context=f"{problem.name} on {campaign.guard.device}, {len(context.visible_workloads)} visible shapes",
            summary=reflection.summary, reflection=reflection.reflection, params=proposal.params)


# The reason shown for a decision that concerns a held-out workload: pass or fail, nothing else (its shape,
# times, roofline floor or error would describe it).
HELD_OUT_FAILURE = "it failed on a held-out workload (details withheld)"
WITHHELD = "the guard's message is withheld (it may describe a shape you are not shown)"
# How the guard's child labels a held-out workload in its messages (arcengine/guard/child.py).
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
            base = (f"; baseline {w.baseline_route} {w.baseline_time_us:.1f} us ({w.speedup_over_baseline:.2f}x)"
                    if w.baseline_time_us and w.speedup_over_baseline and w.baseline_route != REFERENCE_ROUTE else "")
            lines.append(f"  {axes}: {w.time_us:.1f} us vs reference {w.ref_time_us or 0:.1f} us "
                         f"({w.speedup or 0:.2f}x{sol}){base}")
        elif w.failure:
            lines.append(f"  {axes}: {w.failure}")
    return "\n".join(lines)
