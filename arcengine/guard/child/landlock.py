"""What an untrusted worker that builds C++ may write and read, enforced by the kernel for its native code too
(Landlock, Linux >= 5.13). Python candidates are held by the audit hook alone (guard/child/worker.py says why).

The audit hook (guard/child/opens.py) sees Python's opens; C++ built with ``load_inline`` calls libc below it. A
module or ``.pth`` file written into site-packages would run in the engine's next Python process, and a campaign's
database or event log could be rewritten. Landlock makes every process of the worker (its threads made after this,
compilers it starts) unable to create, write, truncate, move or remove anything outside the folders it is given,
and, where the kernel has network rules (ABI 4), to bind or connect TCP sockets: a kernel needs neither.

Reading stays open but for other processes' files under ``/proc``: ``/proc/<pid>/environ`` of the engine or of the
shell that started it holds the API keys, and any process of the same user may read it (root's workers are kept out
by their lost capabilities; other users' are not). The worker reads its own ``/proc/<pid>``; a compiler it starts
reads the rest of ``/proc`` but not its own process's files, which none needs.

Device files stay writable (``/dev/nvidia*`` are opened read-write), as does ``/dev/shm`` (semaphores of
multiprocessing, which torch.compile's worker pool uses), and this process's own ``/proc`` folder (CUDA's start
writes there: without it, it fails with "OS call failed"; native code reaches its own process anyway). Where
the kernel has no Landlock the call does nothing and says so; the hook still covers Python. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
from collections.abc import Iterable

# Syscall numbers: the same on x86-64 and aarch64 (allocated after the tables were unified).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
WRITE_FILE, READ_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 2, 1 << 4, 1 << 5
MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2 (links and renames across folders), ABI 3
_FILE_RIGHTS = WRITE_FILE | READ_FILE | TRUNCATE | 1  # what a rule on a file (not a folder) may grant (1: execute)
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
DEVICE_FOLDER, SHARED_MEMORY, PROCESSES = "/dev", "/dev/shm", "/proc"


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (older kernel, disabled, not Linux)."""
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return 0
    return max(int(syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))),
               0)


def writes_handled(version: int) -> int:
    """Every right that changes the file system, as far as this ABI knows them."""
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE
    return rights | (REFER if version >= 2 else 0) | (TRUNCATE if version >= 3 else 0)


def readable() -> list[str]:
    """Where files may be read: everything but other processes' folders under /proc (this one's is kept)."""
    tops = [os.path.join("/", name) for name in os.listdir("/") if name != PROCESSES.strip("/")]
    processes = [os.path.join(PROCESSES, name) for name in os.listdir(PROCESSES) if not name.isdigit()]
    return [*tops, *processes, os.path.join(PROCESSES, str(os.getpid()))]


def confine(folders: Iterable[str]) -> int:
    """Restrict this thread, and what it starts from now on, to writing under ``folders`` (made if missing) and
    to reading anything but other processes' /proc files; the ABI applied, or 0 where the kernel has no Landlock
    (nothing changed). Call while the process has one thread: a thread running already keeps its rights."""
    version = abi()
    if version <= 0:
        return 0
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    handled = writes_handled(version) | READ_FILE
    # struct landlock_ruleset_attr {u64 handled_access_fs; u64 handled_access_net;}: the ABI 4 size where known
    attr = struct.pack("QQ", handled, _NET_BIND_TCP | _NET_CONNECT_TCP) if version >= 4 else struct.pack("Q", handled)
    ruleset = int(syscall(_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        rules = [(folder, handled) for folder in folders if folder] + [(path, READ_FILE) for path in readable()]
        files = READ_FILE | WRITE_FILE | (TRUNCATE if version >= 3 else 0)
        # CUDA's start writes into its own process's /proc folder (without it: "OS call failed", H100)
        rules += [(DEVICE_FOLDER, files), (SHARED_MEMORY, handled), (os.path.join(PROCESSES, str(os.getpid())), files)]
        for folder, rights in rules:
            _allow(syscall, ruleset, folder, rights)
        if int(syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return version


def _allow(syscall: ctypes._CFuncPtr, ruleset: int, path: str, rights: int) -> None:
    """A rule: ``rights`` under ``path`` (a folder, made if missing where it may be written, or a file, which takes
    only file rights); one that cannot be made or opened gets none."""
    try:
        if rights != READ_FILE:
            os.makedirs(path, exist_ok=True)
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        rights &= _FILE_RIGHTS
    try:
        # struct landlock_path_beneath_attr {u64 allowed_access; s32 parent_fd;} __attribute__((packed))
        rule = struct.pack("=Qi", rights, fd)
        if int(syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.c_char_p(rule),
                       ctypes.c_uint32(0))) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
