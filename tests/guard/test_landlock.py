"""Native code's writes held to the child's folders by the kernel (arcengine.guard.child.landlock): a shell started
after the confinement, below any Python hook, in a fresh process (a confinement cannot be lifted)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from arcengine.guard.child import landlock

pytestmark = pytest.mark.skipif(landlock.abi() <= 0, reason="this kernel has no Landlock")


def _confined(allowed: Path, shell: str) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(f"""
        import subprocess, sys
        from arcengine.guard.child import landlock
        print(landlock.confine([{str(allowed)!r}]), flush=True)
        sys.exit(subprocess.run(["sh", "-c", {shell!r}]).returncode)
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


def test_a_shell_writes_inside_its_folder_and_nowhere_else(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "own", tmp_path / "engine"
    outside.mkdir()
    (outside / "campaign.db").write_text("records")
    done = _confined(allowed, f"echo ok > {allowed}/kernel.txt && cat /dev/null > /dev/null"
                              f" && ! echo x > {outside}/module.pth && ! echo x >> {outside}/campaign.db"
                              f" && ! rm {outside}/campaign.db && ! mv {outside}/campaign.db {allowed}/"
                              f" && ! ln {outside}/campaign.db {allowed}/link.db && ! mkdir {outside}/new")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[0]) == landlock.abi()
    assert (allowed / "kernel.txt").read_text() == "ok\n"
    assert sorted(path.name for path in outside.iterdir()) == ["campaign.db"]
    assert (outside / "campaign.db").read_text() == "records"


def test_the_rights_handled_grow_with_the_abi() -> None:
    assert landlock.writes_handled(1) & landlock.REFER == 0
    assert landlock.writes_handled(2) & landlock.REFER
    assert landlock.writes_handled(3) & landlock.TRUNCATE
    assert landlock.writes_handled(1) & landlock.WRITE_FILE


def test_tcp_is_refused_where_the_kernel_has_network_rules(tmp_path: Path) -> None:
    if landlock.abi() < 4:
        pytest.skip("this kernel's Landlock has no network rules")
    script = textwrap.dedent(f"""
        import socket
        from arcengine.guard.child import landlock
        landlock.confine([{str(tmp_path)!r}])
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=5)
        except PermissionError:
            print("refused")
        except OSError as error:
            print("reached", error)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "refused", done.stderr


def test_other_processes_files_under_proc_are_unreadable_and_its_own_are_not(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os
        from arcengine.guard.child import landlock
        parent = os.getppid()
        landlock.confine([{str(tmp_path)!r}])
        seen = []
        for path in ["/proc/self/status", "/proc/cpuinfo", f"/proc/{{parent}}/environ", f"/proc/{{parent}}/status"]:
            try:
                with open(path, "rb") as file:
                    file.read(1)
                seen.append("read")
            except PermissionError:
                seen.append("refused")
        with open("/proc/self/comm", "w") as name:  # CUDA's start writes into its own /proc folder
            name.write("probe")
        seen.append(open("/proc/self/comm").read().strip())
        print(" ".join(seen))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "ARCENGINE_CANARY_KEY": "sk-canary"})
    assert done.stdout.split() == ["read", "read", "refused", "refused", "probe"], done.stderr
