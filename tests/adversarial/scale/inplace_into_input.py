# ruff: noqa
"""Computes into its input and returns it (x.mul_(2).add_(1)): no allocation, correct values, but the caller's input
is destroyed. Fools harnesses that compute the reference after the candidate on the same buffers (KernelBench
zero_out_kernel; the Kevin paper's in-place hacks)."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return x.mul_(2).add_(1)
