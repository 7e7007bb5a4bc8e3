"""Baseline routes for GEMM + residual: cuBLAS through PyTorch, as a user runs the output projection.

``addmm``: one bf16 call with the residual as its input (cuBLAS accumulates in float32 but adds the residual
and rounds in its own order: the guard checks whether that meets the one-rounding contract, shape by shape).
``mm_fp32_out``: the bf16 GEMM accumulated and returned in float32 (``out_dtype``), the residual added in float32,
rounded once: the contract exactly.
"""

from __future__ import annotations

import torch


def addmm(a: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return torch.addmm(residual, a, w.T)


def mm_fp32_out(a: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return (torch.mm(a, w.T, out_dtype=torch.float32) + residual.float()).to(a.dtype)
