"""Turns on one GPU: while one child checks and times its candidate, the next one prepares.

A child started with a turn gate loads everything and compiles its candidate's kernels (nothing runs on the
device), then blocks on its gate until the engine opens it: the engine does so once the device is free, and the
device stays that child's until it exits. So the GPU goes from one child's last timed call to the next child's
first check with no process start, import or compilation in between, and two children never share it while
either measures.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio

GO = b"g"  # the one byte that opens a gate (the child reads it: arcengine.guard.child.judge)


class DeviceTurns:
    """One device's turns, first come first served (anyio's lock is fair)."""

    def __init__(self) -> None:
        self._lock = anyio.Lock()

    @contextlib.asynccontextmanager
    async def turn(self, ended: Callable[[], Awaitable[object]]) -> AsyncIterator[bool]:
        """Hold the device from when it is free until the block ends. Yields False, holding nothing, when
        ``ended()`` returns first: a child that failed while preparing needs no turn."""
        taken = await self._take_unless(ended)
        try:
            yield taken
        finally:
            if taken:
                self._lock.release()

    async def _take_unless(self, ended: Callable[[], Awaitable[object]]) -> bool:
        async with anyio.create_task_group() as race:

            async def end_first() -> None:
                await ended()
                race.cancel_scope.cancel()

            race.start_soon(end_first)
            await self._lock.acquire()  # cancelled (not acquired) if the child ends first
            race.cancel_scope.cancel()
            return True
        return False


class Gate:
    """A named pipe in the child's private folder. The engine holds it open for reading and writing from the
    start, so the child's open never blocks and the byte written at its turn waits in the pipe until read."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path, 0o600)
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)

    def open(self) -> None:
        os.write(self._fd, GO)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
