"""The zygote launcher: children forked from a warm parent judge like cold ones, fail like cold ones, and leave
no process behind; on CPU, with real processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from arcengine.guard import sandbox
from arcengine.guard.child import judge as child
from arcengine.guard.child import zygote
from arcengine.guard.sandbox import ChildLauncher, ChildOutcome, run_child
from tests.conftest import SCALE, scale_source

TIMING = {"warmup": 1, "min_reps": 3, "max_reps": 6, "target_rel_se": 0.02, "max_seconds_per_workload": 0.1}
WORKLOADS = [
    {"index": 0, "axes": {"N": 2048}, "held_out": False},
    {"index": 1, "axes": {"N": 777}, "held_out": True},
]
FAST = scale_source("return x * 2 + 1")
TRITON_FAST = """
import torch
import triton
import triton.language as tl


@triton.jit
def _affine(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + 1, mask=mask)


def run(x):
    y = torch.empty_like(x)
    _affine[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
"""
HANG_S = 8.0  # wall-clock budget for candidates that hang on purpose
LONG_S = 300.0  # budget for children that the test ends by other means


# ---------------------------------------------------------------- helpers


def _spec(path: Path) -> dict[str, Any]:
    return {
        "mode": "evaluate",
        "device": "cpu",
        "reference": str(SCALE / "reference.py"),
        "candidate": str(path),
        "incumbent": None,
        "workloads": WORKLOADS,
        "tolerance": {"atol": 1e-5, "rtol": 1e-5, "matched_ratio": 0.999},
        "seeds": [0, 1],
        "timing": TIMING,
    }


def _candidate(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def _verdict(outcome: ChildOutcome) -> dict[str, Any]:
    """Everything of an outcome that does not depend on timing."""
    result = outcome.result or {}
    return {
        "failure": outcome.failure(),
        "returncode": outcome.returncode,
        "ok": result.get("ok"),
        "correct": result.get("correct"),
        "reason": result.get("failure"),
        "stage": result.get("stage"),
        "workloads": [(w["index"], w["held_out"], w["correct"], w["max_abs_err"], w["matched_ratio"])
                      for w in result.get("workloads", [])],
        "device": (result.get("device") or {}).get("kind"),
    }


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting for a parent that does not reap (init in some containers)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def _pid_marker(path: Path) -> str:
    """Candidate lines that record this process's pid in `path` (written last, so a reader sees all of it)."""
    return (f"import os as _os\n_tmp = {str(path)!r} + '.tmp'\nopen(_tmp, 'w').write(str(_os.getpid()))\n"
            f"_os.replace(_tmp, {str(path)!r})\n")


async def _wait_for(check: Callable[[], bool], seconds: float = 120.0) -> None:
    with anyio.fail_after(seconds):
        while not check():
            await anyio.sleep(0.05)


# ---------------------------------------------------------------- verdicts


async def test_zygote_verdict_matches_cold_spawn(tmp_path: Path) -> None:
    candidates = {
        "fast": FAST,
        "wrong": scale_source("return x * 3 + 1"),
        "triton": TRITON_FAST,  # triton was imported in the zygote without TRITON_INTERPRET: read per child
    }
    async with ChildLauncher() as launcher:
        for name, source in candidates.items():
            spec = {**_spec(_candidate(tmp_path, name, source)), "input_salt": 7}  # the same inputs in both
            cold = await run_child(spec, device="cpu", timeout_s=LONG_S)
            warm = await run_child(spec, device="cpu", timeout_s=LONG_S, launcher=launcher)
            assert _verdict(warm) == _verdict(cold), name
            assert warm.result is not None and warm.returncode == 0 and not warm.timed_out
            assert warm.result["correct"] is (name != "wrong"), warm.result["failure"]
        assert launcher.launches == {"zygote": len(candidates)}
        assert launcher.cold_reason is None


async def test_profile_goes_through_the_zygote() -> None:
    async with ChildLauncher("auto") as launcher:
        outcome = await launcher.run({"mode": "profile", "device": "auto"}, device="auto", timeout_s=LONG_S)
        assert outcome.failure() is None and outcome.result is not None, outcome.stderr_tail
        assert outcome.result["ok"] and outcome.result["device"]["kind"] == "cpu"
        assert outcome.result["bandwidth_bytes_per_s"] > 0 and outcome.result["flops_per_s"] > 0
        assert launcher.launches == {"zygote": 1}


async def test_crashes_and_exits_are_outcomes(tmp_path: Path) -> None:
    sources = {
        "segfault": scale_source("import faulthandler\nfaulthandler._sigsegv()"),
        "sys_exit": scale_source("import sys\nsys.exit(3)"),
        "os_exit": scale_source("import os\nos._exit(7)"),
        "sigkill": scale_source("import os\nimport signal\nos.kill(os.getpid(), signal.SIGKILL)"),
        "raises": scale_source("raise ValueError('nope')"),
    }
    outcomes: dict[str, ChildOutcome] = {}

    async def judge(launcher: ChildLauncher, name: str) -> None:
        spec = _spec(_candidate(tmp_path, name, sources[name]))
        outcomes[name] = await launcher.run(spec, device="cpu", timeout_s=LONG_S)

    async with ChildLauncher() as launcher, anyio.create_task_group() as tasks:
        for name in sources:  # all at once: one zygote serves concurrent requests
            tasks.start_soon(judge, launcher, name)
    assert launcher.launches == {"zygote": len(sources)}

    # The candidate's worker dies; its judge lives on and says how.
    for name, error in (("segfault", "killed by signal 11 (SIGSEGV)"), ("sigkill", "killed by signal 9 (SIGKILL)"),
                        ("os_exit", "exited with code 7"), ("sys_exit", "SystemExit"), ("raises", "ValueError")):
        outcome = outcomes[name]
        assert outcome.failure() is None and outcome.returncode == 0 and outcome.result is not None
        assert outcome.result["correct"] is False and error in outcome.result["failure"], outcome.result


ATEXIT_FORGERY = """
import atexit
import json
import sys
from pathlib import Path

import torch

_RESULT = Path.cwd().parent / "result.json"


@atexit.register
def _forge() -> None:
    verdict = json.loads(_RESULT.read_text())
    verdict.update(correct=True, failure=None)
    _RESULT.write_text(json.dumps(verdict))


def run(x):
    sys.stdout = None  # the child's final flush raises, unless it cannot escape
    return torch.zeros_like(x)
"""


async def test_broken_stdout_cannot_reach_atexit_forgery(tmp_path: Path) -> None:
    spec = _spec(_candidate(tmp_path, "forge", ATEXIT_FORGERY))
    async with ChildLauncher() as launcher:
        for use in (None, launcher):
            outcome = await run_child(spec, device="cpu", timeout_s=LONG_S, launcher=use)
            assert outcome.returncode == 0 and outcome.result is not None, outcome.stderr_tail
            assert outcome.result["correct"] is False and "within atol" in outcome.result["failure"]


async def test_two_concurrent_requests_complete(tmp_path: Path) -> None:
    outcomes: list[ChildOutcome] = []

    async def judge(launcher: ChildLauncher, name: str) -> None:
        spec = _spec(_candidate(tmp_path, name, FAST))
        outcomes.append(await launcher.run(spec, device="cpu", timeout_s=LONG_S))

    async with ChildLauncher() as launcher:
        assert await launcher.start()
        zygote = launcher.zygote_pid
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(judge, launcher, "first")
            tasks.start_soon(judge, launcher, "second")
        assert launcher.zygote_pid == zygote and launcher.launches == {"zygote": 2}
    assert len(outcomes) == 2
    for outcome in outcomes:
        assert outcome.failure() is None and outcome.result is not None and outcome.result["correct"]


# ---------------------------------------------------------------- isolation


PROBE = """
import ctypes
import json
import os
import resource
import stat
import sys
import tempfile

limits = [list(resource.getrlimit(resource.RLIMIT_CPU)), list(resource.getrlimit(resource.RLIMIT_CORE))]
open_fds = []
for fd in range(256):
    try:
        os.fstat(fd)
        open_fds.append(fd)
    except OSError:
        pass
facts = {
    "pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "pgid": os.getpgid(0), "cwd": os.getcwd(),
    "sockets": [fd for fd in open_fds if stat.S_ISSOCK(os.fstat(fd).st_mode)],
    "env": dict(os.environ), "tempdir": tempfile.gettempdir(), "fds": open_fds,
    "stdio": [os.path.realpath(f"/proc/self/fd/{fd}") for fd in (0, 1)], "limits": limits, "argv": sys.argv,
    "main": getattr(sys.modules["__main__"], "__file__", None),
    "dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0),  # PR_GET_DUMPABLE: the zygote is not, its children are
}
import triton.knobs  # read at import in the zygote: its folders must follow the child's
facts["triton"] = [triton.knobs.cache.home_dir, triton.knobs.cache.dump_dir, triton.knobs.cache.override_dir]
open(OUT, "w").write(json.dumps(facts))


def run(x):
    return x * 2 + 1
"""


async def test_forked_child_is_isolated_like_a_cold_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCENGINE_TEST_API_KEY", "secret")  # the engine's secrets must not reach either child
    extra = {"TRITON_CACHE_DIR": str(tmp_path / "triton-cache")}
    facts: dict[str, dict[str, Any]] = {}
    async with ChildLauncher() as launcher:
        for via, use in (("cold", None), ("zygote", launcher)):
            out = tmp_path / f"{via}.json"
            spec = _spec(_candidate(tmp_path, via, f"OUT = {str(out)!r}\n" + PROBE))
            outcome = await run_child(spec, device="cpu", timeout_s=LONG_S, env_extra=extra, launcher=use)
            assert outcome.failure() is None and outcome.result and outcome.result["correct"], outcome.stderr_tail
            facts[via] = json.loads(out.read_text())
        assert launcher.launches == {"zygote": 1}
    cpu = sandbox._cpu_limit(LONG_S)
    for via, seen in facts.items():
        workdir = seen["cwd"]
        # In its judge's session, which the engine kills as a whole; its judge is its parent.
        assert seen["sid"] == seen["ppid"] == seen["pgid"] != seen["pid"], via
        assert seen["env"]["HOME"] == seen["env"]["TMPDIR"] == seen["tempdir"] == workdir, via
        assert Path(workdir).parent.name == "roles", via  # its worker's own folder (a random name)
        # Its own source's folder of the shared cache (the incumbent's is another).
        assert Path(seen["env"]["TRITON_CACHE_DIR"]).parent == Path(extra["TRITON_CACHE_DIR"]), via
        assert seen["env"]["TRITON_INTERPRET"] == "1", via
        assert "ARCENGINE_TEST_API_KEY" not in seen["env"], via
        # Its own socket to the judge, nothing else: not the zygote's pipes nor the other workers' sockets.
        assert seen["fds"][:3] == [0, 1, 2] and len(seen["fds"]) == 4 and len(seen["sockets"]) == 1, via
        assert seen["stdio"] == [os.devnull, os.devnull], via
        assert seen["limits"] == [[cpu, cpu], [0, 0]], via
        assert seen["argv"] == [child.__file__] and seen["main"] == child.__file__, via
        assert seen["dumpable"] == 1, via
        assert all(folder.startswith(workdir) for folder in seen["triton"]), (via, seen["triton"])
    cold, warm = facts["cold"], facts["zygote"]
    # Inductor writes its cache directory into the environment once it has chosen one (the cold child imports
    # torch._dynamo after its environment is set, the zygote before): either way it is in the child's own TMPDIR.
    own = ("HOME", "TMPDIR", "TRITON_HOME", "TORCHINDUCTOR_CACHE_DIR", "ARCENGINE_ROLE_HOMES", "TRITON_CACHE_DIR")
    for seen in facts.values():
        assert seen["env"].get("TORCHINDUCTOR_CACHE_DIR", seen["cwd"]).startswith(seen["cwd"])
    same = {key for key in cold["env"] if key not in own}
    assert {k: cold["env"][k] for k in same} == {k: warm["env"].get(k) for k in same}
    assert set(warm["env"]) - set(own) == set(cold["env"]) - set(own)


async def test_variables_read_at_import_force_a_cold_spawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    spec = _spec(_candidate(tmp_path, "fast", FAST))
    async with ChildLauncher() as launcher:
        outcome = await launcher.run(spec, device="cpu", timeout_s=LONG_S, env_extra={"OMP_NUM_THREADS": "1"})
        assert outcome.failure() is None and outcome.result and outcome.result["correct"]
        assert launcher.launches == {"cold": 1}  # the zygote's OpenMP already read the variable
        outcome = await launcher.run(spec, device="cpu", timeout_s=LONG_S, env_extra={"CUDA_VISIBLE_DEVICES": "0"})
        assert outcome.failure() is None and launcher.launches == {"cold": 1, "zygote": 1}


# ---------------------------------------------------------------- timeouts and dead zygotes


async def test_timeout_kills_the_childs_whole_group(tmp_path: Path) -> None:
    grandchild = tmp_path / "grandchild.pid"
    leader = tmp_path / "child.pid"
    # The helper starts in the call that hangs: a process left after a call that returns fails it at once.
    source = f"""
import os
import time
{_pid_marker(leader)}

def run(x):
    if os.fork() == 0:  # a helper that outlives everything unless its group is killed
        open({str(grandchild)!r}, "w").write(str(os.getpid()))
        while True:
            time.sleep(1)
    while True:
        time.sleep(0.05)
"""
    async with ChildLauncher() as launcher:
        outcome = await launcher.run(_spec(_candidate(tmp_path, "hang", source)), device="cpu", timeout_s=HANG_S)
        assert launcher.launches == {"zygote": 1} and launcher.zygote_pid is not None  # the zygote itself lives on
        assert outcome.timed_out and outcome.returncode is None and outcome.result is None
        assert "timed out" in (outcome.failure() or "")
        pids = [int(leader.read_text()), int(grandchild.read_text())]
        await _wait_for(lambda: all(_gone(pid) for pid in pids), 30)  # before the zygote's shutdown could do it


async def test_dead_zygote_is_a_failed_outcome_then_replaced(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    source = _pid_marker(marker) + "\nimport time\n\n\ndef run(x):\n    while True:\n        time.sleep(0.05)\n"
    spec = _spec(_candidate(tmp_path, "hang", source))
    outcomes: list[ChildOutcome] = []

    async def judge(launcher: ChildLauncher) -> None:
        outcomes.append(await launcher.run(spec, device="cpu", timeout_s=LONG_S))

    async with ChildLauncher() as launcher:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(judge, launcher)
            await _wait_for(marker.exists)
            zygote = launcher.zygote_pid
            assert zygote is not None
            os.kill(zygote, signal.SIGKILL)
        (outcome,) = outcomes
        assert not outcome.timed_out and outcome.result is None
        assert "zygote" in (outcome.failure() or ""), outcome.failure()
        await _wait_for(lambda: _gone(int(marker.read_text())), 30)

        fine = await launcher.run(_spec(_candidate(tmp_path, "fast", FAST)), device="cpu", timeout_s=LONG_S)
        assert fine.failure() is None and fine.result and fine.result["correct"]
        assert launcher.zygote_pid not in (None, zygote)  # restarted, not fallen back to cold
        assert launcher.launches == {"zygote": 2}


async def test_no_zygote_or_child_survives_the_launcher(tmp_path: Path) -> None:
    async with ChildLauncher() as launcher:
        outcome = await launcher.run(_spec(_candidate(tmp_path, "fast", FAST)), device="cpu", timeout_s=LONG_S)
        assert outcome.failure() is None
        zygote = launcher.zygote_pid
        assert zygote is not None and not _gone(zygote)
    assert launcher.zygote_pid is None
    assert _gone(zygote)


async def test_cancelled_engine_kills_zygote_and_child(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    source = _pid_marker(marker) + "\nimport time\n\n\ndef run(x):\n    while True:\n        time.sleep(0.05)\n"
    spec = _spec(_candidate(tmp_path, "hang", source))
    zygotes: list[int | None] = []

    async def engine() -> None:
        async with ChildLauncher() as launcher, anyio.create_task_group() as workers:
            workers.start_soon(lambda: launcher.run(spec, device="cpu", timeout_s=LONG_S))
            await _wait_for(marker.exists)
            zygotes.append(launcher.zygote_pid)
            await anyio.sleep_forever()

    with anyio.move_on_after(LONG_S) as scope:
        async with anyio.create_task_group() as engine_tasks:
            engine_tasks.start_soon(engine)
            await _wait_for(lambda: bool(zygotes))
            engine_tasks.cancel_scope.cancel()
    assert not scope.cancelled_caught
    (zygote,) = zygotes
    assert zygote is not None and _gone(zygote)
    assert _gone(int(marker.read_text()))


ENGINE = """
import sys
from pathlib import Path

import anyio

from arcengine.guard.sandbox import ChildLauncher

SPEC, ZYGOTE = json.loads(sys.argv[1]), Path(sys.argv[2])


async def main() -> None:
    async with ChildLauncher() as launcher:
        assert await launcher.start()
        ZYGOTE.write_text(str(launcher.zygote_pid))
        await launcher.run(SPEC, device="cpu", timeout_s=300)

anyio.run(main)
"""


async def test_killed_engine_takes_zygote_and_child_with_it(tmp_path: Path) -> None:
    marker, zygote_file = tmp_path / "child.pid", tmp_path / "zygote.pid"
    source = _pid_marker(marker) + "\nimport time\n\n\ndef run(x):\n    while True:\n        time.sleep(0.05)\n"
    spec = _spec(_candidate(tmp_path, "hang", source))
    engine = await anyio.open_process(
        [sys.executable, "-c", "import json\n" + ENGINE, json.dumps(spec), str(zygote_file)],
        cwd=Path(__file__).resolve().parents[2], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp_path)},  # what a killed engine leaves
    )
    try:
        await _wait_for(marker.exists)
        engine.kill()  # no clean-up code runs: the zygote and the child must notice on their own
        await engine.wait()
        zygote, child_pid = int(zygote_file.read_text()), int(marker.read_text())
        await _wait_for(lambda: _gone(zygote) and _gone(child_pid), 30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            engine.kill()
        await engine.wait()


# ---------------------------------------------------------------- fallback


@pytest.mark.parametrize("command", [
    "import sys; sys.exit(3)",  # dies before saying hello
    "import json; print(json.dumps({'event': 'ready', 'pid': 0}), flush=True); input()",  # not who it says
    "import json, os; print(json.dumps({'event': 'ready', 'pid': os.getpid(), 'cuda_initialized': True}),"
    " flush=True); input()",  # forking now would break CUDA in every child
    "import json, os; print(json.dumps({'event': 'ready', 'pid': os.getpid(), 'cuda_driver_initialized': True}),"
    " flush=True); input()",  # cuInit ran (say, a library initialised the driver at import)
])
async def test_zygote_that_cannot_serve_falls_back_to_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setattr(sandbox, "_zygote_command", lambda: [sys.executable, "-c", command])
    spec = _spec(_candidate(tmp_path, "fast", FAST))
    async with ChildLauncher(start_timeout_s=60) as launcher:
        for _ in range(2):
            outcome = await launcher.run(spec, device="cpu", timeout_s=LONG_S)
            assert outcome.failure() is None and outcome.result and outcome.result["correct"]
        assert launcher.launches == {"cold": 2} and launcher.zygote_pid is None
        assert launcher.cold_reason is not None


def test_a_mapped_but_uninitialised_driver_does_not_stop_forking() -> None:
    # torch builds that link the driver map it at import; only an initialised driver makes fork unsafe
    hello = {"event": "ready", "pid": 7, "libcuda_loaded": True, "cuda_driver_initialized": False}
    assert sandbox._refusal(hello, 7) is None
    assert zygote._driver_initialized() is False  # this process never ran cuInit


async def test_launcher_must_be_entered(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="async with"):
        await ChildLauncher().run(_spec(_candidate(tmp_path, "fast", FAST)), device="cpu", timeout_s=LONG_S)


async def test_a_process_native_code_sent_out_of_the_childs_group_fails_it_and_dies(tmp_path: Path) -> None:
    # C++ (allowed through load_inline) can fork and take a session of its own, leaving the group the engine kills;
    # its parent gone, the orphan is reparented to the judge, a subreaper, which fails the candidate and kills it
    # (the zygote, a subreaper too, would kill it if the judge were gone).
    marker = tmp_path / "escaped.pid"
    source = textwrap.dedent(f'''
        from torch.utils.cpp_extension import load_inline

        _SOURCE = r"""
        #include <unistd.h>
        #include <cstdio>
        torch::Tensor scale(torch::Tensor x) {{
          static bool started = false;
          if (!started) {{
            started = true;
            if (fork() == 0) {{
              setsid();
              if (fork() == 0) {{
                FILE* f = fopen("{marker}.tmp", "w");
                fprintf(f, "%d", getpid());
                fclose(f);
                rename("{marker}.tmp", "{marker}");
                sleep(600);
              }}
              _exit(0);
            }}
            while (access("{marker}", F_OK) != 0) usleep(1000);  // returns once the escaped process runs
          }}
          return x * 2 + 1;
        }}
        """
        _MODULE = load_inline("arcengine_escape_test", cpp_sources=[_SOURCE], functions=["scale"])


        def run(x):
            return _MODULE.scale(x)
    ''')
    async with ChildLauncher() as launcher:
        outcome = await run_child(_spec(_candidate(tmp_path, "escape", source)), device="cpu", timeout_s=LONG_S,
                                  launcher=launcher)
        assert outcome.result is not None and outcome.result["correct"] is False, outcome.stderr_tail
        assert "left a process running after its call" in outcome.result["failure"]
        escaped = int(marker.read_text())
        await _wait_for(lambda: _gone(escaped), 10.0)  # while the zygote still serves
