"""The engine's helper processes (the file writer, the database writer): each runs one module of this package
with the standard library only (``python -I``, this package's folder put first on its path) and an empty
environment, since it runs no candidate code and gets no keys either, at a lower priority than the engine. A
request goes to its input as an 8-byte little-endian length and a payload, and is answered with one JSON line;
the process is started with the first request and ends when its input closes, after the request in hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteSendStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

from arcengine.recording.bus import RecordingError
from arcengine.recording.framing import HEADER

REPLY_MAX_BYTES = 1 << 16
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])  # the folder holding arcengine/
# Background work: where the cores are few, the event loop (every agent's next step) gets the CPU first. It was
# preempted about 350 times a second by the writers on a 2-core machine, and a p99 decision took 16% longer.
NICENESS = 10
# -I leaves out the environment and the working folder; the module is found from this package's own folder.
LAUNCH = (f"import os, runpy, sys; os.nice({NICENESS}); sys.path.insert(0, sys.argv.pop(1)); "
          "runpy.run_module(sys.argv.pop(1), run_name='__main__')")


class HelperProcess:
    def __init__(self, module: str, *args: str, name: str) -> None:
        self.command = [sys.executable, "-I", "-c", LAUNCH, PACKAGE_PARENT, module, *args]
        self.name = name  # for messages: "the file writer process failed: ..."
        self._process: Process | None = None
        self._replies: BufferedByteReceiveStream | None = None

    @property
    def pid(self) -> int | None:
        """The process's pid (None before the first request and after ``aclose``)."""
        return self._process.pid if self._process is not None else None

    async def request(self, payload: bytes) -> dict[str, Any]:
        try:
            requests, replies = await self._streams()
            await requests.send(HEADER.pack(len(payload)) + payload)
            reply: dict[str, Any] = json.loads(await replies.receive_until(b"\n", REPLY_MAX_BYTES))
        except (OSError, anyio.BrokenResourceError, anyio.EndOfStream, anyio.IncompleteRead) as error:
            raise RecordingError(f"the {self.name} process failed: {str(error) or type(error).__name__}") from error
        return reply

    async def aclose(self) -> None:
        """Close its input: it finishes the request in hand, then exits."""
        process, self._process = self._process, None
        if process is not None:
            with anyio.CancelScope(shield=True):
                await process.aclose()

    async def _streams(self) -> tuple[ByteSendStream, BufferedByteReceiveStream]:
        if self._process is None or self._replies is None:
            self._process = await anyio.open_process(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                     stderr=subprocess.DEVNULL, env={})
            assert self._process.stdout is not None
            self._replies = BufferedByteReceiveStream(self._process.stdout)
        assert self._process.stdin is not None
        return self._process.stdin, self._replies
