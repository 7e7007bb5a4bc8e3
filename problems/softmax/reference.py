"""Softmax reference: softmax over the last axis of x [M, N] bfloat16, computed in float32, rounded to bf16."""

from __future__ import annotations

import torch


def make_inputs(axes: dict[str, int], generator: torch.Generator, device: str) -> tuple[torch.Tensor, ...]:
    m, n = int(axes["M"]), int(axes["N"])
    x = torch.randn(m, n, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)
    return (x,)


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), -1).to(x.dtype)
