"""Where an untrusted worker may write, enforced by the kernel for its native code too (Landlock, Linux >= 5.13).

The audit hook (guard/child/opens.py) sees Python's opens; C++ built with ``load_inline`` calls libc below it. A
module or ``.pth`` file written into site-packages would run in the engine's next Python process, and a campaign's
database or event log could be rewritten. Landlock makes every process of the worker (its threads made after this,
compilers it starts) unable to create, write, truncate, move or remove anything outside the folders it is given,
and, where the kernel has network rules (ABI 4), to bind or connect TCP sockets: a kernel needs neither.

Device files stay writable (``/dev/nvidia*`` are opened read-write), as does ``/dev/shm`` (semaphores of
multiprocessing, which torch.compile's worker pool uses). Reading is left alone. Where the kernel has no Landlock
the call does nothing and says so; the hook still covers Python. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterable

# Syscall numbers: the same on x86-64 and aarch64 (allocated after the tables were unified).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2 (links and renames across folders), ABI 3
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
DEVICE_FOLDER, SHARED_MEMORY = "/dev", "/dev/shm"


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


def confine_writes(folders: Iterable[str]) -> int:
    """Restrict this thread, and what it starts from now on, to writing under ``folders`` (made if missing);
    the ABI applied, or 0 where the kernel has no Landlock (nothing changed). Call while the process has one
    thread: a thread running already keeps its rights."""
    version = abi()
    if version <= 0:
        return 0
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    handled = writes_handled(version)
    # struct landlock_ruleset_attr {u64 handled_access_fs; u64 handled_access_net;}: the ABI 4 size where known
    attr = struct.pack("QQ", handled, _NET_BIND_TCP | _NET_CONNECT_TCP) if version >= 4 else struct.pack("Q", handled)
    ruleset = int(syscall(_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        rules = [(folder, handled) for folder in folders if folder]
        rules += [(DEVICE_FOLDER, WRITE_FILE | (TRUNCATE if version >= 3 else 0)), (SHARED_MEMORY, handled)]
        for folder, rights in rules:
            _allow(syscall, ruleset, folder, rights)
        if int(syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return version


def _allow(syscall: ctypes._CFuncPtr, ruleset: int, folder: str, rights: int) -> None:
    """A rule: ``rights`` under ``folder``; a folder that cannot be made or opened gets none (writes there fail)."""
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(folder, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
    except OSError:
        return
    try:
        # struct landlock_path_beneath_attr {u64 allowed_access; s32 parent_fd;} __attribute__((packed))
        rule = struct.pack("=Qi", rights, fd)
        if int(syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.c_char_p(rule),
                       ctypes.c_uint32(0))) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {folder}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
