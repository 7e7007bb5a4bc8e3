"""SQLite projection of the event stream: campaign, devices, agents, candidates, decisions, measurements, memory
and archives. WAL mode; the schema is migrated forward with ``PRAGMA user_version`` (both in
``arcengine/recording/db_worker.py``).

``apply`` and ``apply_lines`` (the bus hands it each batch's log lines) only queue events: a writer (``run``, in the
campaign's task group) hands what has queued up, as the event log's JSON lines, to the database writer's process,
which writes it in one transaction with the ``progress`` bookmark. So the event loop never waits on the disk nor
shares the interpreter's lock with the database's work, a busy campaign writes many events per commit, and after a
crash the database holds exactly the events up to its bookmark (the log, written first, has the rest). Reads go
through the engine's own connection, after what is queued is written; ``close`` writes it too."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from arcengine.domain.events import Event, dump_event
from arcengine.recording import db_worker
from arcengine.recording.batching import BatchWriter
from arcengine.recording.bus import RecordingError
from arcengine.recording.db_worker import connect
from arcengine.recording.helper import HelperProcess

T = TypeVar("T")


class Store:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db  # the engine's connection, for reads; the writer's process has its own
        self.path = path
        self._limiter = anyio.CapacityLimiter(1)  # the connection is used by one thread at a time
        self._writer = BatchWriter(self._write)
        self._process = HelperProcess(db_worker.__name__, str(path), name="database writer")

    @property
    def writer_pid(self) -> int | None:
        """The database writer process's pid (None before the first batch and after ``close``)."""
        return self._process.pid

    @classmethod
    async def open(cls, path: Path) -> Store:
        return cls(await anyio.to_thread.run_sync(connect, path), path)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    async def close(self) -> None:
        try:
            await self._writer.flush_if_intact()
        finally:
            await self._process.aclose()
            await self._call(self._db.close)

    async def apply(self, event: Event) -> None:
        """Queue one event for the writer."""
        self.apply_lines(dump_event(event) + "\n")

    def apply_lines(self, text: str) -> None:
        """Queue events as the log holds them, one JSON line each (a bus line subscriber: they are in the log)."""
        self._writer.put(text)

    async def run(self) -> None:
        """The writer: write each batch that queues up, until cancelled."""
        await self._writer.run()

    async def flush(self) -> None:
        """Write what is queued."""
        await self._writer.flush()

    async def _write(self, texts: list[str]) -> None:
        reply = await self._process.request("".join(texts).encode())
        if reply["ok"]:
            return
        if reply["integrity"]:
            raise sqlite3.IntegrityError(reply["error"])  # a bug in what is projected, not the disk
        raise RecordingError(f"cannot write the database {self.path}: {reply['error']}")

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
