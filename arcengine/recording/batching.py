"""Group commit: many tasks hand over work, and what queues up while one batch is being committed goes together
in the next one. A busy campaign then pays one worker-thread call for many events or files instead of one each,
and a quiet one waits no longer than before (a lone item is committed at once)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")


@dataclass
class _Batch(Generic[T]):
    items: list[T] = field(default_factory=list)
    led: bool = False  # its first task commits it; the others wait for that
    done: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None


class GroupCommit(Generic[T]):
    """``await commit(items)`` returns once ``items`` are committed, in the order they were handed over: batches
    are committed one at a time, each by the first task that joined it."""

    def __init__(self, commit: Callable[[list[T]], Awaitable[None]]) -> None:
        self._commit = commit
        self._open: _Batch[T] = _Batch()
        self._committing = anyio.Lock()

    async def __call__(self, items: Sequence[T]) -> None:
        batch = self._open  # joining the open batch has no await before it: hand-over order is commit order
        batch.items.extend(items)
        if batch.led:
            await batch.done.wait()
        else:
            batch.led = True
            # Shielded: the batch holds other tasks' items, so its leader's cancellation must not drop them
            # (the wait is bounded by the batch before, whose commit is shielded too).
            with anyio.CancelScope(shield=True):
                async with self._committing:
                    self._open = _Batch()  # from here on, arrivals wait for the next batch
                    try:
                        await self._commit(batch.items)
                    except BaseException as error:
                        batch.error = error
                    finally:
                        batch.done.set()
        if batch.error is not None:
            raise batch.error


class BatchWriter(Generic[T]):
    """Items are queued without waiting (``put``) and written by ``run``, a task of their owner's task group,
    in batches: whatever queued up while the last batch was written goes in the next. ``put`` returns an event
    set once its item is written, for the callers that must know. A failed batch breaks the writer: the error
    is raised again by every later ``flush``."""

    def __init__(self, write: Callable[[list[T]], Awaitable[None]]) -> None:
        self._write = write
        self._open: _Batch[T] = _Batch()
        self._queued = anyio.Event()
        self._writing = anyio.Lock()  # batches are written in the order they were queued
        self.error: BaseException | None = None

    def put(self, item: T) -> anyio.Event:
        self._open.items.append(item)
        self._queued.set()
        return self._open.done

    async def run(self) -> None:
        """Write each batch as it queues up, until cancelled."""
        while True:
            await self._queued.wait()
            self._queued = anyio.Event()
            await self.flush()

    async def flush_if_intact(self) -> None:
        """Write what is queued unless a batch failed before (reads and closing go on with what was written)."""
        if self.error is None:
            await self.flush()

    async def flush(self) -> None:
        """Write what is queued now."""
        async with self._writing:
            if self.error is not None:
                raise self.error
            if not self._open.items:
                return
            batch, self._open = self._open, _Batch()
            try:
                with anyio.CancelScope(shield=True):  # a batch once started is written, cancelled or not
                    await self._write(batch.items)
            except BaseException as error:
                self.error = error
                raise
            batch.done.set()
