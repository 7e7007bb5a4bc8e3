"""Baseline routes for softmax: PyTorch's softmax on the bfloat16 input as a user calls it (it accumulates in
float32 inside the kernel; torch.compile of the reference is the other route, declared in problem.toml)."""

from __future__ import annotations

import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)
