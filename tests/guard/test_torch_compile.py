"""An honest candidate that uses torch.compile passes the guard: through the real zygote and child, on CPU.

torch.compile imports torch._dynamo, which replaces torch.manual_seed (the harness seal must see that as its
baseline: the zygote preloads it), and Inductor compiles in a worker pool whose threads outlive the call (the
child's environment turns the pool off). Inductor on the CPU builds C++, so these tests need a compiler.

Where tqdm is installed, torch.fx's interpreter (run by AOTAutograd while it traces) creates a disabled progress
bar, and tqdm starts its monitor thread ("tqdm_monitor") in tqdm.__new__ whether the bar is disabled or not; no
environment variable turns that off, and a disabled bar never stops it: the worker sets
``tqdm.monitor_interval = 0`` before it takes its thread baseline.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from arcengine.guard.child.zygote import PRELOAD
from arcengine.guard.sandbox import ChildLauncher, ChildOutcome, run_child, scrubbed_environment
from tests.conftest import SCALE


def _inductor_cannot_build() -> str | None:
    """Why Inductor cannot build its C++ kernels here (no compiler, no Python headers), or None."""
    compiler = os.environ.get("CXX") or "g++"
    if shutil.which(compiler) is None:
        return f"no C++ compiler ({compiler}) for Inductor's CPU kernels"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers for Inductor's CPU kernels"
    return None


pytestmark = pytest.mark.skipif(_inductor_cannot_build() is not None, reason=str(_inductor_cannot_build()))

# The scale fixture's y = 2x + 1, compiled with torch.compile's defaults.
COMPILED = """
import torch


def _affine(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


run = torch.compile(_affine)
"""
# Two shapes: the second call recompiles (dynamic shapes), as a campaign's workloads make it.
WORKLOADS = [
    {"index": 0, "axes": {"N": 2048}, "held_out": False},
    {"index": 1, "axes": {"N": 777}, "held_out": True},
]
TIMING = {"warmup": 1, "min_reps": 3, "max_reps": 6, "target_rel_se": 0.02, "max_seconds_per_workload": 0.1}
TIMEOUT_S = 300.0


def _spec(candidate: Path, workloads: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "mode": "evaluate",
        "device": "cpu",
        "reference": str(SCALE / "reference.py"),
        "candidate": str(candidate),
        "incumbent": None,
        "workloads": workloads,
        "tolerance": {"atol": 1e-5, "rtol": 1e-5, "matched_ratio": 0.999},
        "seeds": [0, 1],
        "timing": TIMING,
    }


def _candidate(tmp_path: Path) -> Path:
    path = tmp_path / "compiled.py"
    path.write_text(COMPILED)
    return path


def _assert_passes(outcome: ChildOutcome) -> None:
    result = outcome.result or {}
    assert outcome.failure() is None, outcome.stderr_tail[-2000:]
    assert result.get("failure") is None and result.get("correct") is True, result.get("failure")
    assert all(w["correct"] for w in result["workloads"])


def test_the_child_is_set_up_for_torch_compile(tmp_path: Path) -> None:
    assert "torch._dynamo" in PRELOAD  # the seal's baseline holds Dynamo's torch.manual_seed
    env = scrubbed_environment("cpu", tmp_path)
    assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"  # no compile workers left running after a call
    assert "TORCHINDUCTOR_CACHE_DIR" not in env  # Inductor's cache stays in the child's private TMPDIR


async def test_torch_compile_candidate_passes_through_the_zygote(tmp_path: Path) -> None:
    async with ChildLauncher() as launcher:
        outcome = await run_child(_spec(_candidate(tmp_path), WORKLOADS), device="cpu", timeout_s=TIMEOUT_S,
                                  launcher=launcher)
        assert launcher.launches == {"zygote": 1}, launcher.cold_reason
    _assert_passes(outcome)


async def test_torch_compile_candidate_passes_in_a_cold_child(tmp_path: Path) -> None:
    outcome = await run_child(_spec(_candidate(tmp_path), WORKLOADS[:1]), device="cpu", timeout_s=TIMEOUT_S)
    _assert_passes(outcome)
