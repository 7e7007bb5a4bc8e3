"""arcengine/recording/store.py: migrations, WAL, and the projection of each event into its table."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from arcengine.domain.events import (
    AgentFailed,
    AgentStarted,
    BestImproved,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    MemoryEvicted,
    MemoryRecorded,
    WorkloadResult,
)
from arcengine.recording.bus import RecordingError
from arcengine.recording.db_worker import MIGRATIONS
from arcengine.recording.store import Store

TABLES = {"campaign", "agents", "candidates", "decisions", "measurements", "memory", "archives", "devices"}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(tmp_path / "campaign.db")
    try:
        yield s
    finally:
        await s.close()


def _proposed(candidate_id: str, seq: int, agent_id: str = "a1", position: int = 1) -> CandidateProposed:
    return CandidateProposed(seq=seq, candidate_id=candidate_id, agent_id=agent_id, position=position,
                             parent_id="k0" if position else None, strategy="memory", rationale=f"why {candidate_id}",
                             source=f"# {candidate_id}\ndef run(x):\n    return x\n", drafting=position == 2)


def _decided(candidate_id: str, decision: str, seq: int, workloads: list[WorkloadResult] | None = None):
    return CandidateDecided(seq=seq, candidate_id=candidate_id, agent_id="a1", decision=decision, reason="r",
                            correct=decision in ("KEEP", "ACCEPT"), speedup=1.5 if decision == "KEEP" else None,
                            held_out_speedup=1.4 if decision == "KEEP" else None, vs_incumbent=1.1,
                            guard_seconds=2.5, device={"name": "cpu"}, workloads=workloads or [])


async def test_fresh_db_is_migrated_and_in_wal_mode(store: Store) -> None:
    (version,) = (await store.rows("PRAGMA user_version"))[0].values()
    assert version == len(MIGRATIONS)
    (mode,) = (await store.rows("PRAGMA journal_mode"))[0].values()
    assert mode.lower() == "wal"
    names = {r["name"] for r in await store.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names >= TABLES


async def test_reopening_is_idempotent_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "campaign.db"
    first = await Store.open(path)
    await first.apply(AgentStarted(seq=1, ts=3.0, agent_id="a1", strategy="memory", provider="offline"))
    await first.close()
    second = await Store.open(path)  # must not re-run migration 0 (CREATE TABLE would fail)
    try:
        (version,) = (await second.rows("PRAGMA user_version"))[0].values()
        assert version == len(MIGRATIONS)
        assert await second.rows("SELECT id, strategy, provider, started FROM agents") == [
            {"id": "a1", "strategy": "memory", "provider": "offline", "started": 3.0}
        ]
    finally:
        await second.close()
    # Also readable by plain sqlite3 after close (committed, not only in an open transaction).
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM agents").fetchone() == (1,)


async def test_campaign_started_and_stopped(store: Store) -> None:
    await store.apply(CampaignStarted(seq=1, ts=100.0, campaign_id="c1", problem="rmsnorm", problem_dir="/p",
                                      kernel_type="normalization", config={"agents": 3, "memory_cap": None},
                                      device="cpu"))
    rows = await store.rows("SELECT * FROM campaign")
    assert len(rows) == 1
    row = rows[0]
    assert (row["id"], row["problem"], row["kernel_type"], row["device"], row["started"]) == (
        "c1", "rmsnorm", "normalization", "cpu", 100.0)
    assert json.loads(row["config"]) == {"agents": 3, "memory_cap": None}
    assert row["stopped"] is None and row["stop_reason"] is None

    await store.apply(CampaignStopped(seq=9, ts=200.0, reason="budget spent", candidates=4,
                                      best_candidate_id=None, best_speedup=None))
    row = (await store.rows("SELECT stopped, stop_reason FROM campaign"))[0]
    assert row == {"stopped": 200.0, "stop_reason": "budget spent"}


async def test_agent_started_is_recorded_once(store: Store) -> None:
    await store.apply(AgentStarted(seq=1, ts=1.0, agent_id="a1", strategy="memory", provider="offline"))
    await store.apply(AgentStarted(seq=2, ts=2.0, agent_id="a1", strategy="memory", provider="offline"))  # relaunch
    await store.apply(AgentStarted(seq=3, ts=3.0, agent_id="a2", strategy="fusion", provider="offline"))
    rows = await store.rows("SELECT id, strategy, started FROM agents ORDER BY id")
    assert rows == [{"id": "a1", "strategy": "memory", "started": 1.0},
                    {"id": "a2", "strategy": "fusion", "started": 3.0}]


async def test_candidate_proposed(store: Store) -> None:
    await store.apply(_proposed("k0", seq=4, position=0))
    await store.apply(_proposed("k2", seq=5, position=2))
    rows = await store.rows("SELECT * FROM candidates ORDER BY seq")
    assert [(r["id"], r["position"], r["parent_id"], r["drafting"], r["seq"]) for r in rows] == [
        ("k0", 0, None, 0, 4), ("k2", 2, "k0", 1, 5)]
    assert rows[1]["source"] == "# k2\ndef run(x):\n    return x\n"
    assert rows[1]["rationale"] == "why k2" and rows[1]["agent_id"] == "a1" and rows[1]["strategy"] == "memory"


async def test_candidate_decided_fills_decisions_and_measurements(store: Store) -> None:
    await store.apply(_proposed("k1", seq=1))
    workloads = [
        WorkloadResult(index=0, axes={"M": 4, "N": 300}, held_out=False, correct=True, max_abs_err=0.001,
                       time_us=10.0, ref_time_us=15.0, incumbent_time_us=11.0, speedup=1.5, sol_score=0.7),
        WorkloadResult(index=1, axes={"M": 9, "N": 96}, held_out=True, correct=True, time_us=5.0,
                       ref_time_us=7.0, speedup=1.4),
    ]
    await store.apply(_decided("k1", "KEEP", seq=2, workloads=workloads))
    decision = (await store.rows("SELECT * FROM decisions"))[0]
    assert decision["candidate_id"] == "k1" and decision["decision"] == "KEEP" and decision["correct"] == 1
    assert (decision["speedup"], decision["held_out_speedup"], decision["vs_incumbent"]) == (1.5, 1.4, 1.1)
    assert decision["guard_seconds"] == 2.5 and json.loads(decision["device"]) == {"name": "cpu"}
    assert decision["seq"] == 2
    rows = await store.rows("SELECT * FROM measurements WHERE candidate_id = ? ORDER BY workload", ("k1",))
    assert [(r["workload"], json.loads(r["axes"]), r["held_out"], r["time_us"], r["speedup"]) for r in rows] == [
        (0, {"M": 4, "N": 300}, 0, 10.0, 1.5), (1, {"M": 9, "N": 96}, 1, 5.0, 1.4)]
    assert rows[0]["incumbent_time_us"] == 11.0 and rows[0]["sol_score"] == 0.7
    assert rows[1]["incumbent_time_us"] is None and rows[1]["sol_score"] is None


async def test_failed_workload_records_the_failure(store: Store) -> None:
    await store.apply(_proposed("k1", seq=1))
    await store.apply(_decided("k1", "REVERT", seq=2, workloads=[
        WorkloadResult(index=0, axes={"M": 1}, held_out=False, correct=False, failure="mismatch at [0, 3]")]))
    row = (await store.rows("SELECT correct, failure, time_us FROM measurements"))[0]
    assert row == {"correct": 0, "failure": "mismatch at [0, 3]", "time_us": None}


async def test_decision_for_unknown_candidate_is_refused(store: Store) -> None:
    # foreign_keys=ON: a decision must follow its proposal.
    await store.apply(_decided("ghost", "KEEP", seq=1))
    with pytest.raises(sqlite3.IntegrityError):
        await store.flush()
    assert await store.rows("SELECT * FROM decisions") == []


async def test_memory_recorded_then_evicted(store: Store) -> None:
    for i, kind in enumerate(("win", "trap")):
        await store.apply(MemoryRecorded(seq=10 + i, entry_id=f"e{i}", kind=kind, kernel_type="normalization",
                                         owner="a1" if kind == "trap" else None, agent_id="a1",
                                         candidate_id=f"k{i}", strategy="memory",
                                         speedup=1.2 if kind == "win" else None, context="ctx", summary="sum",
                                         reflection="ref", params={"BLOCK_N": 512}))
    rows = await store.rows("SELECT * FROM memory ORDER BY seq")
    assert [(r["id"], r["kind"], r["owner"], r["speedup"], r["seq"]) for r in rows] == [
        ("e0", "win", None, 1.2, 10), ("e1", "trap", "a1", None, 11)]
    assert json.loads(rows[0]["params"]) == {"BLOCK_N": 512}
    await store.apply(MemoryEvicted(seq=12, entry_id="e0", reason="weakest"))
    assert [r["id"] for r in await store.rows("SELECT id FROM memory")] == ["e1"]


async def test_best_improved_archives_per_agent_and_candidate(store: Store) -> None:
    await store.apply(_proposed("k1", seq=1))
    await store.apply(_proposed("k2", seq=2))
    await store.apply(BestImproved(seq=3, agent_id="a1", candidate_id="k1", speedup=1.2, campaign_best=True))
    await store.apply(BestImproved(seq=4, agent_id="a1", candidate_id="k2", speedup=1.3, campaign_best=False))
    rows = await store.rows("SELECT candidate_id, speedup, campaign_best, seq FROM archives ORDER BY seq")
    assert rows == [{"candidate_id": "k1", "speedup": 1.2, "campaign_best": 1, "seq": 3},
                    {"candidate_id": "k2", "speedup": 1.3, "campaign_best": 0, "seq": 4}]


async def test_events_without_a_table_are_ignored(store: Store) -> None:
    await store.apply(AgentFailed(seq=1, agent_id="a1", error="boom", relaunch=True))
    for table in TABLES:
        assert await store.rows(f"SELECT * FROM {table}") == []


async def test_decision_counts(store: Store) -> None:
    assert await store.decision_counts() == {}
    decisions = ["KEEP", "REVERT", "REVERT", "ACCEPT", "REJECT", "REVERT"]
    for i, decision in enumerate(decisions):
        await store.apply(_proposed(f"k{i}", seq=2 * i + 1))
        await store.apply(_decided(f"k{i}", decision, seq=2 * i + 2))
    assert await store.decision_counts() == {"KEEP": 1, "REVERT": 3, "ACCEPT": 1, "REJECT": 1}


async def test_rows_takes_parameters(store: Store) -> None:
    await store.apply(AgentStarted(seq=1, agent_id="a1", strategy="memory", provider="offline"))
    await store.apply(AgentStarted(seq=2, agent_id="a2", strategy="fusion", provider="offline"))
    assert await store.rows("SELECT id FROM agents WHERE strategy = ?", ("fusion",)) == [{"id": "a2"}]


async def test_each_gpu_profile_and_the_gpu_that_measured_a_decision_are_recorded(store: Store) -> None:
    for gpu, bandwidth in ((0, 4.2e12), (1, 4.1e12)):
        await store.apply(DeviceProfiled(seq=gpu + 1, device={"name": "H200", "uuid": f"GPU-{gpu}"}, gpu=gpu,
                                         bandwidth_bytes_per_s=bandwidth, flops_per_s=7e14))
    await store.apply(_proposed("k1", seq=3))
    await store.apply(_decided("k1", "KEEP", seq=4).model_copy(update={"gpu": 1}))
    devices = await store.rows("SELECT gpu, device, bandwidth_bytes_per_s FROM devices ORDER BY gpu")
    assert [(d["gpu"], json.loads(d["device"])["uuid"], d["bandwidth_bytes_per_s"]) for d in devices] == [
        (0, "GPU-0", 4.2e12), (1, "GPU-1", 4.1e12)]
    assert await store.rows("SELECT candidate_id, gpu FROM decisions") == [{"candidate_id": "k1", "gpu": 1}]


async def test_a_database_of_an_earlier_schema_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "campaign.db"
    with sqlite3.connect(path) as db:  # what the first release wrote
        db.executescript(MIGRATIONS[0])
        db.execute("PRAGMA user_version = 1")
        db.execute("INSERT INTO agents VALUES ('a1', 'memory', 'offline', 1.0)")
    store = await Store.open(path)
    try:
        assert (await store.rows("PRAGMA user_version"))[0]["user_version"] == len(MIGRATIONS)
        assert [r["id"] for r in await store.rows("SELECT id FROM agents")] == ["a1"]
        await store.apply(_proposed("k1", seq=3))
        await store.apply(_decided("k1", "REVERT", seq=4))
        assert await store.rows("SELECT gpu FROM decisions") == [{"gpu": None}]
    finally:
        await store.close()


async def test_events_queued_together_commit_together_with_their_bookmark(store: Store) -> None:
    await store.apply(_proposed("k1", seq=1))
    await store.apply(_decided("k1", "KEEP", seq=2))
    assert await store.last_seq() == 2  # a read writes what is queued first
    assert await store.decision_counts() == {"KEEP": 1}


async def test_the_database_is_written_by_a_process_of_its_own_without_keys_and_its_death_is_a_recording_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-canary-store")
    store = await Store.open(tmp_path / "campaign.db")
    await store.apply(_proposed("k1", seq=1))
    await store.flush()
    pid = store.writer_pid
    assert pid is not None and pid != os.getpid()
    assert b"sk-canary-store" not in Path(f"/proc/{pid}/environ").read_bytes()
    assert await store.rows("SELECT id FROM candidates") == [{"id": "k1"}]  # its commit is what the engine reads
    os.kill(pid, signal.SIGKILL)
    await store.apply(_decided("k1", "KEEP", seq=2))
    with pytest.raises(RecordingError, match="database writer process"):
        await store.flush()
    with pytest.raises(RecordingError):  # and nothing is written after it
        await store.flush()
    await store.close()
    assert store.writer_pid is None
    with sqlite3.connect(tmp_path / "campaign.db") as db:  # what was committed before is intact
        assert db.execute("SELECT last_seq FROM progress").fetchone() == (1,)
