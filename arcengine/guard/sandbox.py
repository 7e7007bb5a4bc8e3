"""Run one guard child: a fresh process in its own session and temporary directory, with a scrubbed
environment, CPU and wall-clock limits, and the whole process group killed when it overruns.

Whatever the child does (crash, hang, exit, forge nothing, write nothing), the caller gets a
``ChildOutcome``, never an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

PACKAGE_ROOT = Path(__file__).resolve().parents[2]

# Variables a child may inherit; everything else (API keys included) is dropped.
_ALLOWED = re.compile(
    r"^(PATH|LANG|LC_[A-Z]+|TZ|LD_LIBRARY_PATH|CUDA_[A-Z_]+|NVIDIA_[A-Z_]+|NCCL_[A-Z_]+|TORCH_[A-Z_]+"
    r"|TRITON_[A-Z_]+|OMP_NUM_THREADS|MKL_NUM_THREADS|OPENBLAS_[A-Z_]+|CC|CXX|PYTORCH_[A-Z_]+)$"
)
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def scrubbed_environment(device: str, workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if _ALLOWED.match(k) and not _SECRET.search(k)}
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        PYTHONPATH=str(PACKAGE_ROOT),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class ChildOutcome:
    result: dict[str, Any] | None  # the child's result JSON, if it wrote one
    returncode: int | None
    timed_out: bool
    seconds: float
    stderr_tail: str

    def failure(self) -> str | None:
        """Why the child produced no usable result, precisely; None if it did."""
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s (process group killed)"
        if self.returncode is not None and self.returncode < 0:
            name = signal.Signals(-self.returncode).name
            return f"child killed by {name}{_last_line(self.stderr_tail)}"
        if self.result is None:
            return f"child exited with code {self.returncode} without a result{_last_line(self.stderr_tail)}"
        return None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return f": {lines[-1][:300]}" if lines else ""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_child(
    spec: dict[str, Any],
    *,
    device: str,
    timeout_s: float,
    env_extra: dict[str, str] | None = None,
) -> ChildOutcome:
    """Run ``python -m arcengine.guard.child`` on ``spec`` (its ``result`` path is filled in here)."""
    with tempfile.TemporaryDirectory(prefix="arcengine-guard-") as tmp:
        root = Path(tmp)
        workdir = root / "work"
        workdir.mkdir()
        spec = {**spec, "result": str(root / "result.json")}
        spec_path = root / "spec.json"
        spec_path.write_text(json.dumps(spec))
        stderr_path = root / "stderr.txt"
        started = time.monotonic()
        timed_out = False
        with stderr_path.open("wb") as stderr:
            process = await anyio.open_process(
                [sys.executable, "-m", "arcengine.guard.child", str(spec_path)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, cwd=workdir,
                env=scrubbed_environment(device, workdir, env_extra), start_new_session=True,
            )
            try:
                _limit_resources(process.pid, timeout_s)
                with anyio.move_on_after(timeout_s) as scope:
                    await process.wait()
                timed_out = scope.cancelled_caught
            finally:
                _kill_group(process.pid)  # also reaps helpers the candidate left behind
                with anyio.CancelScope(shield=True):
                    await process.wait()
        seconds = time.monotonic() - started
        result = None
        if not timed_out:
            try:
                result = json.loads((root / "result.json").read_text())
            except (OSError, ValueError):
                result = None
        tail = stderr_path.read_text(errors="replace")[-4000:]
        return ChildOutcome(result, None if timed_out else process.returncode, timed_out, seconds, tail)


def _limit_resources(pid: int, timeout_s: float) -> None:
    """CPU time bounded (all cores for the whole wall budget, plus slack); no core dumps."""
    cpu = int(timeout_s * (os.cpu_count() or 1)) + 30
    try:
        resource.prlimit(pid, resource.RLIMIT_CPU, (cpu, cpu))
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
    except (ProcessLookupError, PermissionError, OSError):
        pass  # the child already ended, or the OS refuses: the wall clock still bounds it
