# ruff: noqa
"""Exits from run() with status 0 by raising SystemExit, a BaseException: a harness that catches only Exception dies
with status 0 and may read that as success (the 'exit(0)' hack of RL code environments). Raised rather than called as
sys.exit, which the gate refuses by name."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    raise SystemExit(0)
