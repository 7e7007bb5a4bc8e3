"""GEMM + residual reference: out = (a @ w.T + residual), accumulated in float32, rounded once to bfloat16.

Inputs: a [T, K] bfloat16 (the attention output, one row per token), w [N, K] bfloat16 (the output
projection in nn.Linear layout, out_features x in_features), residual [T, N] bfloat16 (the residual stream).
Output: [T, N] bfloat16. Semantics: torch.matmul(a.float(), w.float().T) + residual.float() in float32
(every bf16 x bf16 product is exact in float32; only the summation order may differ from a tensor-core
kernel), then one round-to-nearest-even cast to bfloat16.
"""

from __future__ import annotations

import torch

# Residual-stream values in deep LLM layers reach the thousands; see make_inputs.
LARGE_ACTIVATION_SCALE = 1000.0


def make_inputs(
    axes: dict[str, int], generator: torch.Generator, device: str, distribution: str = "normal"
) -> tuple[torch.Tensor, ...]:
    """a ~ N(0, 1), w ~ N(0, 1/K) (so a @ w.T ~ N(0, 1)), residual ~ N(0, 1).

    ``large_activations``: a and residual scaled by 1000, weights at their usual scale (outputs ~1e3). It
    stands in for the generic ``large`` (every input x1000), which would scale the outputs by 1e6: a sum of
    4096 terms of that size that cancels to near zero carries float32 rounding noise (order-dependent, of a
    few units) far above any fixed atol, so no correct kernel with another summation order could pass it.
    """
    t, k, n = int(axes["T"]), int(axes["K"]), int(axes["N"])
    a = torch.randn(t, k, generator=generator, device=device, dtype=torch.float32)
    w = torch.randn(n, k, generator=generator, device=device, dtype=torch.float32) * k**-0.5
    residual = torch.randn(t, n, generator=generator, device=device, dtype=torch.float32)
    if distribution == "large_activations":
        a = a * LARGE_ACTIVATION_SCALE
        residual = residual * LARGE_ACTIVATION_SCALE
    elif distribution != "normal":
        raise ValueError(f"unknown distribution {distribution!r}")
    return a.to(torch.bfloat16), w.to(torch.bfloat16), residual.to(torch.bfloat16)


def run(a: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    out = torch.matmul(a.float(), w.float().T) + residual.float()
    return out.to(a.dtype)
