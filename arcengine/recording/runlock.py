"""One writer per run folder: an exclusive ``flock`` on ``RUN_DIR/run.lock``, held while a campaign writes the folder.

The kernel releases the lock when the holder's process ends, however it ends (killed, crashed, power lost), so no
stale lock is ever left to clear by hand. The file also says who holds it and, after the user stopped the campaign
(Ctrl-C, q in the terminal UI), that it was stopped rather than crashed (``arcengine runs`` shows which).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from arcengine.domain.errors import UserError

LOCK_NAME = "run.lock"


class RunBusy(UserError):
    """Another process writes the run folder: a second writer would cut the first one's lines."""


class RunLock:
    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, run_dir: Path) -> RunLock:
        """The folder's lock, or RunBusy at once (never a wait: the other writer may run for hours)."""
        path = run_dir / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read(fd).get("pid")
            os.close(fd)
            raise RunBusy(f"{run_dir} is being written by another arcengine process"
                          + (f" (pid {pid})" if pid else "") + "; wait for it to stop, or stop it first") from None
        except BaseException:
            os.close(fd)
            raise
        lock = cls(path, fd)
        lock.mark("running")
        return lock

    def mark(self, state: str) -> None:
        """Record the holder and the state it leaves the folder in (``running``, or ``stopped`` by the user)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):  # a full disk must not hide the error that brought us here
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, (json.dumps({"pid": os.getpid(), "state": state}) + "\n").encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


def locked(run_dir: Path) -> bool:
    """Whether a live process holds the folder's lock (a folder without a lock file: no)."""
    try:
        fd = os.open(run_dir / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the shared lock just taken
    return False


def holder(run_dir: Path) -> dict[str, Any]:
    """What the lock file says: the last holder's pid and the state it left (empty where there is none)."""
    try:
        fd = os.open(run_dir / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return {}
    try:
        return _read(fd)
    finally:
        os.close(fd)


def _read(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
