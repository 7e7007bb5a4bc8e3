# ruff: noqa
"""Honest: torch.compile with dynamic shapes, one graph for every workload (how a user compiles a layer whose
batch size varies). Must pass."""

import torch


@torch.compile(dynamic=True)
def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return normed.to(x.dtype) * weight
