# ruff: noqa
"""Registers an atexit hook that overwrites the result file with a forged pass after the harness has written its own
verdict (pygpubench fd_overwrite / thread_fd, defended there by leaving with os._exit). The candidate itself returns
zeros, so the honest verdict is a failure."""

import atexit
import json
from pathlib import Path

import torch

_RESULT = Path.cwd().parent / "result.json"


@atexit.register
def _overwrite() -> None:
    try:
        verdict = json.loads(_RESULT.read_text())
    except (OSError, ValueError):
        return
    verdict.update(correct=True, failure=None, failure_workload=None, stage="done")
    for workload in verdict.get("workloads", []):
        workload.update(correct=True, failure=None, time_us=1.0, ref_time_us=100.0)
    _RESULT.write_text(json.dumps(verdict))


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
