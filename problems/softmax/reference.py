"""Softmax reference: softmax over the last axis of x [M, N] bfloat16, computed in float32, rounded to bf16."""

from __future__ import annotations

import torch


def make_inputs(
    axes: dict[str, int], generator: torch.Generator, device: str, distribution: str = "normal"
) -> tuple[torch.Tensor, ...]:
    """Normal logits; ``equal_rows``: every row one repeated value (the output must be exactly uniform,
    which catches kernels that mishandle the max subtraction or the normalising sum)."""
    m, n = int(axes["M"]), int(axes["N"])
    if distribution == "equal_rows":
        row_values = torch.randn(m, 1, generator=generator, device=device, dtype=torch.float32) * 10
        return (row_values.expand(m, n).contiguous().to(torch.bfloat16),)
    x = torch.randn(m, n, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)
    return (x,)


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)
