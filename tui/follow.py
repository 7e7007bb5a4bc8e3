"""Follow a growing ``events.jsonl`` from another process without ever blocking its writer.

The follower only reads: it opens the file, reads the bytes appended since the last call and closes it, so the
campaign's appends never wait on the TUI and a slow terminal cannot slow the campaign. A last line without its
newline is a write in progress (or a crash's cut): it is kept back until its newline arrives.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from arcengine.domain.events import Event, parse_event

DEFAULT_MAX_BYTES = 4 * 1024 * 1024  # per call, so catching up on a long log never freezes the screen


class EventFollower:
    """Reads the complete lines appended to an event log since the previous ``read``."""

    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.offset = 0  # bytes consumed: always the end of a complete line
        self.lines = 0  # complete lines consumed
        self.errors: list[str] = []  # lines that were not events (kept short: the newest few)
        self.restarted = False  # the last read found the file replaced or shrunk and began again from its start
        self._seen: tuple[int, int] | None = None  # (size, mtime) when a read reached the end: unchanged, no read
        self._more = False
        self._inode: int | None = None

    @property
    def pending(self) -> bool:
        """The last read stopped at ``max_bytes`` before the end of the file: call again to catch up."""
        return self._more

    def read(self) -> list[Event]:
        """The events of the complete lines appended since the last call; [] while the file does not exist."""
        self.restarted = False
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return []
        if self._inode is not None and (stat.st_ino != self._inode or stat.st_size < self.offset):
            self._restart()
        self._inode = stat.st_ino
        if (stat.st_size, stat.st_mtime_ns) == self._seen:
            return []
        with open(self.path, "rb") as file:
            file.seek(self.offset)
            data = file.read(self.max_bytes)
            while data and b"\n" not in data:  # a line longer than max_bytes still has to be read whole
                more = file.read(self.max_bytes)
                if not more:
                    break
                data += more
            at_end = file.tell() >= os.fstat(file.fileno()).st_size
        self._more = not at_end
        self._seen = (stat.st_size, stat.st_mtime_ns) if at_end and self.offset + len(data) == stat.st_size else None
        complete = data[: data.rfind(b"\n") + 1]  # empty while only a partial line is there
        self.offset += len(complete)
        return self._parse(complete)

    def _restart(self) -> None:
        self.offset = 0
        self.lines = 0
        self._seen = None
        self.restarted = True

    def _parse(self, complete: bytes) -> list[Event]:
        events: list[Event] = []
        for line in complete.split(b"\n")[:-1]:
            self.lines += 1
            if not line.strip():
                continue
            try:
                events.append(parse_event(line))
            except ValidationError as error:  # a newer schema or a damaged line: show what can be shown
                self.errors = [*self.errors[-9:], f"line {self.lines}: not an event ({error.error_count()} errors)"]
        return events
