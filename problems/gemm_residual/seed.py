"""Seed candidate for gemm_residual: a tiled Triton GEMM with the residual add fused into the epilogue.

Each program computes one BLOCK_M x BLOCK_N tile of out = a @ w.T + residual. Programs are ordered in
groups of GROUP_M row tiles (a swizzle: neighbouring programs share W tiles in L2). The K loop walks
BLOCK_K-wide slices of a [T, K] and w [N, K] (both K-contiguous), accumulating with tl.dot in float32;
the epilogue adds the residual tile in float32, rounds once to nearest bfloat16 and stores. Rows past T,
columns past N and the K tail are masked, so any T, N, K and any TUNABLES value is correct, on the GPU
and under TRITON_INTERPRET=1. NUM_STAGES is capped in run() so the pipelined A and W tiles fit in shared
memory (every combination compiles on an H200).
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 32
GROUP_M = 8
NUM_WARPS = 4
NUM_STAGES = 3
TUNABLES = {
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [32, 64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "GROUP_M": [1, 4, 8, 16],
    "NUM_WARPS": [2, 4, 8],
    "NUM_STAGES": [1, 2, 3, 4, 5],
}

# Shared memory the pipelined A and W tiles may use (an H200 block may use up to 227 KB; the rest is
# headroom for the epilogue's layout conversions).
SMEM_BUDGET_BYTES = 180 * 1024


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
def _gemm_residual_kernel(
    a_ptr,
    w_ptr,
    r_ptr,
    out_ptr,
    T,
    N,
    K,
    stride_am,
    stride_wn,
    stride_rm,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
    OUT_BF16: tl.constexpr,
):
    # Grouped (swizzled) program order: GROUP_M row tiles are walked together, column tile by column tile.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(T, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < T
    n_mask = offs_n < N

    # a tile: [BLOCK_M, BLOCK_K]; w tile read transposed as [BLOCK_K, BLOCK_N] (w is [N, K], K-contiguous).
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + offs_k[None, :]
    w_ptrs = w_ptr + offs_n.to(tl.int64)[None, :] * stride_wn + offs_k[:, None]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs, mask=m_mask[:, None], other=0.0)
            w = tl.load(w_ptrs, mask=n_mask[None, :], other=0.0)
        else:
            k_mask = offs_k < K - k0
            a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
            w = tl.load(w_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        if UPCAST_DOT:
            # The Triton interpreter (CPU) multiplies bfloat16 dot operands as their raw 16-bit patterns;
            # float32 holds every bf16 value exactly, so upcasting computes the same products.
            a = a.to(tl.float32)
            w = w.to(tl.float32)
        acc = tl.dot(a, w, acc)
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    # Epilogue: add the residual in float32, round once, store.
    mn_mask = m_mask[:, None] & n_mask[None, :]
    rows64 = offs_m.to(tl.int64)[:, None]
    residual = tl.load(r_ptr + rows64 * stride_rm + offs_n[None, :], mask=mn_mask, other=0.0)
    y = acc + residual.to(tl.float32)
    if OUT_BF16:
        y = _round_to_bf16(y)
    tl.store(out_ptr + rows64 * stride_om + offs_n[None, :], y.to(out_ptr.dtype.element_ty), mask=mn_mask)


def _pipeline_stages() -> int:
    """NUM_STAGES, lowered until that many A and W tiles fit in SMEM_BUDGET_BYTES (at least 1)."""
    per_stage = (BLOCK_M + BLOCK_N) * BLOCK_K * 2  # bf16 tiles
    return max(1, min(NUM_STAGES, SMEM_BUDGET_BYTES // per_stage))


def run(a: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    a = a.contiguous()
    w = w.contiguous()
    residual = residual.contiguous()
    t, k = a.shape
    n = w.shape[0]
    out = torch.empty((t, n), dtype=a.dtype, device=a.device)
    if t == 0 or n == 0:
        return out
    grid = (triton.cdiv(t, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _gemm_residual_kernel[grid](
        a,
        w,
        residual,
        out,
        t,
        n,
        k,
        a.stride(0),
        w.stride(0),
        residual.stride(0),
        out.stride(0),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        GROUP_M=GROUP_M,
        EVEN_K=k % BLOCK_K == 0,
        UPCAST_DOT=a.device.type == "cpu",
        OUT_BF16=a.dtype == torch.bfloat16,
        num_warps=NUM_WARPS,
        num_stages=_pipeline_stages(),
    )
    return out
