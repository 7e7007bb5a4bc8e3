"""Threads an untrusted call leaves behind.

A thread still alive when a call returns can work after the call's closing marker: compute the answer into the
buffer it returned once the timer has stopped, and be gone before anything looks at threads. So the worker counts
the process's threads around every untrusted call: once when it returns (before the synchronise) and once more
after its closing marker, before its outputs are copied. A thread started in the call and alive at either point
fails it, whoever started it (Python or native code, or a CUDA host callback during the synchronise).

Ids, not names: the interpreter's own count (``_thread._count``) and the kernel's list of the process's threads
(``/proc/self/task``), a few microseconds, so every call pays it. The pools libraries
start on first use (OpenMP's, CUPTI's) are started by the worker before any untrusted call (``warm_pools``).
"""

from __future__ import annotations

import _thread
import os
import threading
from collections.abc import Callable
from typing import NamedTuple

import torch

TASKS = "/proc/self/task"


class Census(NamedTuple):
    python: int  # threads the interpreter started
    native: frozenset[int]  # every thread of the process by its id, native ones included (empty without /proc)


def census() -> Census:
    # The interpreter's count first: it needs no system call (the GIL stays held), so no Python thread runs
    # between a call's closing set and this read. The ids then: a set, which a thread that exits meanwhile cannot
    # balance out as it would a count.
    python = _thread._count()
    try:
        native = frozenset(int(tid) for tid in os.listdir(TASKS))
    except OSError:
        native = frozenset()
    return Census(python, native)


def grown(before: Census, now: Census) -> str | None:
    """Why ``now`` shows a thread that ``before`` did not, or None."""
    new = now.native - before.native
    if now.python <= before.python and not new:
        return None
    names = [t.name for t in threading.enumerate() if t is not threading.main_thread()
             and (t.native_id in new or not new)]
    count = max(len(new), now.python - before.python)
    return f"{count} thread(s): {', '.join(names)[:200] or 'native'}"


class LeftRunning(Exception):
    """A call that left a thread running; its message is the verdict's reason."""


class Watch:
    """Wraps an untrusted entry point: each call counts threads before and after, and ``after_close`` counts them
    again once the harness has closed the call's time."""

    def __init__(self, fn: Callable[..., object], role: str) -> None:
        self.fn = fn
        self.role = role
        self.before = census()

    def __call__(self, *args: object) -> object:
        self.before = census()
        out = self.fn(*args)
        more = grown(self.before, census())
        if more is not None:
            raise LeftRunning(f"{self.role} left a thread running after returning ({more})")
        return out

    def after_close(self) -> str | None:
        more = grown(self.before, census())
        return None if more is None else f"{self.role} started a thread that ran after its call ({more})"


def warm_pools(device: torch.device) -> None:
    """Start the thread pools torch starts lazily, so an honest call's first parallel loop starts none."""
    if torch.get_num_threads() > 1:
        torch.ones(1 << 20).sum()  # above the parallel grain: OpenMP's pool starts here
    if device.type == "cuda":
        torch.cuda.synchronize(device)
