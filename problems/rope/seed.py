"""Seed candidate for rope: one Triton kernel rotates both q and k (neox style, rotate halves).

The grid is (token blocks, head blocks): the first cdiv(Hq, BLOCK_H) head blocks rotate q, the rest rotate k.
Each program loads the positions of its BLOCK_T tokens, gathers their cos/sin rows from the float32 cache
once, and rotates a [BLOCK_T, BLOCK_H, D/2] tile of both halves in float32; the result is rounded to nearest
bfloat16 (as the reference's single cast does) and stored into new tensors. Correct for any T, Hq, Hkv, even D
(masks for tails, D/2 need not be a power of two) and any TUNABLES value, on the GPU and under
TRITON_INTERPRET=1.
"""

import torch
import triton
import triton.language as tl

BLOCK_T = 4
BLOCK_H = 8
NUM_WARPS = 4
TUNABLES = {
    "BLOCK_T": [1, 2, 4, 8, 16, 32],
    "BLOCK_H": [1, 2, 4, 8, 16, 32],
    "NUM_WARPS": [1, 2, 4, 8],
}


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
def _rotate_tile(
    x_ptr,
    out_ptr,
    tokens64,
    heads,
    cols,
    tile_mask,
    cos,
    sin,
    stride_xt,
    stride_xh,
    stride_ot,
    stride_oh,
    HALF: tl.constexpr,
    OUT_BF16: tl.constexpr,
):
    """Rotate x[tokens, heads, :] into out; tokens64 [BT,1,1], heads [1,BH,1], cols [1,1,BD], cos/sin [BT,1,BD]."""
    x_off = tokens64 * stride_xt + heads * stride_xh + cols
    o_off = tokens64 * stride_ot + heads * stride_oh + cols
    x1 = tl.load(x_ptr + x_off, mask=tile_mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + x_off + HALF, mask=tile_mask, other=0.0).to(tl.float32)
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    if OUT_BF16:
        o1 = _round_to_bf16(o1)
        o2 = _round_to_bf16(o2)
    tl.store(out_ptr + o_off, o1.to(out_ptr.dtype.element_ty), mask=tile_mask)
    tl.store(out_ptr + o_off + HALF, o2.to(out_ptr.dtype.element_ty), mask=tile_mask)


@triton.jit
def _rope_kernel(
    pos_ptr,
    q_ptr,
    k_ptr,
    cache_ptr,
    q_out_ptr,
    k_out_ptr,
    T,
    HQ,
    HKV,
    stride_qt,
    stride_qh,
    stride_kt,
    stride_kh,
    stride_qot,
    stride_qoh,
    stride_kot,
    stride_koh,
    stride_cache,
    HALF: tl.constexpr,
    BLOCK_HALF: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_H: tl.constexpr,
    OUT_BF16: tl.constexpr,
):
    pid_t = tl.program_id(0)
    pid_h = tl.program_id(1)
    tokens = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    token_mask = tokens < T
    cols = tl.arange(0, BLOCK_HALF)
    col_mask = cols < HALF

    # cos/sin rows of these tokens, gathered once and shared by every head of the tile.
    pos = tl.load(pos_ptr + tokens, mask=token_mask, other=0).to(tl.int64)
    cs_mask = token_mask[:, None] & col_mask[None, :]
    cs_off = pos[:, None] * stride_cache + cols[None, :]
    cos = tl.load(cache_ptr + cs_off, mask=cs_mask, other=0.0).to(tl.float32)[:, None, :]
    sin = tl.load(cache_ptr + cs_off + HALF, mask=cs_mask, other=0.0).to(tl.float32)[:, None, :]

    tokens64 = tokens.to(tl.int64)[:, None, None]
    cols3 = cols[None, None, :]
    tc_mask = token_mask[:, None, None] & col_mask[None, None, :]
    n_q_blocks = tl.cdiv(HQ, BLOCK_H)
    if pid_h < n_q_blocks:
        heads = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
        tile_mask = tc_mask & (heads < HQ)[None, :, None]
        _rotate_tile(
            q_ptr,
            q_out_ptr,
            tokens64,
            heads[None, :, None],
            cols3,
            tile_mask,
            cos,
            sin,
            stride_qt,
            stride_qh,
            stride_qot,
            stride_qoh,
            HALF,
            OUT_BF16,
        )
    else:
        heads = (pid_h - n_q_blocks) * BLOCK_H + tl.arange(0, BLOCK_H)
        tile_mask = tc_mask & (heads < HKV)[None, :, None]
        _rotate_tile(
            k_ptr,
            k_out_ptr,
            tokens64,
            heads[None, :, None],
            cols3,
            tile_mask,
            cos,
            sin,
            stride_kt,
            stride_kh,
            stride_kot,
            stride_koh,
            HALF,
            OUT_BF16,
        )


def run(
    positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor, cos_sin_cache: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    if q.stride(-1) != 1:
        q = q.contiguous()
    if k.stride(-1) != 1:
        k = k.contiguous()
    positions = positions.contiguous()
    cos_sin_cache = cos_sin_cache.contiguous()
    t, hq, d = q.shape
    hkv = k.shape[1]
    q_out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    if t == 0 or d == 0:
        return q_out, k_out
    half = d // 2
    grid = (triton.cdiv(t, BLOCK_T), triton.cdiv(hq, BLOCK_H) + triton.cdiv(hkv, BLOCK_H))
    _rope_kernel[grid](
        positions,
        q,
        k,
        cos_sin_cache,
        q_out,
        k_out,
        t,
        hq,
        hkv,
        q.stride(0),
        q.stride(1),
        k.stride(0),
        k.stride(1),
        q_out.stride(0),
        q_out.stride(1),
        k_out.stride(0),
        k_out.stride(1),
        cos_sin_cache.stride(0),
        HALF=half,
        BLOCK_HALF=triton.next_power_of_2(half),
        BLOCK_T=BLOCK_T,
        BLOCK_H=BLOCK_H,
        OUT_BF16=q.dtype == torch.bfloat16,
        num_warps=NUM_WARPS,
    )
    return q_out, k_out
