"""The run folder's small files (candidates, each agent's working and best kernel, best.py), written by a writer
task in a worker thread: creating a file can take a millisecond on a busy disk, and neither the loop nor an agent
should wait for it. Only the guard waits, for a candidate's file, before a child loads it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import anyio

from arcengine.batching import BatchWriter
from arcengine.bus import RecordingError


@dataclass(frozen=True)
class FileText:
    path: Path
    text: str
    atomic: bool = False  # readers never see it half-written (a temporary file, then a rename)


class FileWriter:
    def __init__(self) -> None:
        self._writer = BatchWriter(self._write_batch)

    def put(self, path: Path, text: str, *, atomic: bool = False) -> anyio.Event:
        """Queue a file; the event is set once it is on disk."""
        return self._writer.put(FileText(path, text, atomic))

    async def write(self, path: Path, text: str, *, atomic: bool = False) -> None:
        """Returns once the file holds ``text``."""
        await self.put(path, text, atomic=atomic).wait()

    async def run(self) -> None:
        await self._writer.run()

    async def close(self) -> None:
        """Write what is queued (unless the disk failed before)."""
        await self._writer.flush_if_intact()

    @staticmethod
    async def _write_batch(files: list[FileText]) -> None:
        try:
            await anyio.to_thread.run_sync(_write_files, files)
        except OSError as error:
            raise RecordingError(f"cannot write {error.filename}: {error.strerror or error}") from error


def _write_files(files: list[FileText]) -> None:
    # One after the other: side by side (a pool of threads), the threads' hand-offs of the interpreter's lock
    # cost the loop more than the overlap gains. A path written twice in one batch gets its last text only.
    for file in {file.path: file for file in files}.values():
        _write(file)


def _write(file: FileText) -> None:
    if file.atomic:
        temporary = file.path.with_suffix(file.path.suffix + ".tmp")
        temporary.write_text(file.text, encoding="utf-8")
        os.replace(temporary, file.path)
    else:
        _overwrite(file.path, file.text.encode())


def _overwrite(path: Path, data: bytes) -> None:
    """Write over the old bytes, then cut what is left: opening with O_TRUNC instead makes ext4 flush the file
    on close (its guard for truncate-and-rewrite), five times the cost of the write. Bare system calls: a file
    object adds a stat, a terminal check and seeks, and every call hands the interpreter's lock back and forth
    with the loop's thread."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        written = 0
        while written < len(data):  # a regular file takes it all at once, unless the disk fills up
            written += os.write(fd, data[written:])
        os.ftruncate(fd, written)
    finally:
        os.close(fd)
