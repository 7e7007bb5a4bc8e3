"""Batched causal GQA prefill over a paged KV cache (FlashInfer's BatchPrefillWithPagedKVCache), reference.

Inputs (B sequences, page size PAGE, HQ query heads, HKV KV heads, head dim D; 32 / 4 / 128 on the GPU):
  q                 [total_q, HQ, D]           bfloat16  new tokens of all sequences, concatenated
  qo_indptr         [B + 1]                    int32     sequence b's queries are q[qo_indptr[b]:qo_indptr[b+1]]
  k_cache, v_cache  [num_pages, PAGE, HKV, D]  bfloat16  the paged KV cache (prefix and new tokens alike)
  kv_indptr         [B + 1]                    int32     sequence b's pages are
  kv_page_indices   [total_pages]              int32         kv_page_indices[kv_indptr[b]:kv_indptr[b+1]], in order
  kv_last_page_len  [B]                        int32     valid slots of each sequence's last page (1..PAGE)
Output: [total_q, HQ, D] bfloat16. Sequence b has kv_len = (pages - 1) * PAGE + last_page_len >= q_len tokens;
query i (0-based among its q_len new tokens) of query head h attends to KV positions j <= kv_len - q_len + i
of KV head h // (HQ // HKV), softmax(q.k * D^-0.5) computed in float32, times V summed in float32.
"""

from __future__ import annotations

import math

import torch

SCORE_ELEMENTS = 1 << 27  # reference's query chunk: at most this many float32 scores at a time


def sequence_lengths(batch: int, mean_q: int, mean_prefix: int) -> tuple[list[int], list[int]]:
    """Per-sequence new-token and prefix lengths, a deterministic function of the axes (no random draw, so every
    call of a workload does the same work): new tokens spread over [0.25, 1.75] x Q and prefixes over
    [0, 2) x P (some sequences start fresh), by two low-discrepancy sequences, with exact totals B*Q and B*P."""

    def split(total: int, weights: list[float], minimum: int) -> list[int]:
        spare = total - minimum * len(weights)
        shares = [spare * w / sum(weights) for w in weights]
        parts = [minimum + int(s) for s in shares]
        for i in sorted(range(len(parts)), key=lambda i: int(shares[i]) - shares[i])[: total - sum(parts)]:
            parts[i] += 1  # largest remainders first
        return parts

    q_weights = [0.25 + 1.5 * ((i * 0.6180339887 + 0.5) % 1.0) for i in range(batch)]
    p_weights = [2.0 * ((i * 0.7548776662 + 0.3) % 1.0) for i in range(batch)]
    if sum(p_weights) == 0.0:
        p_weights = [1.0] * batch
    return split(batch * mean_q, q_weights, 1), split(batch * mean_prefix, p_weights, 0)


def make_inputs(axes: dict[str, int], generator: torch.Generator, device: str) -> tuple[torch.Tensor, ...]:
    """k, v ~ N(0, 1) and q ~ N(0, 4) in bf16, so the scaled scores have a standard deviation of 2 (attention is
    peaked, as in trained models, and the outputs stay ~0.08-0.6 even over long contexts). Every page slot of the
    cache holds data, the unused tail of each last page and a few spare pages included (stale tokens, as in a
    real cache); the pages of all sequences are one random permutation of the cache, so they are scattered."""
    batch, mean_q, mean_prefix, page, hq, hkv, d = (int(axes[k]) for k in ("B", "Q", "P", "PAGE", "HQ", "HKV", "D"))
    q_lens, prefixes = sequence_lengths(batch, mean_q, mean_prefix)
    kv_lens = [ql + p for ql, p in zip(q_lens, prefixes, strict=True)]
    page_counts = [math.ceil(n / page) for n in kv_lens]
    total_pages = sum(page_counts)
    num_pages = total_pages + max(1, total_pages // 16)  # spare pages no sequence uses

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, device=device, dtype=torch.float32).to(torch.bfloat16)

    q = randn(sum(q_lens), hq, d) * 2
    k_cache = randn(num_pages, page, hkv, d)
    v_cache = randn(num_pages, page, hkv, d)
    perm = torch.randperm(num_pages, generator=generator, device=device)
    kv_page_indices = perm[:total_pages].to(torch.int32)

    def indptr(counts: list[int]) -> torch.Tensor:
        return torch.tensor([0, *counts], dtype=torch.int64).cumsum(0).to(torch.int32).to(device)

    last_page_len = torch.tensor(
        [n - (c - 1) * page for n, c in zip(kv_lens, page_counts, strict=True)], dtype=torch.int32
    ).to(device)
    return q, indptr(q_lens), k_cache, v_cache, indptr(page_counts), kv_page_indices, last_page_len


def run(
    q: torch.Tensor,
    qo_indptr: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_page_indices: torch.Tensor,
    kv_last_page_len: torch.Tensor,
) -> torch.Tensor:
    _, hq, d = q.shape
    _, page, hkv, _ = k_cache.shape
    group = hq // hkv
    sm_scale = 1.0 / math.sqrt(d)
    out = torch.empty_like(q)
    qo, kv, last = qo_indptr.tolist(), kv_indptr.tolist(), kv_last_page_len.tolist()
    for b in range(len(last)):
        q_start, q_len = qo[b], qo[b + 1] - qo[b]
        pages = kv_page_indices[kv[b] : kv[b + 1]].long()
        kv_len = (len(pages) - 1) * page + last[b]
        k = k_cache[pages].reshape(-1, hkv, d)[:kv_len].float()  # [kv_len, hkv, d]: the sequence's keys, in order
        v = v_cache[pages].reshape(-1, hkv, d)[:kv_len].float()
        k_t, v_h = k.permute(1, 2, 0)[:, None], v.permute(1, 0, 2)[:, None]  # [hkv, 1, d, kv_len], [hkv, 1, kv_len, d]
        chunk = max(1, SCORE_ELEMENTS // (hq * kv_len))
        for c in range(0, q_len, chunk):
            rows = min(chunk, q_len - c)
            qc = q[q_start + c : q_start + c + rows].float().view(rows, hkv, group, d).permute(1, 2, 0, 3)
            scores = torch.matmul(qc, k_t) * sm_scale  # [hkv, group, rows, kv_len]
            query_pos = torch.arange(c, c + rows, device=q.device) + (kv_len - q_len)
            hidden = torch.arange(kv_len, device=q.device)[None, :] > query_pos[:, None]  # causal, end-aligned
            probs = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
            o = torch.matmul(probs, v_h)  # [hkv, group, rows, d]
            out[q_start + c : q_start + c + rows] = o.permute(2, 0, 1, 3).reshape(rows, hq, d).to(q.dtype)
    return out
