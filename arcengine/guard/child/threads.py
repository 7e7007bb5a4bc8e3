"""Threads an untrusted call leaves behind.

A thread still alive when a call returns can work after the call's closing marker: compute the answer into the
buffer it returned once the timer has stopped, and be gone before anything looks at threads. So the worker counts
the process's threads around every untrusted call: once when it returns (before the synchronise) and once more
after its closing marker, before its outputs are copied. A thread started in the call and alive at either point
fails it, whoever started it (Python or native code, or a CUDA host callback during the synchronise).

Ids, not names: the interpreter's own count (``_thread._count``) and the kernel's list of the process's threads
(``/proc/self/task``), a few microseconds, so every call pays it. The pools libraries
start on first use (OpenMP's, numpy's BLAS) are started by the worker before any untrusted call (``warm_pools``).
"""

from __future__ import annotations

import _thread
import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Callable, Collection
from types import FrameType
from typing import NamedTuple

import torch

from arcengine.guard.child import modes

TASKS = "/proc/self/task"


class Census(NamedTuple):
    python: int  # threads the interpreter started
    native: frozenset[int] | None  # every thread of the process by its id, native ones included (None: unreadable)


def census() -> Census:
    # The interpreter's count first: it needs no system call (the GIL stays held), so no Python thread runs
    # between a call's closing set and this read. The ids then: a set, which a thread that exits meanwhile cannot
    # balance out as it would a count.
    python = _thread._count()
    try:
        native: frozenset[int] | None = frozenset(int(tid) for tid in os.listdir(TASKS))
    except OSError:
        native = None
    return Census(python, native)


def grown(before: Census, now: Census, countable: bool = True) -> str | None:
    """Why ``now`` shows a thread that ``before`` did not, or None. Where the process's threads were ``countable``
    once, an unreadable list is not taken as none: a module can use up its descriptors to blind the count."""
    if countable and (before.native is None or now.native is None):
        return f"threads that could not be counted (the harness could no longer list {TASKS})"
    new = now.native - before.native if now.native is not None and before.native is not None else frozenset()
    if now.python <= before.python and not new:
        return None
    python = {t.native_id: t.name for t in threading.enumerate() if t is not threading.main_thread()}
    names = [python.get(tid) or _native_name(tid) for tid in sorted(new)] or list(python.values())
    count = max(len(new), now.python - before.python)
    return f"{count} thread(s): {', '.join(names)[:200]}"


def _native_name(tid: int) -> str:
    """A native thread's name as the kernel has it (its creator may have set it), for the reason."""
    try:
        with open(f"{TASKS}/{tid}/comm", encoding="utf-8", errors="replace") as comm:
            return f"native {comm.read().strip()!r}"
    except OSError:
        return "native, gone"


def python_elsewhere(known: Collection[int | None], own: tuple[str, ...]) -> str | None:
    """Where Python runs now on a thread the harness did not start, or None. A library's native thread that calls
    a module's function (TorchScript's inter-op pool after ``torch.jit.fork``, a future's ``then``, a CUDA host
    function) is in no census: its pool was there before the call, and the interpreter does not count it. So the
    frames tell: a thread other than this one and ``known`` whose outermost frame (where native code entered
    Python) is not in ``own``, the harness's files (the timer's CUPTI buffer callbacks run on CUPTI's thread)."""
    me = threading.get_ident()
    frames = sys._current_frames()
    frames.pop(me)  # this frame, in its own local: a cycle that would keep every caller's locals (a call's inputs)
    for ident, frame in frames.items():
        if ident in known:
            continue
        stack = _stack(frame)
        if not stack[-1].f_code.co_filename.startswith(own):
            return _place(stack[0])
    return None


def _stack(frame: FrameType | None) -> list[FrameType]:
    """A thread's frames, from ``frame`` (the innermost) out to where it entered Python."""
    frames: list[FrameType] = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


def _place(frame: FrameType) -> str:
    return f"{frame.f_code.co_filename}, line {frame.f_lineno}"


def running_at(frame: FrameType | None, source: str, own: tuple[str, ...]) -> str:
    """Where a thread's Python runs, from its innermost ``frame``: the innermost frame in the module's own file
    (``source``), else the innermost outside the harness's files (``own``), else the innermost of all."""
    frames = _stack(frame)
    chosen = (next((f for f in frames if f.f_code.co_filename == source), None)
              or next((f for f in frames if not f.f_code.co_filename.startswith(own)), None)
              or (frames[0] if frames else None))
    return "no Python frame" if chosen is None else _place(chosen)


class LeftRunning(Exception):
    """A call that left a thread running; its message is the verdict's reason."""


class Watch:
    """Wraps an entry point: each call counts threads before and after, and ``after_close`` counts them again once
    the harness has closed the call's time. Both counts fall inside the call's time, so a trusted role (the
    reference, a baseline route) is wrapped too, with ``enforce`` off: it pays the same cost (on the CPU, where
    wall time is the measure, it is most of a small call's) and is never failed for a pool of its own."""

    def __init__(self, fn: Callable[..., object], role: str, enforce: bool = True) -> None:
        self.fn = fn
        self.role = role
        self.enforce = enforce
        self.before = census()
        self.countable = self.before.native is not None  # /proc lists this process's threads

    def __call__(self, *args: object) -> object:
        self.before = census()
        state = modes.read()
        out = self.fn(*args)
        more = grown(self.before, census(), self.countable)
        left = modes.changed(state, modes.read())
        if more is not None and self.enforce:
            raise LeftRunning(f"{self.role} left a thread running after returning ({more})")
        if left is not None and self.enforce:
            raise LeftRunning(f"{self.role} left {left} after returning (it would run in the harness's own "
                              "operations, after the clock)")
        return out

    def after_close(self) -> str | None:
        more = grown(self.before, census(), self.countable) if self.enforce else None
        return None if more is None else f"{self.role} started a thread that ran after its call ({more})"


def warm_pools() -> None:
    """Start the thread pools libraries start lazily, so an honest call's first parallel loop starts none: torch's
    OpenMP pool, and numpy's BLAS (OpenBLAS starts its threads when it loads: Triton's interpreter multiplies with
    numpy, and a first import inside a call read as a thread left running)."""
    if torch.get_num_threads() > 1:
        torch.ones(1 << 20).sum()  # above the parallel grain: OpenMP's pool starts here
    with contextlib.suppress(ImportError):
        numpy = importlib.import_module("numpy")
        numpy.ones((256, 256)) @ numpy.ones((256, 256))
