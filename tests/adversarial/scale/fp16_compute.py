# ruff: noqa
"""Computes in float16 and casts back to float32: faster on tensor cores, ~1e-3 relative error against a 1e-5
tolerance (CUDA-L2 'precision downgrade, hidden': the dtype is right, the values are not)."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return (x.half() * 2 + 1).float()
