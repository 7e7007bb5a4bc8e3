"""The one provider interface: given an agent's context, return a proposal (and, after a decision,
a reflection for memory)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from arcengine.domain.conclusions import Recall
from arcengine.domain.errors import UserError
from arcengine.domain.events import CandidateDecided, Usage
from arcengine.domain.problem import Workload
from arcengine.domain.skills import Skill


class ProviderError(UserError):
    """The provider could not produce a usable proposal; the agent records a REJECT with this reason."""


class ProviderExhausted(ProviderError):
    """The provider has nothing new to propose (for example, the tuner's space is searched out)."""


class ProviderUnavailable(Exception):
    """The service did not answer (rate limits, server errors, timeouts) after the SDK's retries. No candidate
    position is spent: the agent fails and is relaunched after a pause, up to the campaign's relaunch limit."""


class ProviderFatal(UserError):
    """Retrying cannot help (bad API key, unknown model, no SDK): the campaign stops with this reason."""


@dataclass(frozen=True)
class LeaderboardEntry:
    agent_id: str
    strategy: str
    candidate_id: str
    speedup: float | None
    source: str


@dataclass(frozen=True)
class AgentContext:
    """Everything an agent may show its provider. Held-out workloads never appear here."""

    agent_id: str
    strategy: Skill
    problem_name: str
    problem_description: str
    kernel_type: str
    reference_source: str
    visible_workloads: list[Workload]
    working_source: str
    best_source: str
    best_speedup: float | None
    plateau: int
    drafting: bool
    recall: Recall
    leaderboard: list[LeaderboardEntry] | None
    feedback: str | None
    device: str
    entry: str = "run"  # what a candidate module defines: run, or ModelNew for KernelBench problems
    destination_passing: bool = False  # run(*inputs, *outputs) writes into the outputs the guard passes


@dataclass(frozen=True)
class Proposal:
    source: str
    strategy: str
    rationale: str
    request: str  # the full text sent (or, for the offline tuner, the search state it acted on)
    response: str  # the full text received
    usage: Usage = field(default_factory=Usage)
    params: dict[str, Any] = field(default_factory=dict)  # tunable settings of the proposal, if known
    failure: str | None = None  # no usable candidate in the reply: the position is a REJECT with this reason


@dataclass(frozen=True)
class Reflection:
    summary: str
    reflection: str
    usage: Usage = field(default_factory=Usage)
    request: str = ""  # empty when no model was asked (the offline tuner writes its own conclusions)
    response: str = ""


class Provider(Protocol):
    name: str

    async def propose(self, context: AgentContext) -> Proposal: ...

    async def reflect(
        self, context: AgentContext, proposal: Proposal, decided: CandidateDecided
    ) -> Reflection: ...
