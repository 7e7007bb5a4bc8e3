"""Seed candidate for fp8_block_gemm: a tiled Triton FP8 GEMM with per-block scales.

Each program computes one BLOCK_M x BLOCK_N tile of out = a @ b.T (programs ordered in groups of GROUP_M tile
rows so neighbouring programs share b tiles in L2). The K loop steps one 128-wide scale group at a time: the
fp8 tiles (a [BLOCK_M, 128], b [128, BLOCK_N], both K-contiguous) go through tl.dot into a fresh float32
partial sum, which is multiplied by a_scale[m, j] * b_scale[n // 128, j] and added to the float32 accumulator
(scaling each group's partial in float32, as DeepSeek-V3 does, also bounds the tensor cores' reduced fp8
accumulation precision to 128 products). The tile is rounded to nearest bfloat16 and stored. Correct for any
M, N, K (masked tails) and any TUNABLES value, on the GPU (SM89+ for fp8 tensor cores) and under
TRITON_INTERPRET=1.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 128
GROUP_M = 8
NUM_WARPS = 4
NUM_STAGES = 3
TUNABLES = {
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [32, 64, 128],
    "GROUP_M": [1, 4, 8, 16],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [1, 2, 3, 4, 5],
}

SCALE_GROUP = 128  # the scales' granularity along K (and along N for b): fixed by the format
BLOCK_K = 128  # one scale group per K step; not tunable


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
def _fp8_block_gemm_kernel(
    a_ptr,
    b_ptr,
    a_scale_ptr,
    b_scale_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bn,
    stride_asm,
    stride_bsn,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SCALE_GROUP: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Grouped tile order: GROUP_M tile rows walk the N tiles together (better L2 reuse of b).
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pids_per_group = GROUP_M * num_pid_n
    group = pid // pids_per_group
    first_m = group * GROUP_M
    group_rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % pids_per_group) % group_rows
    pid_n = (pid % pids_per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    offs_m64 = offs_m.to(tl.int64)
    offs_n64 = offs_n.to(tl.int64)

    a_ptrs = a_ptr + offs_m64[:, None] * stride_am + offs_k[None, :]  # [BLOCK_M, BLOCK_K]
    b_ptrs = b_ptr + offs_n64[None, :] * stride_bn + offs_k[:, None]  # [BLOCK_K, BLOCK_N], K-contiguous
    a_scale_ptrs = a_scale_ptr + offs_m64 * stride_asm
    b_scale_ptrs = b_scale_ptr + (offs_n // SCALE_GROUP).to(tl.int64) * stride_bsn

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kb * BLOCK_K
        a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & mask_n[None, :], other=0.0)
        a_s = tl.load(a_scale_ptrs + kb, mask=mask_m, other=0.0)
        b_s = tl.load(b_scale_ptrs + kb, mask=mask_n, other=0.0)
        partial = tl.dot(a, b, out_dtype=tl.float32)
        acc += partial * (a_s[:, None] * b_s[None, :])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    out = _round_to_bf16(acc).to(tl.bfloat16)
    out_ptrs = out_ptr + offs_m64[:, None] * stride_om + offs_n[None, :]
    tl.store(out_ptrs, out, mask=mask_m[:, None] & mask_n[None, :])


def run(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor) -> torch.Tensor:
    a, b = a.contiguous(), b.contiguous()
    a_scale, b_scale = a_scale.contiguous(), b_scale.contiguous()
    m, k = a.shape
    n = b.shape[0]
    out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    if m == 0 or n == 0:
        return out
    if k == 0:
        return out.zero_()
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _fp8_block_gemm_kernel[grid](
        a,
        b,
        a_scale,
        b_scale,
        out,
        m,
        n,
        k,
        a.stride(0),
        b.stride(0),
        a_scale.stride(0),
        b_scale.stride(0),
        out.stride(0),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        SCALE_GROUP=SCALE_GROUP,
        GROUP_M=GROUP_M,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return out
