"""RMSNorm reference: y = (x * rsqrt(mean(x^2) + eps)).to(x.dtype) * weight, over the last axis.

Inputs: x [M, N] bfloat16, weight [N] bfloat16. The normalised value is computed in float32, rounded to
the input dtype, then multiplied by the weight (rounded again), as in LLaMA-style decoder layers.
"""

from __future__ import annotations

import torch

EPS = 1e-6


def make_inputs(axes: dict[str, int], generator: torch.Generator, device: str) -> tuple[torch.Tensor, ...]:
    m, n = int(axes["M"]), int(axes["N"])
    x = torch.randn(m, n, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)
    w = 1.0 + 0.1 * torch.randn(n, generator=generator, device=device, dtype=torch.float32)
    return x, w.to(torch.bfloat16)


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return normed.to(x.dtype) * weight
