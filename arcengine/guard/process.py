"""Process hardening shared by the zygote, the judge and its workers: Linux's prctl and the descriptor limit.

Standard library only: the zygote imports this before anything heavy.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from typing import Any, NoReturn

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
