"""Baseline routes for paged GQA prefill: PyTorch's scaled_dot_product_attention per sequence, on its pages
gathered into place, as a user without FlashInfer would run it. ``sdpa`` passes the causal window as a boolean
mask (with GQA, which leaves SDPA its math or memory-efficient kernel); ``sdpa_lower_right`` passes it as
``causal_lower_right`` with the KV heads repeated, which flash attention takes on a GPU. torch.compile of the
reference is not a route: its per-sequence Python loop over host-side lengths recompiles for every batch."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right


def sdpa(q: torch.Tensor, qo_indptr: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
         kv_indptr: torch.Tensor, kv_page_indices: torch.Tensor, kv_last_page_len: torch.Tensor) -> torch.Tensor:
    _, hq, d = q.shape
    _, page, hkv, _ = k_cache.shape
    out = torch.empty_like(q)
    qo, kv, last = qo_indptr.tolist(), kv_indptr.tolist(), kv_last_page_len.tolist()
    for b in range(len(last)):
        q_start, q_len = qo[b], qo[b + 1] - qo[b]
        pages = kv_page_indices[kv[b]:kv[b + 1]].long()
        kv_len = (len(pages) - 1) * page + last[b]
        k = k_cache[pages].reshape(-1, hkv, d)[:kv_len].transpose(0, 1)  # [hkv, kv_len, d]
        v = v_cache[pages].reshape(-1, hkv, d)[:kv_len].transpose(0, 1)
        query = q[q_start:q_start + q_len].transpose(0, 1)  # [hq, q_len, d]
        # Causal with the queries at the end of the sequence: query i sees keys up to kv_len - q_len + i.
        seen = torch.arange(kv_len, device=q.device)[None, :] <= (
            torch.arange(q_len, device=q.device)[:, None] + (kv_len - q_len))
        attended = F.scaled_dot_product_attention(query, k, v, attn_mask=None if q_len == kv_len else seen,
                                                  is_causal=q_len == kv_len, scale=1.0 / math.sqrt(d),
                                                  enable_gqa=hq != hkv)
        out[q_start:q_start + q_len] = attended.transpose(0, 1)
    return out


def sdpa_lower_right(q: torch.Tensor, qo_indptr: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                     kv_indptr: torch.Tensor, kv_page_indices: torch.Tensor,
                     kv_last_page_len: torch.Tensor) -> torch.Tensor:
    _, hq, d = q.shape
    _, page, hkv, _ = k_cache.shape
    out = torch.empty_like(q)
    qo, kv, last = qo_indptr.tolist(), kv_indptr.tolist(), kv_last_page_len.tolist()
    for b in range(len(last)):
        q_start, q_len = qo[b], qo[b + 1] - qo[b]
        pages = kv_page_indices[kv[b]:kv[b + 1]].long()
        kv_len = (len(pages) - 1) * page + last[b]
        # [1, hq, kv_len, d]: each KV head repeated for its query heads (flash's lower-right path takes no GQA)
        k = k_cache[pages].reshape(-1, hkv, d)[:kv_len].transpose(0, 1).repeat_interleave(hq // hkv, 0)[None]
        v = v_cache[pages].reshape(-1, hkv, d)[:kv_len].transpose(0, 1).repeat_interleave(hq // hkv, 0)[None]
        query = q[q_start:q_start + q_len].transpose(0, 1)[None]  # [1, hq, q_len, d]
        attended = F.scaled_dot_product_attention(query, k, v, attn_mask=causal_lower_right(q_len, kv_len),
                                                  scale=1.0 / math.sqrt(d))
        out[q_start:q_start + q_len] = attended[0].transpose(0, 1)
    return out
