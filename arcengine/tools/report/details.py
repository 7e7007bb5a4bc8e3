"""One run in detail, for the HTML page: the campaign's facts, its leaderboard, every decision as a mark on the
trajectory, and every kept kernel with its source and its diff against the kernel it was kept over.

Gathered from one read and one fold of the log, the same ones the run's summary (model.py) comes from.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from arcengine.domain.events import (
    SEED_AGENT,
    AgentStarted,
    CampaignResumed,
    CandidateDecided,
    CandidateProposed,
    Decision,
    Event,
)
from arcengine.domain.run import LeaderRow, RunState
from arcengine.tools.report.model import (
    RunSummary,
    campaign_started,
    decided_by_position,
    fold,
    load_events,
    summarise,
)


@dataclass(frozen=True)
class Mark:
    """One decided candidate, a mark on the trajectory plot."""

    position: int
    candidate_id: str
    agent_id: str
    decision: Decision
    speedup: float | None  # over the reference; None when it was not correct or never ran (the gate refused it)
    raised: bool  # a KEEP that raised the campaign's best when it was decided


@dataclass(frozen=True)
class KeptKernel:
    """A KEEP's source, and how it differs from the kernel it was kept over."""

    candidate_id: str
    agent_id: str
    position: int
    strategy: str
    rationale: str
    speedup: float | None
    over_baseline: float | None
    raised: bool
    source: str
    # The kernel it beat: its agent's previous KEEP, else the seed the agent started from (a seed has none).
    previous_id: str | None
    diff: tuple[str, ...]  # unified diff lines from previous_id's source to this one; empty without a previous


@dataclass(frozen=True)
class RunDetails:
    """What the HTML page shows of one run, beyond its summary."""

    summary: RunSummary
    kernel_type: str
    model: str
    providers: tuple[str, ...]  # the agents' providers, in start order
    stopped: bool  # False: no stop logged, the campaign is live or was interrupted
    resumed: int  # how many times ``run --resume`` continued it
    started_ts: float | None
    last_ts: float | None  # the last event's time
    budget: int  # candidate positions
    max_tokens: int | None
    max_cost_usd: float | None
    time_limit_s: float | None
    leaderboard: tuple[LeaderRow, ...]
    marks: tuple[Mark, ...]  # in position order
    kept: tuple[KeptKernel, ...]  # in position order

    @property
    def best_over_seed(self) -> float | None:
        """The search's own gain: the best against where it started (on a CPU, where interpreted Triton trails
        native PyTorch by orders of magnitude, the one figure that says the search moved)."""
        best, seed = self.summary.best_speedup, self.summary.seed_speedup
        return best / seed if best is not None and seed else None

    @property
    def elapsed_s(self) -> float | None:
        return self.last_ts - self.started_ts if self.started_ts is not None and self.last_ts is not None else None


def run_details(run_dir: Path) -> RunDetails:
    """Read ``run_dir/events.jsonl`` once, fold it once, and gather the run's summary and details from it."""
    run_dir = Path(run_dir)
    events = load_events(run_dir)
    run = fold(events)
    summary = summarise(run_dir, events, run)
    started = campaign_started(events, run_dir)
    decided = decided_by_position(events)
    spending = run.budget
    return RunDetails(
        summary=summary,
        kernel_type=run.kernel_type,
        model=run.model,
        providers=tuple(dict.fromkeys(a.provider for a in run.agents.values() if a.provider)),
        stopped=run.status == "stopped",
        resumed=sum(isinstance(e, CampaignResumed) for e in events),
        started_ts=started.ts or None,
        last_ts=spending.last_ts,
        budget=spending.budget,
        max_tokens=spending.max_tokens,
        max_cost_usd=spending.max_cost_usd,
        time_limit_s=spending.time_limit_s,
        leaderboard=tuple(run.leaderboard),
        marks=tuple(Mark(position, d.candidate_id, d.agent_id, d.decision, d.speedup, run.raised(d.candidate_id))
                    for position, d in decided),
        kept=kept_kernels(events, decided, run),
    )


def kept_kernels(events: list[Event], decided: list[tuple[int, CandidateDecided]], run: RunState
                 ) -> tuple[KeptKernel, ...]:
    """Every KEEP in position order, each diffed against the kernel it was kept over.

    An agent's KEEP beat its incumbent, which is its previous KEEP or, before its first, the seed it started from;
    an agent's decisions come one at a time, so position order is its own order too.
    """
    proposals = {e.candidate_id: e for e in events if isinstance(e, CandidateProposed)}
    incumbent: dict[str, str] = {}  # agent -> the candidate its next KEEP is measured against
    for event in events:
        if isinstance(event, AgentStarted):
            incumbent.setdefault(event.agent_id, event.seed_id or run.seed_candidate_id or "")
    kept: list[KeptKernel] = []
    for position, decision in decided:
        proposal = proposals.get(decision.candidate_id)
        if decision.decision != "KEEP" or proposal is None:
            continue
        previous_id = None if decision.agent_id == SEED_AGENT else incumbent.get(decision.agent_id)
        previous = proposals.get(previous_id or "")
        kept.append(KeptKernel(
            candidate_id=decision.candidate_id, agent_id=decision.agent_id, position=position,
            strategy=proposal.strategy, rationale=proposal.rationale, speedup=decision.speedup,
            over_baseline=decision.speedup_over_baseline, raised=run.raised(decision.candidate_id),
            source=proposal.source, previous_id=previous.candidate_id if previous else None,
            diff=source_diff(previous.source, proposal.source, previous.candidate_id, decision.candidate_id)
            if previous else ()))
        incumbent[decision.agent_id] = decision.candidate_id
    return tuple(kept)


def source_diff(before: str, after: str, before_name: str, after_name: str) -> tuple[str, ...]:
    """A unified diff with three lines of context, one string per line (no line endings)."""
    return tuple(difflib.unified_diff(before.splitlines(), after.splitlines(), fromfile=before_name,
                                      tofile=after_name, lineterm=""))
