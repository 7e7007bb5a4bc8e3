"""The run folder's small files (candidates, each agent's working and best kernel, best.py), written by a writer
task through a process of its own (arcengine/recording/file_worker.py): creating a file can take a millisecond on a busy
disk, and neither the loop nor an agent should wait for it. Only the guard waits, for a candidate's file, before
a child loads it."""

from __future__ import annotations

import pickle
from pathlib import Path

import anyio

from arcengine.recording import file_worker
from arcengine.recording.batching import BatchWriter
from arcengine.recording.bus import RecordingError
from arcengine.recording.helper import HelperProcess


class FileWriter:
    def __init__(self) -> None:
        self._writer = BatchWriter(self._write_batch)
        self._process = HelperProcess(file_worker.__name__, name="file writer")

    @property
    def worker_pid(self) -> int | None:
        """The writer process's pid (None before the first batch and after ``close``)."""
        return self._process.pid

    def put(self, path: Path, text: str, *, atomic: bool = False) -> anyio.Event:
        """Queue a file; the event is set once it is on disk. ``atomic``: readers never see it half-written.

        The file is pickled here, so each caller pays for its own: pickled at once when the batch is sent, a
        batch that grew while the disk was slow held the loop for milliseconds."""
        return self._writer.put(pickle.dumps((str(path), text.encode(), atomic)))

    async def write(self, path: Path, text: str, *, atomic: bool = False) -> None:
        """Returns once the file holds ``text``."""
        await self.put(path, text, atomic=atomic).wait()

    async def run(self) -> None:
        await self._writer.run()

    async def close(self) -> None:
        """Write what is queued (unless the disk failed before), then end the writer process."""
        try:
            await self._writer.flush_if_intact()
        finally:
            await self._process.aclose()  # its input closes: it writes what it has, then exits

    async def _write_batch(self, files: list[bytes]) -> None:
        reply = await self._process.request(b"".join(files))
        if not reply["ok"]:
            raise RecordingError(f"cannot write {reply['filename']}: {reply['strerror']}")
