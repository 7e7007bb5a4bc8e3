"""Top-k routed mixture-of-experts feed-forward layer (Mixtral / Qwen3-MoE / DeepSeek routed experts, no shared
expert): the router picks TOPK of E experts per token, each picked expert runs a SwiGLU MLP, and the token's
output is the routing-weighted sum of their outputs.

Inputs (make_inputs): x [T, H] bfloat16 (the tokens' hidden states), w_router [E, H] bfloat16, w1 [E, 2*I, H]
bfloat16 (per expert the gate and up projections stacked, nn.Linear layout: rows 0..I-1 are the gate, rows
I..2I-1 the up projection), w2 [E, H, I] bfloat16 (the down projection, nn.Linear layout) and top_k, a Python
int (1 <= top_k <= E). Output: [T, H] bfloat16.

Semantics:
- logits = x @ w_router.T in float32 (products of the bf16 values accumulated in float32); probs = softmax(logits).
- Each token takes the top_k experts of largest probability and renormalises their probabilities to sum to 1
  (Mixtral / Qwen3-MoE style, "norm_topk_prob"): weight_j = p_j / sum of the top_k p.
- Each picked expert e computes, with bf16 GEMMs accumulated in float32 and rounded to bf16 as in bf16 inference:
  gate, up = x_t @ w1[e].T (rounded to bf16), act = silu(gate) * up in float32 rounded to bf16,
  y_e = act @ w2[e].T (rounded to bf16).
- out_t = sum over the token's picked experts of weight * y_e, in float32, rounded once to bf16.
A kernel may keep the intermediates in float32 instead of rounding them (the tolerance allows for it), but the
router must be float32: a bf16-rounded logit can change which expert is the k-th. make_inputs keeps each
token's k-th and (k+1)-th largest logits at least ROUTER_MARGIN times the row's logit RMS apart (it redraws
the tokens that are closer), so the choice is well defined under any float32 summation order and exact ties
never happen.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

ROUTER_MARGIN = 1e-3  # relative gap between the k-th and (k+1)-th logit (float32 rounding is ~1e-6)
_MAX_REDRAWS = 100


def make_inputs(
    axes: dict[str, int], generator: torch.Generator, device: str, distribution: str = "normal"
) -> tuple[object, ...]:
    """Weights ~ N(0, 1/fan_in) (gate/up ~ N(0, 1), output RMS ~ 0.3); hidden states ~ N(0, 1); router logits
    ~ N(0, 1) per expert. Distributions: ``skewed_routing`` gives the experts very different popularity (a few
    take most tokens, many get none); ``flat_routing`` (logits ~ N(0, 0.1^2): near-equal weights) and
    ``peaked_routing`` (logits ~ N(0, 3^2): near one-hot weights) change the router's scale;
    ``outlier_activations`` makes 1/64 of the hidden channels 16x larger (weights rescaled to keep unit logits
    and gate/up). Every distribution keeps the output RMS near 0.3-0.5, which the tolerance's atol is sized to."""
    t, h, e, inter, k = (int(axes[name]) for name in ("T", "H", "E", "I", "TOPK"))
    if not 1 <= k <= e:
        raise ValueError(f"TOPK={k} must be between 1 and E={e}")

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32)

    # outlier_activations: a few hidden channels 16x larger (the "massive activations" of LLM hidden states);
    # the router and gate/up weights are scaled by 1 / RMS(x) so logits and gate/up keep unit scale.
    channel_scale = None
    x_rms = 1.0
    if distribution == "outlier_activations":
        count = max(1, h // 64)
        channel_scale = torch.ones(h, device=device, dtype=torch.float32)
        channel_scale[torch.randperm(h, generator=generator, device=device)[:count]] = 16.0
        x_rms = math.sqrt((h + count * (16.0**2 - 1)) / h)
    elif distribution not in ("normal", "skewed_routing", "flat_routing", "peaked_routing"):
        raise ValueError(f"unknown distribution {distribution!r}")

    router_std = {"flat_routing": 0.1, "peaked_routing": 3.0}.get(distribution, 1.0)
    w_router = randn(e, h) * (router_std / (math.sqrt(h) * x_rms))
    w1 = (randn(e, 2 * inter, h) / (math.sqrt(h) * x_rms)).to(torch.bfloat16)
    w2 = (randn(e, h, inter) / math.sqrt(inter)).to(torch.bfloat16)

    shift = None
    if distribution == "skewed_routing":
        # Every token carries a shared direction d (entries +-1); the router rows get a component along d, so
        # expert j's logit is offset by popularity[j] ~ N(0, 2^2) for all tokens alike.
        shift = torch.randint(0, 2, (h,), generator=generator, device=device).to(torch.float32) * 2 - 1
        popularity = 2.0 * randn(e)
        w_router = w_router + popularity[:, None] * shift[None, :] / (0.6 * h)
    w_router = w_router.to(torch.bfloat16)

    def draw_tokens(n: int) -> torch.Tensor:
        rows = randn(n, h)
        if shift is not None:
            rows = 0.8 * rows + 0.6 * shift  # unit variance per entry, mean along d
        if channel_scale is not None:
            rows = rows * channel_scale
        return rows.to(torch.bfloat16)

    x = draw_tokens(t)
    if k < e:  # redraw the tokens whose k-th and (k+1)-th logits are too close to call
        for _ in range(_MAX_REDRAWS):
            logits = x.float() @ w_router.float().T
            top = torch.topk(logits, k + 1, dim=-1).values
            rms = logits.pow(2).mean(-1).sqrt()
            close = (top[:, k - 1] - top[:, k]) < ROUTER_MARGIN * rms
            redraw = torch.nonzero(close).flatten()
            if redraw.numel() == 0:
                break
            x[redraw] = draw_tokens(redraw.numel())
        else:
            raise RuntimeError("could not separate the router's k-th and (k+1)-th logits")
    return x, w_router, w1, w2, k


def run(x: torch.Tensor, w_router: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, top_k: int) -> torch.Tensor:
    t, h = x.shape
    e, inter = w1.shape[0], w1.shape[1] // 2
    logits = x.float() @ w_router.float().T  # [T, E] float32
    probs = torch.softmax(logits, dim=-1)
    top_p, top_ids = torch.topk(probs, top_k, dim=-1)  # [T, top_k], largest first
    weights = top_p / top_p.sum(dim=-1, keepdim=True)

    # Group the (token, slot) pairs by expert, then run each expert on its tokens.
    flat_ids = top_ids.reshape(-1)
    order = torch.argsort(flat_ids, stable=True)
    counts = torch.bincount(flat_ids, minlength=e).tolist()
    token_of = order // top_k
    weight_of = weights.reshape(-1)[order]
    out = torch.zeros(t, h, dtype=torch.float32, device=x.device)
    start = 0
    for expert, count in enumerate(counts):
        if count == 0:
            continue
        tokens = token_of[start : start + count]  # distinct tokens: an expert is picked at most once per token
        weight = weight_of[start : start + count]
        start += count
        gate_up = x[tokens] @ w1[expert].T  # bf16 GEMM, float32 accumulation, rounded to bf16
        act = (F.silu(gate_up[:, :inter].float()) * gate_up[:, inter:].float()).to(x.dtype)
        y = act @ w2[expert].T  # [count, H] bf16
        out.index_add_(0, tokens, weight[:, None] * y.float())
    return out.to(x.dtype)
