"""Typed campaign events: one discriminated union with a schema version.

Every fact about a campaign is one of these events, appended to ``events.jsonl`` before anyone acts on it;
the store and the display are projections of the same stream.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SCHEMA_VERSION = 1
SEED_AGENT = "seed"  # the agent id under which a campaign's seed kernel is proposed and judged

Decision = Literal["KEEP", "ACCEPT", "REVERT", "REJECT"]
DECISIONS: tuple[Decision, ...] = ("KEEP", "ACCEPT", "REVERT", "REJECT")


class Usage(BaseModel):
    """What one provider call cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0


class WorkloadResult(BaseModel):
    """The guard's finding on one workload for one candidate."""

    index: int
    axes: dict[str, int]
    held_out: bool
    correct: bool
    failure: str | None = None
    max_abs_err: float | None = None
    time_us: float | None = None
    ref_time_us: float | None = None
    incumbent_time_us: float | None = None
    speedup: float | None = None
    sol_score: float | None = None
    reps: int | None = None  # timed rounds
    rel_se: float | None = None  # relative standard error of the candidate's median
    harness: dict[str, float] = Field(default_factory=dict)  # how the timer itself behaved (head start, ...)
    # What a user would otherwise run (see arcengine.guard.child.baselines): the fastest correct route ("reference"
    # where none is declared or correct), its time, and the candidate's gain over it.
    baseline_route: str | None = None
    baseline_time_us: float | None = None
    speedup_over_baseline: float | None = None
    baseline_times_us: dict[str, float] = Field(default_factory=dict)  # every correct route, where timed here
    baseline_failures: dict[str, str] = Field(default_factory=dict)  # the routes that were not correct here


# Empty lists and dicts come from default_factory: pydantic deep-copies a literal [] or {} default for every
# instance, 1.4 us each, 5.5 of the 6.8 us a decision with four of them took to build.
class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    v: int = SCHEMA_VERSION
    seq: int = 0  # assigned by the bus
    ts: float = 0.0  # unix seconds, assigned by the bus


class CampaignStarted(_Event):
    type: Literal["campaign_started"] = "campaign_started"
    campaign_id: str
    problem: str
    problem_dir: str
    kernel_type: str
    config: dict[str, Any]
    device: str
    versions: dict[str, str | None] = Field(default_factory=dict)


class CampaignResumed(_Event):
    """``run --resume``: the campaign goes on after a crash; candidates it left in flight are judged first."""

    type: Literal["campaign_resumed"] = "campaign_resumed"
    after_seq: int  # the last event before the crash
    interrupted: list[str] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    database_damaged: str | None = None  # the damaged database, set aside; the new one was rebuilt from the log


class DeviceProfiled(_Event):
    type: Literal["device_profiled"] = "device_profiled"
    device: dict[str, Any]
    gpu: int | None = None  # which GPU (as the engine numbers them); None on the CPU
    bandwidth_bytes_per_s: float
    flops_per_s: float


class AgentStarted(_Event):
    type: Literal["agent_started"] = "agent_started"
    agent_id: str
    strategy: str
    provider: str
    # The seed candidate it starts from (c0000, or c0000-2... where the problem has several seeds); None in logs
    # written before problems could have several: their one seed, c0000.
    seed_id: str | None = None


class ProviderCalled(_Event):
    """One provider call with its full text, so a campaign replays without network."""

    type: Literal["provider_called"] = "provider_called"
    agent_id: str
    candidate_id: str
    provider: str
    request: str
    response: str
    usage: Usage
    purpose: Literal["propose", "reflect"] = "propose"


class CandidateProposed(_Event):
    type: Literal["candidate_proposed"] = "candidate_proposed"
    candidate_id: str
    agent_id: str
    position: int  # 0 for the seed; 1..budget for agents' candidates
    parent_id: str | None
    strategy: str
    rationale: str
    source: str
    drafting: bool = False
    # A seed's file, relative to the problem folder (None: an agent's candidate, or a seed logged before problems
    # could name several).
    seed_file: str | None = None


class CandidateDecided(_Event):
    type: Literal["candidate_decided"] = "candidate_decided"
    candidate_id: str
    agent_id: str
    decision: Decision
    reason: str
    correct: bool
    speedup: float | None = None  # geometric mean over visible workloads, vs the reference
    held_out_speedup: float | None = None
    speedup_over_baseline: float | None = None  # geometric mean over visible workloads, vs the baseline
    held_out_speedup_over_baseline: float | None = None
    vs_incumbent: float | None = None  # geometric mean of paired incumbent/candidate time ratios
    vs_incumbent_interval: tuple[float, float] | None = None  # its 95% bootstrap interval
    confirmed: bool | None = None  # a second, fresh child agreed (it runs for a KEEP and for a suspicious pass)
    # Why a pass was too good to believe from one child and was checked twice (None: it was not suspicious).
    suspicious: str | None = None
    workloads: list[WorkloadResult] = Field(default_factory=list)
    failure_held_out: bool = False  # the failure is on a held-out workload: agents must not see its details
    warnings: list[str] = Field(default_factory=list)  # what the static gate found suspicious (not unsafe)
    guard_seconds: float = 0.0
    # load, correctness, timing (inside the child) and process start/exit
    guard_phases: dict[str, float] = Field(default_factory=dict)
    device: dict[str, Any] = Field(default_factory=dict)
    gpu: int | None = None  # the GPU that measured it (as the engine numbers them); None on the CPU


class MemoryRecorded(_Event):
    type: Literal["memory_recorded"] = "memory_recorded"
    entry_id: str
    kind: Literal["win", "trap"]
    kernel_type: str
    owner: str | None  # None: shared by all agents; else the agent that owns it
    agent_id: str
    candidate_id: str
    strategy: str
    speedup: float | None
    context: str  # shapes / setting the conclusion applies to
    summary: str
    reflection: str
    params: dict[str, Any] = Field(default_factory=dict)


class MemoryEvicted(_Event):
    type: Literal["memory_evicted"] = "memory_evicted"
    entry_id: str
    reason: str


class BestImproved(_Event):
    """An agent's best changed (its KEEP); ``campaign_best`` says whether it is also the campaign's."""

    type: Literal["best_improved"] = "best_improved"
    agent_id: str
    candidate_id: str
    speedup: float
    campaign_best: bool
    speedup_over_baseline: float | None = None


class AgentFailed(_Event):
    type: Literal["agent_failed"] = "agent_failed"
    agent_id: str
    error: str
    relaunch: bool


class CampaignStopped(_Event):
    type: Literal["campaign_stopped"] = "campaign_stopped"
    reason: str
    candidates: int
    best_candidate_id: str | None
    best_speedup: float | None


Event = Annotated[
    CampaignStarted
    | CampaignResumed
    | DeviceProfiled
    | AgentStarted
    | ProviderCalled
    | CandidateProposed
    | CandidateDecided
    | MemoryRecorded
    | MemoryEvicted
    | BestImproved
    | AgentFailed
    | CampaignStopped,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(line: str | bytes) -> Event:
    """Parse one JSON line of an event log."""
    return EVENT_ADAPTER.validate_json(line)


def dump_event(event: Event) -> str:
    return event.model_dump_json()
