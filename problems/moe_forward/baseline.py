"""Baseline route for the routed MoE layer: PyTorch's grouped GEMM (``torch._grouped_mm``, CUTLASS on Hopper) over
the tokens sorted by expert, as a user without vLLM's or SGLang's fused MoE kernels would run it (torchtitan's
route): the router in float32, one grouped GEMM for every expert's gate and up projections, SwiGLU, one for the
down projections, and the routing-weighted sum scattered back to the tokens.

torch.compile of the reference is not a route: it unrolls the loop over the experts (up to 90 s of compilation a
shape, two shapes past the cap). On the 11 H200 workloads it compiled, its gain over the reference
(bench/results/problems-h200.json) was 1.6-108x smaller than this route's (bench/diag/library_routes.py, do_bench,
another run); in raw times from the two runs, 0.8-15x.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def grouped_mm(x: torch.Tensor, w_router: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor,
               top_k: int) -> torch.Tensor:
    tokens, hidden = x.shape
    experts, inter = w1.shape[0], w1.shape[1] // 2
    probs = torch.softmax(x.float() @ w_router.float().T, dim=-1)
    weights, chosen = torch.topk(probs, top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    order = torch.argsort(chosen.flatten(), stable=True)  # (token, slot) pairs grouped by expert
    token = order // top_k
    ends = torch.cumsum(torch.bincount(chosen.flatten(), minlength=experts), dim=0).to(torch.int32)
    gate_up = torch._grouped_mm(x[token], w1.transpose(1, 2), offs=ends, out_dtype=x.dtype)
    act = (F.silu(gate_up[:, :inter].float()) * gate_up[:, inter:].float()).to(x.dtype)
    y = torch._grouped_mm(act, w2.transpose(1, 2), offs=ends, out_dtype=x.dtype)
    out = torch.zeros(tokens, hidden, dtype=torch.float32, device=x.device)
    out.index_add_(0, token, y.float() * weights.flatten()[order, None])
    return out.to(x.dtype)
