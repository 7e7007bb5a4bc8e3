"""What a campaign reports when it ends: the typed contract of ``Campaign.run()`` and of ``arcengine run --json``
(one JSON object on stdout, these fields)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Contract(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BestKernel(Contract):
    """The campaign's best (arcengine.domain.run's rule) and its gains."""

    speedup: float  # over the reference
    speedup_over_baseline: float | None  # over the problem's baseline (None: not measured)
    agent: str
    candidate: str


class SeedKernel(Contract):
    """One of the problem's seeds, as the guard judged it before the agents started."""

    file: str | None  # relative to the problem folder (None: a run logged before problems could name several)
    candidate: str
    decision: str | None  # KEEP: it passed (None: not decided)
    speedup: float | None  # over the reference
    speedup_over_baseline: float | None
    incumbent: bool  # the passing seed of the highest speedup: seed_speedup is its, LLM agents start from it


class AgentTotals(Contract):
    id: str
    strategy: str
    candidates: int
    best_speedup: float | None  # its latest KEEP's (None: it has none)
    plateau: int


class Spending(Contract):
    """What the providers' calls cost (tokens as the providers reported them)."""

    calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float
    latency_s: float


class CampaignSummary(Contract):
    run_dir: str
    problem: str
    problem_dir: str
    device: str  # "cuda" or "cpu"
    gpus: list[int]  # the GPUs the guard benchmarked on (empty on the CPU)
    candidates: int  # budget positions used (a rejected candidate uses one too)
    decisions: dict[str, int]  # every decision named, the seed's left out
    best: BestKernel | None
    seed_speedup: float | None  # the incumbent seed's
    best_over_seed: float | None
    stop_reason: str | None
    provider: str
    usage: Spending
    cost_known: bool  # False: the model has no price, cost_usd counts nothing
    elapsed_s: float
    agents: list[AgentTotals]
    seeds: list[SeedKernel] = []  # every seed, in the order problem.toml lists them


class ReplaySummary(CampaignSummary):
    """``replay --json``: the replay's own summary, the run it replayed and where it first differed (None: it
    reproduced every agent's decisions)."""

    replayed: str
    divergence: str | None
