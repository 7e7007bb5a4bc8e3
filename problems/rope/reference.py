"""Rotary position embedding (RoPE, neox style: rotate halves) applied to the queries and keys.

Inputs: positions [T] int64 (each token's position, < max_pos), q [T, Hq, D] bfloat16, k [T, Hkv, D]
bfloat16, cos_sin_cache [max_pos, D] float32 (row p holds cos(p * inv_freq) in its first D/2 entries and
sin(p * inv_freq) in its last D/2, inv_freq[i] = base^(-2i/D), as vLLM's RotaryEmbedding precomputes it).

For each token t and head h, with c, s = cos_sin_cache[positions[t]] split in halves and x1, x2 the halves of
the head vector (in float32): out = [x1 * c - x2 * s, x2 * c + x1 * s], rounded once to bfloat16. q and k are
rotated by the same c, s (every query and key head). Returns a new tuple (q_rot, k_rot); the inputs are left
unchanged (real serving stacks rotate in place, but a new tuple lets the guard compare both outputs).
"""

from __future__ import annotations

import torch

MAX_POS = 16384  # rows of the cache (model context length); raised to T if a workload has more tokens
CPU_MAX_POS = 1024  # CPU runs: a smaller cache keeps input generation cheap (the semantics do not change)


def _cos_sin_cache(max_pos: int, head_dim: int, base: float, device: str) -> torch.Tensor:
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float64) / head_dim))
    angles = torch.arange(max_pos, device=device, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return torch.cat([angles.cos(), angles.sin()], dim=-1).to(torch.float32)


def make_inputs(
    axes: dict[str, int], generator: torch.Generator, device: str, distribution: str = "normal"
) -> tuple[torch.Tensor, ...]:
    """Distinct random positions (a decode batch at different sequence lengths, or a shuffled prefill);
    q, k ~ N(0, 1). ``large_qk``: q and k scaled by 1000 (activation outliers) with the real cache."""
    t, hq, hkv, d = int(axes["T"]), int(axes["Hq"]), int(axes["Hkv"]), int(axes["D"])
    max_pos = max(CPU_MAX_POS if torch.device(device).type == "cpu" else MAX_POS, t)
    base = 500000.0 if d == 128 else 10000.0  # LLaMA-3 rope_theta for D = 128; the classic 10000 otherwise
    positions = torch.randperm(max_pos, generator=generator, device=device)[:t].to(torch.int64)
    q = torch.randn(t, hq, d, generator=generator, device=device, dtype=torch.float32)
    k = torch.randn(t, hkv, d, generator=generator, device=device, dtype=torch.float32)
    if distribution == "large_qk":
        q, k = q * 1000, k * 1000
    elif distribution != "normal":
        raise ValueError(f"unknown distribution {distribution!r}")
    cache = _cos_sin_cache(max_pos, d, base, device)
    return positions, q.to(torch.bfloat16), k.to(torch.bfloat16), cache


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    x1, x2 = xf.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def run(
    positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor, cos_sin_cache: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    cos, sin = cos_sin_cache[positions].float().chunk(2, dim=-1)  # [T, D/2] each
    cos, sin = cos[:, None, :], sin[:, None, :]  # broadcast over heads
    return _rotate(q, cos, sin), _rotate(k, cos, sin)
