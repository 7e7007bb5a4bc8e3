"""The append-only JSONL event log: the source of truth of a campaign."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import anyio
from pydantic import ValidationError

from arcengine.domain.errors import UserError
from arcengine.domain.events import Event, dump_event, parse_event


class EventLogError(UserError):
    """The event log is unreadable somewhere other than a cut last line."""


class EventLogWriter:
    """Appends one JSON line per event; a line is flushed before its event is acted on."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        drop_cut_last_line(self.path)
        self._file = self.path.open("a", encoding="utf-8")

    async def append(self, event: Event) -> None:
        await self.append_all([event])

    async def append_all(self, events: list[Event]) -> None:
        await self.append_text(lines_of(events))

    async def append_text(self, text: str) -> None:
        """One write for all the lines (the buffer is empty before it): a kill keeps all of them or a prefix,
        whose cut last line the reader skips."""
        assert self._file is not None, "EventLogWriter.open() first"
        await anyio.to_thread.run_sync(_write_and_flush, self._file, text)

    async def close(self) -> None:
        if self._file is not None:
            # After a failed write (disk full) closing retries the flush and fails again: the event is lost
            # either way, and the lines before it are intact.
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


def lines_of(events: list[Event]) -> str:
    """The events as the log holds them: one JSON line each."""
    return "".join(dump_event(event) + "\n" for event in events)


def _write_and_flush(file: TextIO, text: str) -> None:
    """In a worker thread, in one hop: the loop never waits on the disk."""
    file.write(text)
    file.flush()


def drop_cut_last_line(path: Path) -> None:
    """Truncate a last line that a crash cut (no trailing newline), so appends start on a fresh line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        data = f.read()
        if data.endswith(b"\n"):
            return
        f.truncate(data.rfind(b"\n") + 1)


def read_events(path: Path) -> Iterator[Event]:
    """Yield the events of a log in order. A last line cut by a crash is skipped; damage elsewhere raises."""
    with path.open("rb") as f:
        lines = f.read().split(b"\n")
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield parse_event(line)
        except ValidationError as error:
            if number == last:  # no trailing newline: the write was cut
                return
            raise EventLogError(f"{path}:{number + 1}: not a valid event ({error.error_count()} errors)") from None
