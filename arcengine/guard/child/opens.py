"""Opens that reach a process's memory or the worker's socket, refused at run time in untrusted workers.

The gate refuses such paths where they are spelled as constants. A path computed at run time (``"/pr" + "oc"``, a
``pathlib`` join, a symlink the module made) reaches the same file through the same call: ``/proc/self/mem``
opened for writing patches the worker's own timer and reply, and ``open(fd)`` of the worker's socket speaks for
the harness. An audit hook (PEP 578) sees every Python-level open whatever its spelling, and a hook cannot be
removed. It raises, and keeps the first refusal, so the role fails even where the module caught the error.
Native code opens through libc, below any hook: it is contained, not checked (docs/guard.md).
"""

from __future__ import annotations

import os
import re
import stat
import sys

# A process's memory, its descriptors and mapped files, under any pid, /proc/self or a thread's task folder; and
# physical memory.
PROCESS_MEMORY = re.compile(r"^/(proc/[^/]+(/task/[^/]+)?/(mem|fd|fdinfo|map_files)|dev/(mem|kmem|port))(/|$)")

_refused: list[str] = []


def install() -> None:
    """Refuse such opens in this process from now on; call before any untrusted module is imported."""
    sys.addaudithook(_hook)


def refusal() -> str | None:
    """The first refused open, as a failure reason, if any."""
    return _refused[0] if _refused else None


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event != "open" or not args:
        return
    reason = _refused_open(args[0])
    if reason is not None:
        _refused.append(reason)
        raise PermissionError(reason)


def _refused_open(target: object) -> str | None:
    if isinstance(target, int):
        try:
            socket = stat.S_ISSOCK(os.fstat(target).st_mode)
        except OSError:
            return None
        return f"opened descriptor {target}, a socket (the worker's channel to the judge)" if socket else None
    if not isinstance(target, str | bytes | os.PathLike):
        return None
    path = os.fsdecode(target)
    if any(PROCESS_MEMORY.match(form) for form in _forms(path)):
        return f"opened {path}, which reaches process memory or descriptors"
    return None


def _forms(path: str) -> tuple[str, ...]:
    """The path as written, with its folder's links resolved (/proc/self/fd/N names its descriptor, not the file
    it points to), and fully resolved (a link the module made)."""
    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    return absolute, os.path.join(os.path.realpath(folder), name), os.path.realpath(absolute)
