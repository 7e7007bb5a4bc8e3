# ruff: noqa
"""Honest: the reference's math under torch.compile(mode="reduce-overhead"): CUDA graphs, whose outputs live in a
static pool that the next replay overwrites. Must pass: the guard keeps a copy of each timed output right after
its call. GPU only."""

import torch


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return normed.to(x.dtype) * weight


run = torch.compile(_rmsnorm, mode="reduce-overhead")
