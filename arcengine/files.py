"""The run folder's small files (candidates, each agent's working and best kernel, best.py), written by a writer
task in worker threads: creating a file can take a millisecond on a busy disk, and neither the loop nor an agent
should wait for it. Only the guard waits, for a candidate's file, before a child loads it."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio

from arcengine.batching import BatchWriter
from arcengine.bus import RecordingError

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="arcengine-files")


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
    # Creating a file is mostly waiting on the file system's journal, so a batch's files are written side by
    # side; a path written twice in one batch gets its last text only.
    latest = list({file.path: file for file in files}.values())
    if len(latest) == 1:
        _write(latest[0])
    else:
        list(_POOL.map(_write, latest))


def _write(file: FileText) -> None:
    if file.atomic:
        temporary = file.path.with_suffix(file.path.suffix + ".tmp")
        temporary.write_text(file.text, encoding="utf-8")
        os.replace(temporary, file.path)
    else:
        _overwrite(file.path, file.text.encode())


def _overwrite(path: Path, data: bytes) -> None:
    """Write over the old bytes, then cut what is left: opening with O_TRUNC instead makes ext4 flush the file
    on close (its guard for truncate-and-rewrite), five times the cost of the write."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644), "wb") as file:
        file.write(data)
        file.truncate()
