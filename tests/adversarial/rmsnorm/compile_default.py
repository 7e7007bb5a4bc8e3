# ruff: noqa
"""Honest: the reference's math under torch.compile (default mode), as the 'library replacement' strategy writes
it. Inductor's own worker threads, compile subprocesses and caches are not the candidate's cheating: it must pass.
Its first call compiles (reported as compile time apart from run time)."""

import torch


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return normed.to(x.dtype) * weight


run = torch.compile(_rmsnorm)
