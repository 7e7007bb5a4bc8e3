"""LLaMA decoder MLP block with its pre-norm and residual: out = down(silu(gate(h)) * up(h)) + x, h = rmsnorm(x).

Inputs: x [T, H] bfloat16 (the residual stream), norm_weight [H] bfloat16 (post_attention_layernorm),
w_gate_up [2*I, H] bfloat16 (gate_proj rows 0..I-1, then up_proj rows I..2I-1; nn.Linear layout, out x in),
w_down [H, I] bfloat16 (down_proj). Output: [T, H] bfloat16.

Rounding, exactly where a bfloat16 Hugging Face LlamaDecoderLayer rounds (every op returns bf16):
  1. h = (x * rsqrt(mean(x^2) + 1e-6)).to(bf16) * norm_weight: the mean and rsqrt in float32, the normalised
     value rounded to bf16, then the product with the weight rounded to bf16 (as problems/rmsnorm).
  2. gate_up = h @ w_gate_up.T: float32 accumulation, rounded to bf16 (so gate and up are each bf16).
  3. act = silu(gate) * up: silu computed in float32 from the bf16 gate and rounded to bf16, then the product
     with up (exact in float32) rounded to bf16.
  4. down = act @ w_down.T: float32 accumulation, rounded to bf16.
  5. out = down + x: added in float32, rounded to bf16.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

EPS = 1e-6


def make_inputs(
    axes: dict[str, int], generator: torch.Generator, device: str, distribution: str = "normal"
) -> tuple[torch.Tensor, ...]:
    """x ~ N(0, 1); norm weight ~ 1 + 0.1 N(0, 1); projection weights ~ N(0, 1/fan_in), so gate, up and the
    MLP output are O(1), comparable to the residual. The problem's own distributions change x only:
    ``heavy_tailed_x``: Student-t (2 degrees of freedom) residual entries; ``massive_activations``: a few
    channels of the residual stream at +-100..1000, as measured in LLaMA-family models (the norm's mean is
    dominated by them and the residual add works at a large scale)."""
    t, h, i = int(axes["T"]), int(axes["H"]), int(axes["I"])

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32) * scale

    x = randn(t, h)
    if distribution == "heavy_tailed_x":
        u = torch.rand(t, h, generator=generator, device=device, dtype=torch.float32).clamp_min(1e-6)
        x = x / torch.sqrt(-torch.log(u))
    elif distribution == "massive_activations":
        channels = torch.randperm(h, generator=generator, device=device)[: max(1, h // 1000)]
        magnitude = 100.0 + 900.0 * torch.rand(len(channels), generator=generator, device=device)
        x[:, channels] *= magnitude
    elif distribution != "normal":
        raise ValueError(f"unknown distribution {distribution!r}")
    norm_weight = 1.0 + randn(h, scale=0.1)
    w_gate_up = randn(2 * i, h, scale=1.0 / math.sqrt(h))
    w_down = randn(h, i, scale=1.0 / math.sqrt(i))
    return tuple(v.to(torch.bfloat16) for v in (x, norm_weight, w_gate_up, w_down))


def run(x: torch.Tensor, norm_weight: torch.Tensor, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    h = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * norm_weight
    gate, up = F.linear(h, w_gate_up).chunk(2, dim=-1)
    return F.linear(F.silu(gate) * up, w_down) + x
