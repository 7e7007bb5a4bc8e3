"""A recorded campaign, read from its event log: per agent, each candidate it proposed with the guard's decision,
and the conclusions it gave memory. The replay provider answers from it and ``arcengine replay`` compares runs
by it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from arcengine.domain.errors import UserError
from arcengine.domain.events import (
    SEED_AGENT,
    CampaignStarted,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    MemoryRecorded,
)
from arcengine.recording.eventlog import EventLogError, read_events


class ReplayError(UserError):
    """The run cannot be replayed (no event log, no campaign in it)."""


@dataclass(frozen=True)
class Step:
    """One recorded candidate of an agent: what it proposed and what the guard decided."""

    proposed: CandidateProposed
    decided: CandidateDecided


@dataclass
class Recording:
    started: CampaignStarted
    profiled: list[DeviceProfiled]  # one per device the guard benchmarked on
    steps: dict[str, list[Step]] = field(default_factory=lambda: defaultdict(list))  # per agent, in order
    conclusions: dict[str, list[MemoryRecorded]] = field(default_factory=lambda: defaultdict(list))  # per agent

    @cached_property
    def labels(self) -> dict[str, str]:
        """Each candidate as "agent #n" (candidate ids differ between runs; an agent's own order does not)."""
        return {step.proposed.candidate_id: f"{agent} #{index + 1}"
                for agent, steps in self.steps.items() for index, step in enumerate(steps)}

    def parent(self, step: Step) -> str:
        return self.labels.get(str(step.proposed.parent_id), str(step.proposed.parent_id))

    def memory(self, agent: str) -> list[tuple[str, str]]:
        return [(e.kind, e.summary) for e in self.conclusions.get(agent, [])]

    def fingerprint(self, agent: str, index: int) -> tuple[object, ...]:
        """What must come out the same for an agent's n-th candidate."""
        step = self.steps[agent][index]
        return (step.proposed.source, self.parent(step), step.proposed.drafting, step.decided.decision)

    @property
    def device(self) -> str:
        return str(self.profiled[0].device.get("kind", "cpu")) if self.profiled else "cpu"


def read_recording(run_dir: Path, until_seq: int | None = None) -> Recording:
    """The recorded campaign, up to event ``until_seq`` (a last line cut by a crash is skipped)."""
    log = run_dir / "events.jsonl"
    if not log.is_file():
        raise ReplayError(f"no event log at {log}")
    started: CampaignStarted | None = None
    profiled: list[DeviceProfiled] = []
    proposed: dict[str, CandidateProposed] = {}
    steps: dict[str, list[Step]] = defaultdict(list)
    conclusions: dict[str, list[MemoryRecorded]] = defaultdict(list)
    try:
        for event in read_events(log):
            if until_seq is not None and event.seq > until_seq:
                break
            match event:
                case CampaignStarted():
                    started = event
                case DeviceProfiled():
                    profiled.append(event)
                case CandidateProposed():
                    proposed[event.candidate_id] = event
                case CandidateDecided() if event.candidate_id in proposed:
                    steps[event.agent_id].append(Step(proposed.pop(event.candidate_id), event))
                case MemoryRecorded():
                    conclusions[event.agent_id].append(event)
    except EventLogError as error:
        raise ReplayError(str(error)) from None
    if started is None:
        raise ReplayError(f"{log} holds no campaign_started event")
    if SEED_AGENT in steps:  # the seeds are judged side by side and decided in any order: take them as proposed
        steps[SEED_AGENT].sort(key=lambda step: step.proposed.seq)
    # A conclusion follows its decision; one past the last recorded decision belongs to a cut-off step.
    last = max((s.decided.seq for agent in steps.values() for s in agent), default=0)
    for agent, entries in conclusions.items():
        conclusions[agent] = [e for e in entries if e.seq <= last or until_seq is None]
    return Recording(started, profiled, steps, conclusions)
