# ruff: noqa
"""Accumulates the sum of squares in float16: correct to tolerance on standard-normal inputs (the sum of N ~ 1e3 squares
fits in float16), but the square of any value above 256, or a sum above 65504, overflows to inf and the row comes out
as zeros. Only inputs of a wider magnitude than randn (activations after a residual add routinely reach 1e2-1e3)
reveal it."""

import torch


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    sumsq = x.half().pow(2).sum(-1, keepdim=True, dtype=torch.float16)
    rstd = torch.rsqrt(sumsq.float() / x.shape[-1] + 1e-6)
    return (x.float() * rstd).to(x.dtype) * weight
