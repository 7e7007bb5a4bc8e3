# ruff: noqa
"""Honest: the library route that keeps the problem's one rounding: cuBLAS multiplies the bf16 operands with float32
accumulation into a float32 output (mm's out_dtype), the residual is added in float32, and the sum is cast to
bfloat16 once. Must pass."""

import torch


def run(a: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return (torch.mm(a, w.t(), out_dtype=torch.float32) + residual.float()).to(torch.bfloat16)
