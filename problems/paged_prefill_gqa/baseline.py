"""Baseline routes for paged GQA prefill: PyTorch's scaled_dot_product_attention per sequence, on its pages
gathered into place, as a user without FlashInfer would run it. ``sdpa`` passes the causal window as a boolean
mask (with GQA, which leaves SDPA its math or memory-efficient kernel); ``sdpa_lower_right`` passes it as
``causal_lower_right`` with the KV heads repeated, which flash attention takes on a GPU. torch.compile of the
reference is not a route: its per-sequence Python loop over host-side lengths recompiles for every batch."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right


def _per_sequence(attend: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor], q: torch.Tensor,
                  qo_indptr: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, kv_indptr: torch.Tensor,
                  kv_page_indices: torch.Tensor, kv_last_page_len: torch.Tensor) -> torch.Tensor:
    """Each sequence's queries [hq, q_len, d] and its pages gathered into keys and values [hkv, kv_len, d],
    attended by ``attend`` (queries at the end of the sequence: query i sees keys up to kv_len - q_len + i)."""
    _, page, hkv, d = k_cache.shape
    out = torch.empty_like(q)
    qo, kv, last = qo_indptr.tolist(), kv_indptr.tolist(), kv_last_page_len.tolist()
    for b in range(len(last)):
        q_start, q_len = qo[b], qo[b + 1] - qo[b]
        pages = kv_page_indices[kv[b]:kv[b + 1]].long()
        kv_len = (len(pages) - 1) * page + last[b]
        k = k_cache[pages].reshape(-1, hkv, d)[:kv_len].transpose(0, 1)
        v = v_cache[pages].reshape(-1, hkv, d)[:kv_len].transpose(0, 1)
        out[q_start:q_start + q_len] = attend(q[q_start:q_start + q_len].transpose(0, 1), k, v).transpose(0, 1)
    return out


def _masked(query: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    (hq, q_len, d), (hkv, kv_len, _) = query.shape, k.shape
    seen = torch.arange(kv_len, device=query.device)[None, :] <= (
        torch.arange(q_len, device=query.device)[:, None] + (kv_len - q_len))
    return F.scaled_dot_product_attention(query, k, v, attn_mask=None if q_len == kv_len else seen,
                                          is_causal=q_len == kv_len, scale=1.0 / math.sqrt(d), enable_gqa=hq != hkv)


def _lower_right(query: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    (hq, q_len, d), (hkv, kv_len, _) = query.shape, k.shape
    # [1, hq, kv_len, d]: each KV head repeated for its query heads (flash's lower-right path takes no GQA)
    k, v = (t.repeat_interleave(hq // hkv, 0)[None] for t in (k, v))
    return F.scaled_dot_product_attention(query[None], k, v, attn_mask=causal_lower_right(q_len, kv_len),
                                          scale=1.0 / math.sqrt(d))[0]


def sdpa(*inputs: torch.Tensor) -> torch.Tensor:
    return _per_sequence(_masked, *inputs)


def sdpa_lower_right(*inputs: torch.Tensor) -> torch.Tensor:
    return _per_sequence(_lower_right, *inputs)
