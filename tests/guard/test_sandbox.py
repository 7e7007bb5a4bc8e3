"""The sandbox around a guard child: environment, network and process-group isolation (real processes)."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import anyio
import pytest
import torch  # noqa: F401  (this process big enough that a fork of it shares hundreds of megabytes)

from arcengine.guard import sandbox
from arcengine.guard.sandbox import ChildLauncher, network_isolation, scrubbed_environment
from arcengine.guard.turns import DeviceTurns
from tests.conftest import SCALE, scale_source


def _spec(candidate: Path) -> dict[str, object]:
    return {
        "mode": "evaluate", "device": "cpu", "reference": str(SCALE / "reference.py"), "candidate": str(candidate),
        "incumbent": None, "workloads": [{"index": 0, "axes": {"N": 64}, "held_out": False}],
        "tolerance": {"atol": 1e-5, "rtol": 1e-5, "matched_ratio": 0.999}, "seeds": [0],
        "timing": {"warmup": 1, "min_reps": 2, "max_reps": 3},
    }


def test_environment_keeps_no_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-canary")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "canary")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    env = scrubbed_environment("cpu", tmp_path)
    assert "ANTHROPIC_API_KEY" not in env and "MY_SERVICE_TOKEN" not in env
    assert "canary" not in "".join(env.values())
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["TRITON_INTERPRET"] == "1"
    assert env["HOME"] == str(tmp_path)


@pytest.mark.skipif(not network_isolation(), reason="this user cannot create a network namespace")
@pytest.mark.parametrize("zygote", [True, False])
async def test_child_has_no_network(tmp_path: Path, zygote: bool) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    connections: list[object] = []
    server.settimeout(30)
    listener = threading.Thread(target=lambda: connections.append(_accept(server)), daemon=True)
    listener.start()
    candidate = tmp_path / "net.py"
    candidate.write_text(scale_source(
        f"import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5)\nreturn x * 2 + 1",
        imports="import torch"))
    async with ChildLauncher("cpu", use_zygote=zygote) as launcher:
        outcome = await launcher.run(_spec(candidate), device="cpu", timeout_s=120)
    server.close()
    assert outcome.result is not None, outcome.stderr_tail
    assert not outcome.result["correct"]
    failure = outcome.result["failure"].lower()  # no route (the namespace), or refused first (Landlock's TCP rule)
    assert any(why in failure for why in ("unreachable", "errno 101", "permission denied", "errno 13")), failure
    assert connections in ([], [None])


def _accept(server: socket.socket) -> object | None:
    try:
        return server.accept()
    except OSError:
        return None



def test_secret_values_are_redacted_from_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from arcengine.recording.redact import redact_secrets

    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-123456")
    text = redact_secrets("candidate raised KeyError: 'sk-canary-123456' (line 3)")
    assert "sk-canary-123456" not in text and "<OPENAI_API_KEY redacted>" in text


async def test_a_result_written_by_candidate_code_is_not_believed(tmp_path: Path) -> None:
    # The candidate writes a perfect result where the harness would, then leaves before the harness can.
    candidate = tmp_path / "forge.py"
    candidate.write_text(scale_source(
        "import json, pathlib\n"
        "result = pathlib.Path('..', 'result.json')\n"
        "result.write_text(json.dumps({'ok': True, 'correct': True, 'workloads': []}))\n"
        "import os\nleave = getattr(os, '_' + 'exit')\nleave(0)"))
    async with ChildLauncher("cpu") as launcher:
        outcome = await launcher.run(_spec(candidate), device="cpu", timeout_s=120)
    # Its write is refused (outside its own folders); were it not, the worker holds no token, and its judge lives on,
    # says how it left and writes the real result.
    assert outcome.failure() is None and outcome.result is not None and outcome.result["correct"] is False
    assert "outside its own folders" in outcome.result["failure"] or "exited with code 0" in outcome.result["failure"]


@pytest.mark.parametrize("zygote", [True, False])
async def test_a_child_past_its_memory_limit_is_killed_with_that_reason(tmp_path: Path, zygote: bool) -> None:
    candidate = tmp_path / "hoard.py"
    candidate.write_text(scale_source("hoard = [bytearray(1 << 28) for _ in range(16)]\nreturn x * 2 + 1"))
    async with ChildLauncher("cpu", use_zygote=zygote, memory_limit=2**30) as launcher:
        outcome = await launcher.run(_spec(candidate), device="cpu", timeout_s=120)
    assert outcome.result is None
    assert "host memory limit exceeded" in (outcome.failure() or ""), outcome.failure()
    assert launcher.launches == {"zygote" if zygote else "cold": 1}


def _logging_candidate(tmp_path: Path, name: str, other: str, log: Path) -> Path:
    """A scale candidate that logs its import and its calls (with their device: the compiler's are on meta),
    and whose first real call waits until ``other`` has been imported."""
    path = tmp_path / f"{name}.py"
    body = (f"if x.device.type != 'meta':\n"
            f"    import time\n"
            f"    deadline = time.monotonic() + 60\n"
            f"    while '{other} import' not in open({str(log)!r}).read() and time.monotonic() < deadline:\n"
            f"        time.sleep(0.01)\n"
            f"    time.sleep(0.02)  # long enough for two children's calls to mix, were they not in turns\n"
            f"open({str(log)!r}, 'a').write(f'{name} call {{x.device.type}}\\n')\n"
            f"return x * 2 + 1")
    path.write_text(scale_source(body, imports=f"import torch\nopen({str(log)!r}, 'a').write('{name} import\\n')"))
    return path


@pytest.mark.parametrize("zygote", [True, False])
async def test_children_taking_turns_prepare_together_and_use_the_device_one_at_a_time(
        tmp_path: Path, zygote: bool) -> None:
    log = tmp_path / "log.txt"
    log.touch()
    candidates = {"a": _logging_candidate(tmp_path, "a", "b", log), "b": _logging_candidate(tmp_path, "b", "a", log)}
    turns = DeviceTurns()
    outcomes = {}

    async def judge(name: str, launcher: ChildLauncher) -> None:
        outcomes[name] = await launcher.run(_spec(candidates[name]), device="cpu", timeout_s=120, turns=turns)

    async with ChildLauncher("cpu", use_zygote=zygote) as launcher, anyio.create_task_group() as group:
        for name in candidates:
            group.start_soon(judge, name, launcher)
    assert all(outcome.result and outcome.result["correct"] for outcome in outcomes.values()), outcomes
    lines = log.read_text().splitlines()
    calls = [line.split()[0] for line in lines if line.endswith("call cpu")]
    first = calls[0]
    # Each waited in its first call for the other's import, so the other prepared while it held the device;
    # and the device's calls were never mixed: one child's, then the other's.
    assert calls == sorted(calls, key=lambda name: name != first) and set(calls) == {"a", "b"}
    second = "b" if first == "a" else "a"
    assert lines.index(f"{second} import") < len(lines) - lines[::-1].index(f"{first} call cpu") - 1
    for outcome in outcomes.values():
        assert outcome.result["seconds"]["wait"] >= 0 and "precompile" in outcome.result["seconds"]


async def test_a_child_that_fails_while_preparing_needs_no_turn(tmp_path: Path) -> None:
    candidate = tmp_path / "broken.py"
    candidate.write_text("import torch\nraise RuntimeError('no import for you')\n")
    turns = DeviceTurns()
    held, release = anyio.Event(), anyio.Event()

    async def hold_the_device() -> None:
        async with turns.turn(anyio.Event().wait):
            held.set()
            await release.wait()

    async with ChildLauncher("cpu") as launcher, anyio.create_task_group() as group:
        group.start_soon(hold_the_device)
        await held.wait()  # busy for as long as the child takes
        outcome = await launcher.run(_spec(candidate), device="cpu", timeout_s=120, turns=turns)
        release.set()
    assert outcome.result is not None and "no import for you" in outcome.result["failure"]
    assert "wait" not in outcome.result["seconds"] or outcome.result["seconds"]["wait"] == 0.0


def test_memory_a_fork_shares_with_its_parent_is_counted_once_where_it_decides() -> None:
    # This process has torch imported: a fork of it is hundreds of megabytes resident, almost all shared.
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.write(ready_w, b"x")
        time.sleep(60)
        os._exit(0)
    try:
        os.close(ready_w)
        os.read(ready_r, 1)
        resident = sandbox.resident_bytes(os.getpid(), [pid])
        proportional = sandbox.resident_bytes(os.getpid(), [pid], proportional=True)
        assert resident is not None and proportional is not None
        assert proportional < 0.75 * resident, (proportional, resident)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


@pytest.mark.parametrize("returncode", [0, 1, None])
def test_a_result_is_read_only_from_a_judge_that_exited_cleanly(tmp_path: Path, returncode: int | None) -> None:
    # A worker that read the token could write a result and break the judge's own write (it then exits 1): such a
    # file, even with the token, is not a verdict.
    from arcengine.guard.sandbox import _Files, _outcome

    files = _Files(tmp_path, tmp_path, tmp_path / "spec.json", tmp_path / "result.json", tmp_path / "stderr.txt",
                   token="t0ken")
    files.result.write_text('{"ok": true, "correct": true, "token": "t0ken"}')
    outcome = _outcome(files, returncode, timed_out=False, seconds=1.0)
    if returncode == 0:
        assert outcome.result == {"ok": True, "correct": True} and outcome.failure() is None
    else:
        assert outcome.result is None and "result file is not read" in outcome.stderr_tail
        assert outcome.failure() is not None
