# ruff: noqa
"""bf16 torch.addmm with the residual as its input (cuBLAS, float32 accumulation, bf16 output): what a user might
run instead of the float32 reference. On the H200 it misses the one-rounding contract on large activations, so the
guard fails it as incorrect."""

import torch


def run(a: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return torch.addmm(residual, a, w.t())
