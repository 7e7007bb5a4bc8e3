"""SQLite projection of the event stream: campaign, devices, agents, candidates, decisions, measurements, memory
and archives. WAL mode; the schema is migrated forward with ``PRAGMA user_version``.

``apply`` only queues an event: a writer (``run``, in the campaign's task group) writes what has queued up in one
worker-thread call and one transaction, with the ``progress`` bookmark, so the event loop never waits on the
disk, a busy campaign writes many events per commit, and after a crash the database holds exactly the events up
to its bookmark (the log, written first, has the rest). Reads and ``close`` write what is queued first."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio

from arcengine.batching import BatchWriter
from arcengine.bus import RecordingError
from arcengine.events import (
    AgentStarted,
    BestImproved,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
    MemoryEvicted,
    MemoryRecorded,
)

# Each entry migrates the schema from version i to i + 1; never edit a released entry, append a new one.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE campaign (
        id TEXT PRIMARY KEY, problem TEXT NOT NULL, kernel_type TEXT NOT NULL, device TEXT NOT NULL,
        config TEXT NOT NULL, started REAL NOT NULL, stopped REAL, stop_reason TEXT
    );
    CREATE TABLE agents (
        id TEXT PRIMARY KEY, strategy TEXT NOT NULL, provider TEXT NOT NULL, started REAL NOT NULL
    );
    CREATE TABLE candidates (
        id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, position INTEGER NOT NULL, parent_id TEXT,
        strategy TEXT NOT NULL, rationale TEXT NOT NULL, source TEXT NOT NULL, drafting INTEGER NOT NULL,
        seq INTEGER NOT NULL
    );
    CREATE TABLE decisions (
        candidate_id TEXT PRIMARY KEY REFERENCES candidates(id), agent_id TEXT NOT NULL,
        decision TEXT NOT NULL, reason TEXT NOT NULL, correct INTEGER NOT NULL, speedup REAL,
        held_out_speedup REAL, vs_incumbent REAL, guard_seconds REAL NOT NULL, device TEXT NOT NULL,
        seq INTEGER NOT NULL
    );
    CREATE TABLE measurements (
        candidate_id TEXT NOT NULL REFERENCES candidates(id), workload INTEGER NOT NULL, axes TEXT NOT NULL,
        held_out INTEGER NOT NULL, correct INTEGER NOT NULL, failure TEXT, max_abs_err REAL,
        time_us REAL, ref_time_us REAL, incumbent_time_us REAL, speedup REAL, sol_score REAL,
        PRIMARY KEY (candidate_id, workload)
    );
    CREATE TABLE memory (
        id TEXT PRIMARY KEY, kind TEXT NOT NULL, kernel_type TEXT NOT NULL, owner TEXT,
        agent_id TEXT NOT NULL, candidate_id TEXT NOT NULL, strategy TEXT NOT NULL, speedup REAL,
        context TEXT NOT NULL, summary TEXT NOT NULL, reflection TEXT NOT NULL, params TEXT NOT NULL,
        seq INTEGER NOT NULL
    );
    CREATE TABLE archives (
        agent_id TEXT NOT NULL, candidate_id TEXT NOT NULL REFERENCES candidates(id), speedup REAL NOT NULL,
        campaign_best INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (agent_id, candidate_id)
    );
    """,
    """
    ALTER TABLE decisions ADD COLUMN gpu INTEGER;
    CREATE TABLE devices (
        gpu INTEGER, device TEXT NOT NULL, bandwidth_bytes_per_s REAL NOT NULL, flops_per_s REAL NOT NULL,
        seq INTEGER NOT NULL
    );
    CREATE TABLE progress (last_seq INTEGER NOT NULL);
    INSERT INTO progress VALUES (0);
    """,
]


T = TypeVar("T")
Statement = tuple[str, list[Sequence[Any]]]  # SQL and the rows of parameters it runs with


