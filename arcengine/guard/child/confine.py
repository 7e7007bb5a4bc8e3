"""What a worker's process may do to the processes judging it: nothing, whatever its code (native code included).

Two kernel mechanisms, set before any module of a role is imported and inherited by everything it starts:

- ``drop_capabilities``: no capabilities, now or after an exec (no-new-privileges). As root, CAP_SYS_PTRACE would
  let a worker read or write its judge's memory (the token that authenticates a result) although the judge is
  not dumpable; without capabilities, root is held to the rules of any other user.
- ``shield``: a seccomp filter that kills the process (SIGSYS, which the judge names) at a system call that reaches
  another process (signals, ptrace, reading or writing its memory, its priority, CPU set, scheduling or limits)
  when it names a protected process (the judge, the warm parent, the other workers) or a process group, and at
  ptrace and cross-process memory access whatever they name. Honest kernels make none of these calls; a compiler
  a call runs (ptxas, nvcc) inherits the filter and needs none either. An attempt is a verdict, not an error
  the code could step around. Threads of a protected process other than its first are not named here: a worker
  does its work on its first thread.

Linux on x86-64 and aarch64; elsewhere both are skipped (best effort, as the rest of the process hardening).
Standard library only.
"""

from __future__ import annotations

import ctypes
import platform
import struct
from collections.abc import Collection

from arcengine.guard.child import process

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522
_LAST_CAPABILITY = 63

# (AUDIT_ARCH, the seccomp syscall's number, the numbers of the calls the filter looks at)
_ARCHES = {
    "x86_64": (0xC000003E, 317, {
        "kill": 62, "tkill": 200, "tgkill": 234, "ptrace": 101, "setpriority": 141, "sched_setparam": 142,
        "sched_setscheduler": 144, "sched_setaffinity": 203, "ioprio_set": 251, "migrate_pages": 256,
        "move_pages": 279, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "prlimit64": 302,
        "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "sched_setattr": 314,
        "pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440}),
    "aarch64": (0xC00000B7, 277, {
        "kill": 129, "tkill": 130, "tgkill": 131, "ptrace": 117, "setpriority": 140, "sched_setparam": 118,
        "sched_setscheduler": 119, "sched_setaffinity": 122, "ioprio_set": 30, "migrate_pages": 238,
        "move_pages": 239, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "prlimit64": 261,
        "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "sched_setattr": 274,
        "pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440}),
}
ALWAYS_REFUSED = ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "tkill", "pidfd_getfd",
                  "process_madvise")
# Calls whose first argument names a process (a process group, where it is 0 or negative, for kill).
FIRST_ARGUMENT_PID = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal",
                      "prlimit64", "sched_setaffinity", "sched_setparam", "sched_setscheduler", "sched_setattr",
                      "migrate_pages", "move_pages")
# (which, who) calls: only "which = a process" may pass, and not for a protected one.
WHICH_WHO = {"setpriority": 0, "ioprio_set": 1}  # PRIO_PROCESS, IOPRIO_WHO_PROCESS

_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL = 0x7FFF0000, 0x80000000  # SECCOMP_RET_KILL_PROCESS: every thread, at once
KILLED_FOR = "a system call that reaches a process of the guard (a signal, ptrace, its memory or priority)"
_X32_BIT = 0x40000000  # x86-64's x32 calls: another numbering, refused


def drop_capabilities() -> bool:
    """Give up every capability, for good; False where the kernel refused (then nothing was held, usually)."""
    process.prctl(PR_SET_NO_NEW_PRIVS, 1)
    for capability in range(_LAST_CAPABILITY + 1):
        process.prctl(PR_CAPBSET_DROP, capability)  # fails past the kernel's last one: harmless
    process.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    try:
        capset = ctypes.CDLL(None, use_errno=True).capset
    except (OSError, AttributeError):
        return False
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    nothing = bytes(24)  # two (effective, permitted, inheritable) sets of 32 bits each, all clear
    return int(capset(ctypes.c_char_p(header), ctypes.c_char_p(nothing))) == 0


def shield(protected: Collection[int]) -> bool:
    """Install the filter for this process's every thread; False where it could not be (unknown arch, no
    seccomp)."""
    arch = _ARCHES.get(platform.machine())
    if arch is None or not process.prctl(PR_SET_NO_NEW_PRIVS, 1):
        return False
    audit_arch, seccomp_number, numbers = arch
    program = b"".join(struct.pack("HBBI", *op) for op in program_for(audit_arch, numbers, sorted(set(protected))))
    buffer = ctypes.create_string_buffer(program)
    fprog = struct.pack("HxxxxxxP", len(program) // 8, ctypes.addressof(buffer))
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return False
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog): every thread, not only this one
    return int(syscall(seccomp_number, 1, 1, ctypes.c_char_p(fprog))) == 0


Op = tuple[int, int, int, int]


def program_for(audit_arch: int, numbers: dict[str, int], protected: list[int]) -> list[Op]:
    """The classic BPF program: wrong architecture or x32 numbering refused, then one block per watched call."""
    ops: list[Op] = [(_LD_ABS, 0, 0, 4), (_JEQ, 1, 0, audit_arch), (_RET, 0, 0, _KILL), (_LD_ABS, 0, 0, 0)]
    if audit_arch == _ARCHES["x86_64"][0]:
        ops += [(_JGE, 0, 1, _X32_BIT), (_RET, 0, 0, _KILL)]
    for name, number in numbers.items():
        body = _body(name, protected)
        ops += [(_LD_ABS, 0, 0, 0), (_JEQ, 0, len(body), number), *body]
    return [*ops, (_RET, 0, 0, _ALLOW)]


_REFUSE = -1  # a jump to the block's final "refuse", resolved once the block's length is known


def _body(name: str, protected: list[int]) -> list[Op]:
    """What happens once the call is ``name``: refused, or refused when it names a protected process."""
    if name in ALWAYS_REFUSED:
        return [(_RET, 0, 0, _KILL)]
    which = WHICH_WHO.get(name)
    ops: list[Op] = []
    if which is not None:  # (which, who): only "which = a process" passes, its "who" checked below
        ops += [(_LD_ABS, 0, 0, 16), (_JEQ, 0, _REFUSE, which), (_LD_ABS, 0, 0, 24)]
    else:
        ops += [(_LD_ABS, 0, 0, 16)]
    if name == "kill":  # a process group (0 or negative), or every process (-1)
        ops += [(_JSET, _REFUSE, 0, 0x80000000), (_JEQ, _REFUSE, 0, 0)]
    ops += [(_JEQ, _REFUSE, 0, pid) for pid in protected]
    ops += [(_RET, 0, 0, _ALLOW)]
    refuse = len(ops)
    resolved = [(code, refuse - i - 1 if jt == _REFUSE else jt, refuse - i - 1 if jf == _REFUSE else jf, k)
                for i, (code, jt, jf, k) in enumerate(ops)]
    return [*resolved, (_RET, 0, 0, _KILL)]
