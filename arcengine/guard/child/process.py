"""Process hardening shared by the zygote, the judge and its workers: Linux's prctl and the descriptor limit.

Standard library only: the zygote imports this before anything heavy.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Collection, Iterator
from types import FrameType
from typing import Any, NoReturn

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _lookup_prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _lookup_prctl()  # looked up before any fork: a forked child should not need the dynamic loader


def prctl(option: int, value: int) -> bool:
    """Linux's prctl, best effort (a hardening, never the guard's only line); False where it is missing."""
    if _PRCTL is None:
        return False
    return int(_PRCTL(option, value, 0, 0, 0)) == 0


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` now: from /proc/PID/task/*/children where the kernel keeps it, else by
    reading every process's parent."""
    try:
        found: list[int] = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                found += [int(kid) for kid in children.read().split()]
        return found
    except FileNotFoundError:
        return [child for child, parent in _parents().items() if parent == pid]
    except (OSError, ValueError):
        return []


def descendants_of(pid: int) -> list[int]:
    """Children, grandchildren...: a process tree as it stands (it may change while it is read)."""
    found, frontier = [], [pid]
    while frontier:
        kids = children_of(frontier.pop())
        found += kids
        frontier += kids
    return found


def left_running(worker: int, judge: int, workers: Collection[int]) -> list[str]:
    """Processes still running that untrusted code started: the worker's descendants, and the judge's children
    that are no worker (orphans, which the judge adopts as a subreaper). Zombies are left out: they run nothing.
    Each as "PID (command)"."""
    suspects = descendants_of(worker) + [kid for kid in children_of(judge) if kid not in workers]
    return [f"{pid} ({name})" for pid in suspects if (name := _live_name(pid)) is not None]


def kill_tree(pid: int) -> None:
    """SIGKILL a process and every descendant of it, the descendants first (so none is orphaned on the way)."""
    for kid in reversed(descendants_of(pid)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(kid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _live_name(pid: int) -> str | None:
    """A process's command name, or None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            head, _, tail = stat.read().rpartition(")")
    except OSError:
        return None
    state = tail.split()[0] if tail.split() else "?"
    return None if state in ("Z", "X") else head.partition("(")[2]


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError), open(
                    f"/proc/{entry}/stat", encoding="ascii") as stat:
                parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
    return parents


@contextlib.contextmanager
def alarm(seconds: float, expire: Callable[[], None]) -> Iterator[None]:
    """Call ``expire`` (which raises, to stop what the block is doing) after ``seconds`` of the block, in the main
    thread, where signals are delivered: the caller must be in it."""

    def handler(signum: int, frame: FrameType | None) -> None:
        expire()

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def max_fd() -> int:
    """One past the highest descriptor a process may have open, for closing all of them."""
    try:
        return max(int(os.sysconf("SC_OPEN_MAX")), 256)
    except (ValueError, OSError):
        return 65536


def exit_now(code: int) -> NoReturn:
    """Flush and leave without interpreter teardown.

    Atexit hooks registered by candidate code and a CUDA context that the candidate may have killed must not
    turn a written verdict into a crash, or into a forged one: a candidate that broke sys.stdout must not get
    an exception out of here, and with it the interpreter's exit and its atexit hooks.
    """
    with contextlib.suppress(BaseException):  # nothing a broken stream raises may stop the exit
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
