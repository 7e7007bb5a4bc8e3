"""What a run folder's event log says about a campaign that stopped without finishing (killed, crashed, power
lost): what ``run --resume`` needs beyond the run's fold (arcengine.domain.run): each agent's working and best
kernels, what was in flight, the KEEPs a crash left unannounced. The log is the source of truth; a last line cut
by the crash is ignored, damage anywhere else is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from arcengine.domain.errors import UserError
from arcengine.domain.events import (
    SEED_AGENT,
    AgentStarted,
    BestImproved,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    Event,
)
from arcengine.engine.agent import AgentState
from arcengine.engine.seeds import FIRST_SEED_ID
from arcengine.recording.eventlog import EventLogError, read_events


class HistoryError(UserError):
    """The run folder cannot be resumed; the message says why and what to do."""


@dataclass
class AgentHistory:
    strategy: str
    state: AgentState
    seed_id: str  # the seed it started from
    interrupted: CandidateProposed | None = None  # proposed, never decided: judged first on resume


@dataclass
class History:
    run_dir: Path
    started: CampaignStarted
    events: list[Event]
    seeds_proposed: dict[str, CandidateProposed] = field(default_factory=dict)  # the seeds, by candidate id
    seeds_decided: dict[str, CandidateDecided] = field(default_factory=dict)
    agents: dict[str, AgentHistory] = field(default_factory=dict)
    positions: int = 0  # candidate positions used (the highest position proposed)
    unannounced_keeps: list[CandidateDecided] = field(default_factory=list)  # a crash came before BestImproved
    sources: dict[str, str] = field(default_factory=dict)  # every candidate's source, by id

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq

    @property
    def elapsed_s(self) -> float:
        """Wall time the campaign already ran (its time limit counts it)."""
        return self.events[-1].ts - self.started.ts


def load_history(run_dir: Path) -> History:
    log = run_dir / "events.jsonl"
    if not log.is_file():
        raise HistoryError(f"{run_dir} is not a run folder (no events.jsonl); give the folder a campaign wrote")
    try:
        events = list(read_events(log))
    except EventLogError as error:
        raise HistoryError(f"cannot resume: {error}; the log is damaged before its last line") from None
    if not events or not isinstance(events[0], CampaignStarted):
        raise HistoryError(f"cannot resume: {log} does not begin with a campaign_started event")
    stopped = next((e for e in events if isinstance(e, CampaignStopped)), None)
    if stopped is not None:
        raise HistoryError(f"{run_dir.name} already finished ({stopped.reason}); start a new campaign instead")
    history = History(run_dir=run_dir, started=events[0], events=events)
    _fold(history)
    return history


def _fold(history: History) -> None:
    proposed: dict[str, CandidateProposed] = {}
    announced: set[str] = set()
    keeps: list[CandidateDecided] = []
    for event in history.events:
        match event:
            case AgentStarted() if event.agent_id not in history.agents:
                # A log from before problems could have several seeds names none: its one seed.
                seed_id = event.seed_id or next(iter(history.seeds_proposed), FIRST_SEED_ID)
                history.agents[event.agent_id] = AgentHistory(event.strategy, _initial_state(history, seed_id),
                                                              seed_id)
            case CandidateProposed() if event.agent_id == SEED_AGENT:
                history.seeds_proposed[event.candidate_id] = event
                history.sources[event.candidate_id] = event.source
            case CandidateProposed():
                proposed[event.candidate_id] = event
                history.sources[event.candidate_id] = event.source
                history.positions = max(history.positions, event.position)
                agent = history.agents.get(event.agent_id)
                if agent is not None:
                    agent.state.candidates += 1
            case CandidateDecided() if event.agent_id == SEED_AGENT:
                history.seeds_decided[event.candidate_id] = event  # agents start after every seed's, from one
            case CandidateDecided() if event.candidate_id in proposed:
                source = proposed.pop(event.candidate_id).source
                agent = history.agents.get(event.agent_id)
                if agent is not None:
                    agent.state.apply(event.candidate_id, source, event)
                if event.decision == "KEEP":
                    keeps.append(event)
            case BestImproved():
                announced.add(event.candidate_id)
    for event in proposed.values():
        if event.agent_id in history.agents:
            history.agents[event.agent_id].interrupted = event
    history.unannounced_keeps = [e for e in keeps if e.candidate_id not in announced]


def _initial_state(history: History, seed_id: str) -> AgentState:
    """An agent as it started: from the seed ``seed_id``."""
    proposed, decided = history.seeds_proposed.get(seed_id), history.seeds_decided.get(seed_id)
    return AgentState.from_seed(proposed.source if proposed else "", decided.speedup if decided else None, seed_id)
