"""FP8 block-scaled GEMM reference (DeepSeek-V3 style): out = dequant(a) @ dequant(b).T, rounded to bfloat16.

Inputs:
  a        [M, K]                      float8_e4m3fn  activations, quantised per token per 128 channels
  a_scale  [M, ceil(K/128)]            float32        one scale per (row, 128-wide K group)
  b        [N, K]                      float8_e4m3fn  weights (row-major [N, K], as stored by DeepSeek-V3)
  b_scale  [ceil(N/128), ceil(K/128)]  float32        one scale per 128x128 weight block
Output: out [M, N] bfloat16, with
  out[m, n] = sum_j a_scale[m, j] * b_scale[n // 128, j] * sum_{k in group j} a[m, k] * b[n, k]
accumulated in float32 (each group's fp8 x fp8 products are exact in float32; the scales are applied per
128-wide K group, then the groups are summed). K and N need not be multiples of 128: the last group is partial.
"""

from __future__ import annotations

import math

import torch

GROUP = 128  # scale granularity along K (a and b) and along N (b)
FP8_MAX = 448.0  # largest finite float8_e4m3fn


def _quantise_groups(x: torch.Tensor, rows_per_group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Block-wise e4m3 quantisation of x [R, K] float32 with (rows_per_group x 128) blocks and amax/448 scales."""
    r, k = x.shape
    rb, kb = math.ceil(r / rows_per_group), math.ceil(k / GROUP)
    padded = x.new_zeros(rb * rows_per_group, kb * GROUP)
    padded[:r, :k] = x
    blocks = padded.view(rb, rows_per_group, kb, GROUP)
    amax = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-10)  # [rb, kb]
    scale = amax / FP8_MAX
    q = (blocks / scale[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(rb * rows_per_group, kb * GROUP)[:r, :k].contiguous(), scale.contiguous()


def make_inputs(
    axes: dict[str, int], generator: torch.Generator, device: str, distribution: str = "normal"
) -> tuple[torch.Tensor, ...]:
    """Activations ~ N(0, 1) and weights ~ N(0, 1/K), quantised block-wise to e4m3 (outputs ~ N(0, 1)).

    ``outliers``: LLM-like activations (per-token magnitudes over ~20x, about 1% of channels 10x hot, so a
    hot channel sets its group's scale and coarsens the rest of it). ``wide_scales``: every activation group
    and weight block multiplied by its own factor in [1/8, 8], so a kernel that applies a scale to the wrong
    block fails loudly. Both are normalised so the outputs stay O(1), which keeps atol meaningful.
    """
    m, n, k = int(axes["M"]), int(axes["N"]), int(axes["K"])

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32)

    def rand(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=generator, device=device, dtype=torch.float32)

    x = randn(m, k)
    w = randn(n, k) / math.sqrt(k)
    if distribution == "outliers":
        token_scale = torch.exp((rand(m, 1) * 2 - 1) * 1.5)
        hot = torch.where(rand(1, k) < 0.01, 10.0, 1.0)
        x = x * token_scale * hot / math.sqrt(1.0 + 0.01 * 99.0)
    elif distribution == "wide_scales":
        kb, nb = math.ceil(k / GROUP), math.ceil(n / GROUP)
        x_factor = torch.exp2(rand(m, kb) * 6 - 3).repeat_interleave(GROUP, dim=1)[:, :k]
        w_factor = torch.exp2(rand(nb, kb) * 6 - 3).repeat_interleave(GROUP, dim=0)[:n]
        w_factor = w_factor.repeat_interleave(GROUP, dim=1)[:, :k]
        # E[(2^U)^2] = (4^3 - 4^-3) / (6 ln 4) ~ 7.7 for U ~ U(-3, 3): divide it out of each side's variance.
        norm = math.sqrt((64.0 - 1.0 / 64.0) / (6.0 * math.log(4.0)))
        x = x * x_factor / norm
        w = w * w_factor / norm
    elif distribution != "normal":
        raise ValueError(f"unknown distribution {distribution!r}")
    a, a_scale = _quantise_groups(x, 1)
    b, b_scale = _quantise_groups(w, GROUP)
    return a, a_scale, b, b_scale


def run(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    out = torch.zeros(m, n, dtype=torch.float32, device=a.device)
    for j in range(math.ceil(k / GROUP)):
        ks = slice(j * GROUP, min(k, (j + 1) * GROUP))
        partial = a[:, ks].float() @ b[:, ks].float().T  # exact products, float32 sums
        b_s = b_scale[:, j].repeat_interleave(GROUP)[:n]
        out += partial * (a_scale[:, j, None] * b_s[None, :])
    return out.to(torch.bfloat16)
