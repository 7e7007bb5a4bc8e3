"""The run folder's small files (candidates, each agent's working and best kernel, best.py), written by a writer
task through a process of its own (arcengine/file_worker.py): creating a file can take a millisecond on a busy
disk, and neither the loop nor an agent should wait for it. Only the guard waits, for a candidate's file, before
a child loads it."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteSendStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

from arcengine import file_worker
from arcengine.batching import BatchWriter
from arcengine.bus import RecordingError

REPLY_MAX_BYTES = 1 << 16


@dataclass(frozen=True)
class FileText:
    path: Path
    text: str
    atomic: bool = False  # readers never see it half-written (a temporary file, then a rename)


class FileWriter:
    def __init__(self) -> None:
        self._writer = BatchWriter(self._write_batch)
        self._process: Process | None = None  # started with the first batch
        self._replies: BufferedByteReceiveStream | None = None

    @property
    def worker_pid(self) -> int | None:
        """The writer process's pid (None before the first batch and after ``close``)."""
        return self._process.pid if self._process is not None else None

    def put(self, path: Path, text: str, *, atomic: bool = False) -> anyio.Event:
        """Queue a file; the event is set once it is on disk."""
        return self._writer.put(FileText(path, text, atomic))

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
            process, self._process = self._process, None
            if process is not None:
                with anyio.CancelScope(shield=True):
                    await process.aclose()  # its input closes: it writes what it has, then exits

    async def _write_batch(self, files: list[FileText]) -> None:
        latest = {file.path: file for file in files}.values()  # a path written twice gets its last text only
        payload = pickle.dumps([(str(f.path), f.text.encode(), f.atomic) for f in latest])
        try:
            requests, replies = await self._worker()
            await requests.send(file_worker.HEADER.pack(len(payload)) + payload)
            reply = json.loads(await replies.receive_until(b"\n", REPLY_MAX_BYTES))
        except (OSError, anyio.BrokenResourceError, anyio.EndOfStream, anyio.IncompleteRead) as error:
            raise RecordingError(f"the file writer process failed: {str(error) or type(error).__name__}") from error
        if not reply["ok"]:
            raise RecordingError(f"cannot write {reply['filename']}: {reply['strerror']}")

    async def _worker(self) -> tuple[ByteSendStream, BufferedByteReceiveStream]:
        """The writer process's input and its replies, the process started with the first batch."""
        if self._process is None or self._replies is None:
            self._process = await anyio.open_process(
                [sys.executable, "-I", file_worker.__file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env={})  # it runs no candidate code, and gets no keys either
            assert self._process.stdout is not None
            self._replies = BufferedByteReceiveStream(self._process.stdout)
        assert self._process.stdin is not None
        return self._process.stdin, self._replies
