"""arcengine/domain/events.py: the discriminated union round-trips, rejects unknown types, and carries its version."""

from __future__ import annotations

import json
import typing

import pytest
from pydantic import ValidationError

from arcengine.domain import events
from arcengine.domain.events import (
    SCHEMA_VERSION,
    AgentFailed,
    AgentStarted,
    BestImproved,
    CampaignResumed,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    MemoryEvicted,
    MemoryRecorded,
    ProviderCalled,
    Usage,
    WorkloadResult,
    dump_event,
    parse_event,
)

SAMPLES = [
    CampaignStarted(
        seq=1, ts=1.5, campaign_id="c-1", problem="rmsnorm", problem_dir="/p/rmsnorm", kernel_type="normalization",
        config={"agents": 3, "memory_cap": None}, device="cpu", versions={"torch": "2.13.0", "triton": None},
    ),
    DeviceProfiled(seq=2, ts=2.0, device={"name": "H200", "sms": 132}, gpu=1, bandwidth_bytes_per_s=4.0e12,
                   flops_per_s=9.0e14),
    CampaignResumed(seq=3, ts=3.0, after_seq=2, interrupted=["k1"], versions={"arcengine": "0.1.0"},
                    database_damaged="campaign.db.damaged-20261129-101010"),
    AgentStarted(seq=3, agent_id="a1", strategy="memory", provider="offline"),
    ProviderCalled(seq=4, agent_id="a1", candidate_id="k1", provider="offline", request="req → text",
                   response="resp", usage=Usage(input_tokens=10, output_tokens=20, cached_tokens=3, cost_usd=0.25,
                                                latency_s=1.25)),
    CandidateProposed(seq=5, candidate_id="k1", agent_id="a1", position=1, parent_id="k0", strategy="memory",
                      rationale="why", source="def run(x):\n    return x\n", drafting=True),
    CandidateDecided(
        seq=6, candidate_id="k1", agent_id="a1", decision="KEEP", reason="1.100x", correct=True, speedup=1.3,
        held_out_speedup=1.2, vs_incumbent=1.1, guard_seconds=4.5, device={"name": "cpu"}, confirmed=True,
        suspicious="M=4, N=300: 12.00x the reference, past 10x",
        workloads=[
            WorkloadResult(index=0, axes={"M": 4, "N": 300}, held_out=False, correct=True, max_abs_err=0.01,
                           time_us=10.0, ref_time_us=13.0, incumbent_time_us=11.0, speedup=1.3, sol_score=0.6),
            WorkloadResult(index=1, axes={"M": 7, "N": 9}, held_out=True, correct=False, failure="mismatch"),
        ],
    ),
    MemoryRecorded(seq=7, entry_id="e1", kind="win", kernel_type="normalization", owner=None, agent_id="a1",
                   candidate_id="k1", strategy="memory", speedup=1.3, context="ctx", summary="s", reflection="r",
                   params={"BLOCK_N": 512}),
    MemoryEvicted(seq=8, entry_id="e0", reason="weakest win beyond the cap"),
    BestImproved(seq=9, agent_id="a1", candidate_id="k1", speedup=1.3, campaign_best=True),
    AgentFailed(seq=10, agent_id="a2", error="boom", relaunch=False),
    CampaignStopped(seq=11, reason="budget", candidates=24, best_candidate_id="k1", best_speedup=1.3),
]


def _union_members() -> set[type]:
    union, *_ = typing.get_args(events.Event)
    return set(typing.get_args(union))


def test_samples_cover_every_event_type() -> None:
    assert {type(e) for e in SAMPLES} == _union_members()


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_round_trip_keeps_class_and_fields(event: events.Event) -> None:
    line = dump_event(event)
    assert "\n" not in line  # one JSON line per event
    back = parse_event(line)
    assert type(back) is type(event)
    assert back == event
    assert parse_event(line.encode()) == event  # bytes too, as the log reader passes them


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_schema_version_is_carried_in_v(event: events.Event) -> None:
    data = json.loads(dump_event(event))
    assert data["v"] == SCHEMA_VERSION
    assert data["type"] == type(event).model_fields["type"].default


def test_type_tags_are_unique() -> None:
    tags = [cls.model_fields["type"].default for cls in _union_members()]
    assert len(tags) == len(set(tags))


def test_discriminator_rejects_unknown_type() -> None:
    data = json.loads(dump_event(SAMPLES[-1]))
    data["type"] = "campaign_exploded"
    with pytest.raises(ValidationError, match="campaign_exploded"):
        parse_event(json.dumps(data))


def test_discriminator_rejects_missing_type() -> None:
    data = json.loads(dump_event(SAMPLES[-1]))
    del data["type"]
    with pytest.raises(ValidationError):
        parse_event(json.dumps(data))


def test_tag_selects_the_model_and_its_required_fields() -> None:
    # An agent_failed payload tagged as agent_started lacks strategy/provider and must not parse.
    data = json.loads(dump_event(SAMPLES[9]))
    data["type"] = "agent_started"
    with pytest.raises(ValidationError):
        parse_event(json.dumps(data))


def test_bad_decision_value_rejected() -> None:
    data = json.loads(dump_event(next(e for e in SAMPLES if isinstance(e, CandidateDecided))))
    data["decision"] = "MAYBE"
    with pytest.raises(ValidationError):
        parse_event(json.dumps(data))


def test_a_decision_logged_before_suspicious_existed_still_reads() -> None:
    data = json.loads(dump_event(next(e for e in SAMPLES if isinstance(e, CandidateDecided))))
    del data["suspicious"]
    old = parse_event(json.dumps(data))
    assert isinstance(old, CandidateDecided) and old.suspicious is None and old.confirmed is True


def test_events_are_frozen() -> None:
    with pytest.raises(ValidationError):
        next(e for e in SAMPLES if isinstance(e, AgentStarted)).agent_id = "other"  # type: ignore[misc]


def test_defaults_for_seq_ts_and_version() -> None:
    event = MemoryEvicted(entry_id="e", reason="r")
    assert (event.v, event.seq, event.ts) == (SCHEMA_VERSION, 0, 0.0)
