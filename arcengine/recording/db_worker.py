"""The campaign database's writer: a process of its own that ``arcengine.recording.store`` starts (through
``arcengine.recording.helper``, with the standard library only and an empty environment). It also holds the schema
and the projection of each event into its tables, which the engine's own connection (for reads) shares.

A process and not a thread of the engine: a thread's Python work, building each event's rows and binding them,
shares the interpreter's lock with the event loop. In a 64-agent campaign the writer thread used 0.62 s of CPU
per 10,000 candidates and spent 3.4 s inside its batches, mostly waiting for that lock, while the loop waited
in turn for its threads' hand-overs.

A request is a batch of events as the event log's own JSON lines (8-byte little-endian length, then the lines);
each is written in one transaction with the ``progress`` bookmark, so the database never holds part of a batch,
and answered with one JSON line: ``{"ok": true}``, or ``{"ok": false, "integrity": ..., "error": ...}`` (an
integrity error is a bug in what is projected, any other a database or disk that cannot be written). End of
input ends the process, after the batch in hand.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from arcengine.recording import framing

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


Statement = tuple[str, list[Sequence[Any]]]  # SQL and the rows of parameters it runs with


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection with the campaign's settings (each connection needs its own), the schema migrated forward."""
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


def apply_lines(db: sqlite3.Connection, lines: list[bytes]) -> None:
    """Project a batch of logged events, with the bookmark, in one transaction."""
    events = [json.loads(line) for line in lines]
    with db:
        for event in events:
            for sql, rows in statements(event):
                db.executemany(sql, rows)
        db.execute("UPDATE progress SET last_seq = ?", (events[-1]["seq"],))


def statements(e: dict[str, Any]) -> list[Statement]:
    """The rows one event (as logged, a JSON object) adds to, or takes from, the tables."""
    match e["type"]:
        case "campaign_started":
            return [("INSERT OR REPLACE INTO campaign (id, problem, kernel_type, device, config, started)"
                     " VALUES (?, ?, ?, ?, ?, ?)",
                     [(e["campaign_id"], e["problem"], e["kernel_type"], e["device"], json.dumps(e["config"]),
                       e["ts"])])]
        case "device_profiled":
            return [("INSERT INTO devices VALUES (?, ?, ?, ?, ?)",
                     [(e["gpu"], json.dumps(e["device"]), e["bandwidth_bytes_per_s"], e["flops_per_s"], e["seq"])])]
        case "agent_started":
            return [("INSERT OR IGNORE INTO agents (id, strategy, provider, started) VALUES (?, ?, ?, ?)",
                     [(e["agent_id"], e["strategy"], e["provider"], e["ts"])])]
        case "candidate_proposed":
            return [("INSERT INTO candidates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(e["candidate_id"], e["agent_id"], e["position"], e["parent_id"], e["strategy"],
                       e["rationale"], e["source"], int(e["drafting"]), e["seq"])])]
        case "candidate_decided":
            return [
                ("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 [(e["candidate_id"], e["agent_id"], e["decision"], e["reason"], int(e["correct"]), e["speedup"],
                   e["held_out_speedup"], e["vs_incumbent"], e["guard_seconds"], json.dumps(e["device"]), e["seq"],
                   e["gpu"])]),
                ("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 [(e["candidate_id"], w["index"], json.dumps(w["axes"]), int(w["held_out"]), int(w["correct"]),
                   w["failure"], w["max_abs_err"], w["time_us"], w["ref_time_us"], w["incumbent_time_us"],
                   w["speedup"], w["sol_score"])
                  for w in e["workloads"]]),
            ]
        case "memory_recorded":
            return [("INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(e["entry_id"], e["kind"], e["kernel_type"], e["owner"], e["agent_id"], e["candidate_id"],
                       e["strategy"], e["speedup"], e["context"], e["summary"], e["reflection"],
                       json.dumps(e["params"]), e["seq"])])]
        case "memory_evicted":
            return [("DELETE FROM memory WHERE id = ?", [(e["entry_id"],)])]
        case "best_improved":
            return [("INSERT OR REPLACE INTO archives VALUES (?, ?, ?, ?, ?)",
                     [(e["agent_id"], e["candidate_id"], e["speedup"], int(e["campaign_best"]), e["seq"])])]
        case "campaign_stopped":
            return [("UPDATE campaign SET stopped = ?, stop_reason = ?", [(e["ts"], e["reason"])])]
    return []


def serve(path: str, requests: BinaryIO, replies: BinaryIO) -> None:
    db = connect(path)
    try:
        framing.serve(lambda payload: write_batch(db, payload), requests, replies)
    finally:
        db.close()


def write_batch(db: sqlite3.Connection, payload: bytes) -> dict[str, object]:
    try:
        apply_lines(db, payload.splitlines())
    except sqlite3.IntegrityError as error:
        return {"ok": False, "integrity": True, "error": str(error)}
    except (sqlite3.DatabaseError, OSError) as error:  # "database or disk is full", "disk I/O error"
        return {"ok": False, "integrity": False, "error": str(error)}
    return {"ok": True}


if __name__ == "__main__":
    serve(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer)
