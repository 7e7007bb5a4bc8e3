"""A worker's confinement (arcengine.guard.child.confine), in real processes: no capabilities, and a seccomp filter
that kills it at a call aimed at a protected process while its own processes stay its to manage."""

from __future__ import annotations

import platform
import signal
import subprocess
import sys
import textwrap

import pytest

from arcengine.guard.child import confine

pytestmark = pytest.mark.skipif(sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"),
                                reason="Linux on x86-64 or aarch64")


def _confined(body: str) -> subprocess.CompletedProcess[str]:
    """``body`` run in a fresh process after it drops its capabilities and shields a sleeping sibling (``sibling``)
    and its parent."""
    script = textwrap.dedent("""
        import os, signal, subprocess, sys, time
        from arcengine.guard.child import confine
        # It ends when this process does (its stdin closes): nothing here may kill it.
        sibling = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        print("dropped", confine.drop_capabilities(), flush=True)
        print("shielded", confine.shield([os.getppid(), sibling.pid]), flush=True)
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)


def test_no_capability_is_left() -> None:
    done = _confined("""
        print([line for line in open("/proc/self/status") if line.startswith(("CapEff", "CapPrm", "CapBnd"))])
    """)
    assert "dropped True" in done.stdout, done.stderr
    for field in ("CapEff:\\t0000000000000000", "CapPrm:\\t0000000000000000", "CapBnd:\\t0000000000000000"):
        assert field in done.stdout


@pytest.mark.parametrize("attack", [
    "os.kill(sibling.pid, signal.SIGSTOP)",
    "os.setpriority(os.PRIO_PROCESS, sibling.pid, 19)",
    "os.kill(0, signal.SIGCONT)",  # its process group: the judge's
    "os.sched_setaffinity(sibling.pid, {0})",
    "open(f'/proc/{os.getppid()}/mem', 'rb').read(1)",  # refused by the kernel without CAP_SYS_PTRACE, not killed
])
def test_a_call_aimed_at_a_protected_process_kills_the_caller(attack: str) -> None:
    done = _confined(f"""
        try:
            {attack}
        except OSError as exc:
            print("refused", exc.errno, flush=True)
        print("survived", flush=True)
    """)
    assert "shielded True" in done.stdout, done.stderr
    if "/mem" in attack:
        assert "refused" in done.stdout and "survived" in done.stdout
    else:
        assert done.returncode == -signal.SIGSYS and "survived" not in done.stdout


def test_its_own_processes_and_itself_are_its_own() -> None:
    done = _confined("""
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        os.setpriority(os.PRIO_PROCESS, child.pid, 5)
        child.kill()
        child.wait()
        os.setpriority(os.PRIO_PROCESS, 0, 1)
        os.kill(os.getpid(), 0)
        print("managed", subprocess.run(["true"]).returncode, flush=True)
    """)
    assert "managed 0" in done.stdout, done.stderr


def test_every_jump_of_the_filter_lands_inside_it() -> None:
    audit_arch, _, numbers = confine._ARCHES["x86_64"]
    program = confine.program_for(audit_arch, numbers, [101, 202, 303])
    assert program[-1] == (0x06, 0, 0, 0x7FFF0000)  # what no rule refuses is allowed
    for index, (code, jt, jf, _) in enumerate(program):
        if code & 0x07 == 0x05:  # a jump
            assert index + 1 + max(jt, jf) < len(program) and max(jt, jf) < 256
