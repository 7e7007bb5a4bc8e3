"""Opens of process memory and of the worker's socket, refused at run time (arcengine.guard.child.opens): in a fresh
process, since an audit hook cannot be removed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from arcengine.guard.child import opens


@pytest.mark.parametrize("path", [
    "/proc/self/mem", "/proc/thread-self/mem", "/proc/1/mem", "/proc/self/task/1/mem", "/proc/self/fd/0",
    "/proc/self/fdinfo", "/proc/self/map_files/", "/dev/mem", "/dev/fd/0", "/proc/self/../self/mem",
])
def test_paths_that_reach_process_memory_or_descriptors_are_refused(path: str) -> None:
    assert opens._refused_open(path) is not None
    assert opens._refused_open(path.encode()) is not None


@pytest.mark.parametrize("path", ["/proc/self/maps", "/proc/self/status", "/proc/cpuinfo", "/tmp/memo", "/dev/null",
                                  "relative/mem"])
def test_ordinary_paths_pass(path: str) -> None:
    assert opens._refused_open(path) is None


def _run(body: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = "from arcengine.guard.child import opens\nopens.install()\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if k != opens.EXTRA_WRITABLE}, **(env or {})})


def test_a_computed_path_a_link_and_a_socket_descriptor_are_refused_and_remembered(tmp_path) -> None:
    done = _run(f"""
        import os, pathlib, socket
        attempts = []
        link = pathlib.Path({str(tmp_path)!r}) / "innocent"
        link.symlink_to("/proc/self/mem")
        left, right = socket.socketpair()
        for target in (pathlib.Path("/pr" + "oc") / "self" / ("m" + "em"), str(link), right.fileno()):
            try:
                open(target, "rb")
            except PermissionError as refused:
                attempts.append(str(refused))
        with open({str(tmp_path / "plain")!r}, "w") as handle:  # an ordinary file, and a descriptor of one
            handle.write("ok")
        with open(os.open({str(tmp_path / "plain")!r}, os.O_RDONLY)) as handle:
            assert handle.read() == "ok"
        print(len(attempts))
        print(opens.refusal())
    """)
    assert done.returncode == 0, done.stderr
    count, first = done.stdout.splitlines()
    assert count == "3"
    assert first == "opened /proc/self/mem, which reaches process memory or descriptors"


def test_descriptors_of_devices_and_event_counters_are_refused_and_files_pipes_and_null_are_not(tmp_path) -> None:
    """The GPU driver's descriptors (/dev/nvidia*, its event counters) break the device when written to; /dev/zero
    and an eventfd stand in for them here. subprocess opens its pipes by number."""
    done = _run(f"""
        import os
        with open(os.open(os.devnull, os.O_WRONLY), "wb") as sink:
            sink.write(b"fine")
        with open(os.open({str(tmp_path / "own")!r}, os.O_WRONLY | os.O_CREAT), "wb") as own:
            own.write(b"fine")
        with open(os.pipe()[1], "wb") as pipe:
            pipe.write(b"fine")
        for number in (os.open("/dev/zero", os.O_RDONLY), os.eventfd(0)):
            try:
                open(number, "wb", buffering=0)
            except PermissionError as refused:
                print(refused)
    """)
    assert done.returncode == 0, done.stderr
    zero, counter = done.stdout.splitlines()
    assert zero.endswith("/dev/zero (the harness's or the driver's)")
    assert "eventfd" in counter and counter.endswith("(the harness's or the driver's)")


def test_nothing_refused_leaves_no_reason() -> None:
    done = _run("open('/proc/self/status').read(); print(opens.refusal())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"


def test_writes_and_changes_outside_the_childs_own_folders_are_refused(tmp_path) -> None:
    own, elsewhere = tmp_path / "own", tmp_path / "site-packages"
    own.mkdir()
    elsewhere.mkdir()
    (elsewhere / "kept.py").write_text("")
    env = {name: str(own) for name in ("HOME", "TMPDIR")} | {"TRITON_CACHE_DIR": str(own / "triton")}
    done = _run(f"""
        import os, pathlib
        own, elsewhere = pathlib.Path({str(own)!r}), pathlib.Path({str(elsewhere)!r})
        (own / "cache.json").write_text("{{}}")  # its own folder: fine
        (own / "sub").mkdir()
        open(os.devnull, "w").write("x")
        print((elsewhere / "kept.py").read_text() == "")  # reading anywhere: fine
        attempts = [
            lambda: (elsewhere / "unjudged.py").write_text("import gc"),  # a module on the import path
            lambda: open(str(elsewhere / "x.pth"), "a"),
            lambda: (own / "cache.json").rename(elsewhere / "moved.py"),
            lambda: (elsewhere / "link.py").symlink_to(own / "cache.json"),
            lambda: (elsewhere / "kept.py").unlink(),
            lambda: (elsewhere / "made").mkdir(),
            lambda: (own / "out.py").symlink_to(elsewhere / "kept.py") or open(own / "out.py", "w"),
        ]
        for attempt in attempts:
            try:
                attempt()
                print("allowed")
            except PermissionError:
                print("refused")
        print(opens.refusal())
    """, env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:-1] == ["True"] + ["refused"] * 7
    assert lines[-1].startswith("a write of ") and "outside its own folders" in lines[-1]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["kept.py"]



def test_another_processs_proc_files_are_refused_and_its_own_are_not() -> None:
    own = os.getpid()
    assert opens._refused_open(f"/proc/{own}/status") is None
    assert opens._refused_open("/proc/self/status") is None
    assert opens._refused_open("/proc/cpuinfo") is None
    assert "another process" in (opens._refused_open(f"/proc/{os.getppid()}/environ") or "")
    assert "another process" in (opens._refused_open("/proc/1/cmdline") or "")