class Store:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self.path = path
        self._limiter = anyio.CapacityLimiter(1)  # the connection is used by one thread at a time
        self._writer = BatchWriter(self._write)

    @classmethod
    async def open(cls, path: Path) -> Store:
        return cls(await anyio.to_thread.run_sync(_connect, path), path)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    async def close(self) -> None:
        await self._writer.flush_if_intact()
        await self._call(self._db.close)

    async def apply(self, event: Event) -> None:
        """Queue one event for the writer (a bus subscriber: the event is already in the log)."""
        self._writer.put(event)

    async def run(self) -> None:
        """The writer: write each batch that queues up, until cancelled."""
        await self._writer.run()

    async def flush(self) -> None:
        """Write what is queued."""
        await self._writer.flush()

    async def _write(self, events: list[Event]) -> None:
        try:
            await self._call(self._apply, events)
        except sqlite3.IntegrityError:
            raise  # a bug in what is projected, not the disk
        except (sqlite3.DatabaseError, OSError) as error:  # "database or disk is full", "disk I/O error"
            raise RecordingError(f"cannot write the database {self.path}: {error}") from error

    def _apply(self, events: list[Event]) -> None:
        # The rows and the bookmark commit together: the database never holds part of an event.
        with self._db:
            for event in events:
                for sql, rows in statements(event):
                    self._db.executemany(sql, rows)
            self._db.execute("UPDATE progress SET last_seq = ?", (events[-1].seq,))

    async def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        await self._writer.flush_if_intact()
        return await self._call(self._rows, sql, params)

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [dict(row) for row in self._db.execute(sql, params).fetchall()]

    async def intact(self) -> bool:
        """SQLite's own structural check passes and the schema is ours."""
        try:
            (result,) = (await self.rows("PRAGMA quick_check"))[0].values()
            return result == "ok" and await self.last_seq() >= 0
        except (sqlite3.Error, IndexError, KeyError):
            return False

    async def last_seq(self) -> int:
        return int((await self.rows("SELECT last_seq FROM progress"))[0]["last_seq"])

    async def catch_up(self, events: list[Event]) -> int:
        """Apply the events the database has not seen (a crash came between the log and the database)."""
        seen = await self.last_seq()
        missing = [event for event in events if event.seq > seen]
        for event in missing:
            await self.apply(event)
        await self.flush()
        return len(missing)

    async def decision_counts(self) -> dict[str, int]:
        rows = await self.rows("SELECT decision, COUNT(*) AS n FROM decisions GROUP BY decision")
        return {row["decision"]: row["n"] for row in rows}


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False)
    try:
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        (version,) = db.execute("PRAGMA user_version").fetchone()
        for number in range(version, len(MIGRATIONS)):
            db.executescript(MIGRATIONS[number])
            db.execute(f"PRAGMA user_version = {number + 1}")
        db.commit()
    except BaseException:
        db.close()
        raise
    return db


def statements(event: Event) -> list[Statement]:
    """The rows one event adds to (or takes from) the tables."""
    match event:
        case CampaignStarted():
            return [("INSERT OR REPLACE INTO campaign (id, problem, kernel_type, device, config, started)"
                     " VALUES (?, ?, ?, ?, ?, ?)",
                     [(event.campaign_id, event.problem, event.kernel_type, event.device, json.dumps(event.config),
                       event.ts)])]
        case DeviceProfiled():
            return [("INSERT INTO devices VALUES (?, ?, ?, ?, ?)",
                     [(event.gpu, json.dumps(event.device), event.bandwidth_bytes_per_s, event.flops_per_s,
                       event.seq)])]
        case AgentStarted():
            return [("INSERT OR IGNORE INTO agents (id, strategy, provider, started) VALUES (?, ?, ?, ?)",
                     [(event.agent_id, event.strategy, event.provider, event.ts)])]
        case CandidateProposed():
            return [("INSERT INTO candidates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(event.candidate_id, event.agent_id, event.position, event.parent_id, event.strategy,
                       event.rationale, event.source, int(event.drafting), event.seq)])]
        case CandidateDecided():
            return [
                ("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 [(event.candidate_id, event.agent_id, event.decision, event.reason, int(event.correct),
                   event.speedup, event.held_out_speedup, event.vs_incumbent, event.guard_seconds,
                   json.dumps(event.device), event.seq, event.gpu)]),
                ("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 [(event.candidate_id, w.index, json.dumps(w.axes), int(w.held_out), int(w.correct), w.failure,
                   w.max_abs_err, w.time_us, w.ref_time_us, w.incumbent_time_us, w.speedup, w.sol_score)
                  for w in event.workloads]),
            ]
        case MemoryRecorded():
            return [("INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(event.entry_id, event.kind, event.kernel_type, event.owner, event.agent_id,
                       event.candidate_id, event.strategy, event.speedup, event.context, event.summary,
                       event.reflection, json.dumps(event.params), event.seq)])]
        case MemoryEvicted():
            return [("DELETE FROM memory WHERE id = ?", [(event.entry_id,)])]
        case BestImproved():
            return [("INSERT OR REPLACE INTO archives VALUES (?, ?, ?, ?, ?)",
                     [(event.agent_id, event.candidate_id, event.speedup, int(event.campaign_best), event.seq)])]
        case CampaignStopped():
            return [("UPDATE campaign SET stopped = ?, stop_reason = ?", [(event.ts, event.reason)])]
    return []
