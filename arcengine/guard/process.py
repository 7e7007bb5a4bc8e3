"""Process hardening shared by the zygote, the judge and its workers: Linux's prctl and the descriptor limit.

Standard library only: the zygote imports this before anything heavy.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


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


def max_fd() -> int:
    """One past the highest descriptor a process may have open, for closing all of them."""
    try:
        return max(int(os.sysconf("SC_OPEN_MAX")), 256)
    except (ValueError, OSError):
        return 65536
