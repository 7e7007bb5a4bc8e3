"""Seed candidate for paged_prefill_gqa: a FlashAttention-2 style Triton kernel over a paged KV cache.

One program per (query block of BLOCK_M new tokens, query head, sequence). It loads its query tile once, then
walks the sequence's KV positions BLOCK_N at a time up to the last one its causal mask lets it see: each
position's page comes from kv_page_indices (a tile may span several pages, any page size works), K and V rows
are gathered from the cache at the query head's KV head (h // group), and an online softmax in float32 (exp2,
running max and sum) accumulates P @ V in float32 (P rounded to bf16 for the tensor cores, as FlashAttention
does). The causal mask is aligned to the end of the sequence: new token i sees KV positions <= kv_len - q_len + i.
The output is divided by the running sum, rounded to nearest bfloat16 and stored. Correct for any batch, lengths,
page size, head counts and head dim (masked tails) and any TUNABLES value, on the GPU and under TRITON_INTERPRET=1.
"""

import math

import torch
import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 64
NUM_WARPS = 4
NUM_STAGES = 2
TUNABLES = {
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [16, 32, 64],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [1, 2, 3, 4],
}

LOG2E = 1.4426950408889634


@triton.jit
def _round_to_bf16(y):
    """Round float32 to the nearest bfloat16 (ties to even) on the bits; returns float32 holding a bf16 value.

    On the GPU a plain `.to(tl.bfloat16)` already rounds to nearest even, but the Triton interpreter's
    float32 -> bfloat16 cast truncates; doing it on the bits gives the same result in both places.
    """
    bits = y.to(tl.uint32, bitcast=True)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    bits = (bits >> 16) << 16
    rounded = bits.to(tl.float32, bitcast=True)
    return tl.where(y != y, y, rounded)  # keep NaN as NaN


@triton.jit
def _paged_prefill_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    qo_indptr_ptr,
    kv_indptr_ptr,
    kv_page_indices_ptr,
    kv_last_page_len_ptr,
    qk_scale,  # D^-0.5 * log2(e): scores in the exp2 domain
    stride_qt,
    stride_qh,
    stride_kp,
    stride_ks,
    stride_kh,
    stride_vp,
    stride_vs,
    stride_vh,
    stride_ot,
    stride_oh,
    GROUP: tl.constexpr,  # query heads per KV head
    PAGE_SIZE: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,  # HEAD_DIM rounded up to a power of two
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    DOT_FP32: tl.constexpr,  # widen dot operands to float32 (the Triton interpreter; see run())
):
    m_block = tl.program_id(0)
    head = tl.program_id(1)
    seq = tl.program_id(2)
    q_start = tl.load(qo_indptr_ptr + seq)
    q_len = tl.load(qo_indptr_ptr + seq + 1) - q_start
    if m_block * BLOCK_M >= q_len:
        return
    page_start = tl.load(kv_indptr_ptr + seq)
    num_pages = tl.load(kv_indptr_ptr + seq + 1) - page_start
    kv_len = (num_pages - 1) * PAGE_SIZE + tl.load(kv_last_page_len_ptr + seq)
    prefix = kv_len - q_len  # new token i sits at KV position prefix + i
    kv_head = head // GROUP

    offs_m = m_block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    m_mask = offs_m < q_len
    d_mask = offs_d < HEAD_DIM
    q_rows = (q_start + offs_m).to(tl.int64)
    q = tl.load(
        q_ptr + q_rows[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
        mask=m_mask[:, None] & d_mask[None, :],
        other=0.0,
    )
    if DOT_FP32:
        q = q.to(tl.float32)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    # The last KV position any row of this block may see (+1); rows past q_len are never stored.
    kv_end = tl.minimum(kv_len, prefix + (m_block + 1) * BLOCK_M)
    for start_n in range(0, kv_end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        n_mask = offs_n < kv_len
        page = tl.load(kv_page_indices_ptr + page_start + offs_n // PAGE_SIZE, mask=n_mask, other=0).to(tl.int64)
        slot = offs_n % PAGE_SIZE
        k_rows = page * stride_kp + slot * stride_ks + kv_head * stride_kh
        v_rows = page * stride_vp + slot * stride_vs + kv_head * stride_vh
        k = tl.load(k_ptr + k_rows[None, :] + offs_d[:, None], mask=n_mask[None, :] & d_mask[:, None], other=0.0)
        if DOT_FP32:
            k = k.to(tl.float32)
        s = tl.dot(q, k) * qk_scale  # [BLOCK_M, BLOCK_N], float32
        visible = (offs_n[None, :] <= prefix + offs_m[:, None]) & n_mask[None, :]
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        # A row that has seen nothing yet keeps max -inf: shift by 0 instead so no (-inf) - (-inf) appears.
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + v_rows[:, None] + offs_d[None, :], mask=n_mask[:, None] & d_mask[None, :], other=0.0)
        if DOT_FP32:  # the same bf16-rounded P, held in float32
            acc = acc * alpha[:, None] + tl.dot(_round_to_bf16(p), v.to(tl.float32))
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    l_safe = tl.where(l_i == 0.0, 1.0, l_i)  # only rows past q_len can have an empty sum
    o = _round_to_bf16(acc / l_safe[:, None])
    tl.store(
        out_ptr + q_rows[:, None] * stride_ot + head * stride_oh + offs_d[None, :],
        o.to(out_ptr.dtype.element_ty),
        mask=m_mask[:, None] & d_mask[None, :],
    )


def run(
    q: torch.Tensor,
    qo_indptr: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_page_indices: torch.Tensor,
    kv_last_page_len: torch.Tensor,
) -> torch.Tensor:
    q, k_cache, v_cache = q.contiguous(), k_cache.contiguous(), v_cache.contiguous()
    total_q, num_heads, head_dim = q.shape
    _, page_size, num_kv_heads, _ = k_cache.shape
    batch = kv_last_page_len.shape[0]
    out = torch.empty_like(q)
    if total_q == 0 or batch == 0:
        return out
    max_q_len = int((qo_indptr[1:] - qo_indptr[:-1]).max().item())
    grid = (triton.cdiv(max_q_len, BLOCK_M), num_heads, batch)
    _paged_prefill_kernel[grid](
        q,
        k_cache,
        v_cache,
        out,
        qo_indptr,
        kv_indptr,
        kv_page_indices,
        kv_last_page_len,
        LOG2E / math.sqrt(head_dim),
        q.stride(0),
        q.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        v_cache.stride(0),
        v_cache.stride(1),
        v_cache.stride(2),
        out.stride(0),
        out.stride(1),
        GROUP=num_heads // num_kv_heads,
        PAGE_SIZE=page_size,
        HEAD_DIM=head_dim,
        BLOCK_D=max(16, triton.next_power_of_2(head_dim)),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        # The Triton interpreter (CPU) multiplies bfloat16 bit patterns in tl.dot (triton-lang/triton#11584), so
        # there the bf16 operands are widened to float32 first: the same values, products and sums.
        DOT_FP32=q.device.type == "cpu",
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return out
