"""Seed candidate for decoder_mlp: three Triton kernels called in sequence.

1. RMSNorm (NORM_ROWS rows per program, two passes over BLOCK_N-wide chunks): h = (x * rstd) rounded to bf16, times
   the norm weight, rounded again (as the reference and problems/rmsnorm do).
2. Gate/up GEMM: each program computes a [BLOCK_M, BLOCK_N] tile of both gate = h @ w_gate^T and
   up = h @ w_up^T (two float32 accumulators over the same h tile; w_gate_up rows [0, I) and [I, 2I)), then
   the fused epilogue rounds gate and up to bf16, applies silu in float32, rounds, multiplies by up, rounds,
   and stores act [T, I] in bf16. The gate/up intermediate never reaches memory.
3. Down GEMM with fused residual: out = round(round(act @ w_down^T) + x).
Programs are ordered in groups of GROUP_M row tiles so neighbouring programs share weight tiles in L2. Masks
cover every tail: correct for any T, H, I and any TUNABLES value, on the GPU and under TRITON_INTERPRET=1.

Under the interpreter (CPU tensors) tl.dot would read bfloat16 operands as raw bits, so the operands are
upcast to float32 first (DOT_F32); bf16 values are exact in float32 (and in tf32), so the products and the
float32 accumulation are the same as the bf16 tensor-core dot used on the GPU.
"""

import torch
import triton
import triton.language as tl

NORM_BLOCK_N = 1024
NORM_ROWS = 8
NORM_NUM_WARPS = 4
GU_BLOCK_M = 64
GU_BLOCK_N = 64
GU_BLOCK_K = 64
GU_NUM_WARPS = 4
GU_NUM_STAGES = 3
DOWN_BLOCK_M = 64
DOWN_BLOCK_N = 128
DOWN_BLOCK_K = 64
DOWN_NUM_WARPS = 4
DOWN_NUM_STAGES = 3
GROUP_M = 8
# Pipelined shared memory at the largest tiles stays under the H200's 227 KiB per block: the gate/up kernel
# holds stages * (BLOCK_M + 2 * BLOCK_N) * BLOCK_K bf16 values = 4 * (128 + 2 * 128) * 64 * 2 bytes = 192 KiB,
# the down kernel stages * (BLOCK_M + BLOCK_N) * BLOCK_K = 4 * (128 + 256) * 64 * 2 bytes = 192 KiB.
TUNABLES = {
    "NORM_BLOCK_N": [256, 512, 1024, 2048, 4096],
    "NORM_ROWS": [1, 2, 4, 8],
    "NORM_NUM_WARPS": [1, 2, 4, 8, 16],
    "GU_BLOCK_M": [16, 32, 64, 128],
    "GU_BLOCK_N": [32, 64, 128],
    "GU_BLOCK_K": [32, 64],
    "GU_NUM_WARPS": [4, 8],
    "GU_NUM_STAGES": [2, 3, 4],
    "DOWN_BLOCK_M": [16, 32, 64, 128],
    "DOWN_BLOCK_N": [32, 64, 128, 256],
    "DOWN_BLOCK_K": [32, 64],
    "DOWN_NUM_WARPS": [4, 8],
    "DOWN_NUM_STAGES": [2, 3, 4],
    "GROUP_M": [1, 4, 8, 16],
}

EPS = 1e-6


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
def _rmsnorm_kernel(
    x_ptr,
    w_ptr,
    h_ptr,
    M,
    N,
    stride_x,
    stride_h,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
):
    """h = round(round(x * rsqrt(mean(x^2) + eps)) * w) for ROWS rows of x [M, N] per program."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < M
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_x
    h_rows = h_ptr + rows.to(tl.int64)[:, None] * stride_h
    cols0 = tl.arange(0, BLOCK_N)
    acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=1) / N + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        col_mask = cols < N
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        h = _round_to_bf16(_round_to_bf16(x * rstd[:, None]) * w[None, :])
        tl.store(h_rows + cols[None, :], h.to(tl.bfloat16), mask=mask)


@triton.jit
def _tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Grouped program order: GROUP_M row tiles sweep the column tiles together (weight tiles reused in L2)."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _gate_up_kernel(
    h_ptr,
    wg_ptr,
    wu_ptr,
    act_ptr,
    M,
    N,
    K,
    stride_hm,
    stride_wn,
    stride_am,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    """act[M, N] = silu(h @ wg^T) * (h @ wu^T), h [M, K], wg and wu [N, K] (the two halves of w_gate_up, same
    strides), with the reference's roundings."""
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    a_ptrs = h_ptr + offs_m.to(tl.int64)[:, None] * stride_hm + offs_k[None, :]
    w_offs = offs_n.to(tl.int64)[None, :] * stride_wn + offs_k[:, None]  # a [BLOCK_K, BLOCK_N] tile of w^T
    g_ptrs = wg_ptr + w_offs
    u_ptrs = wu_ptr + w_offs
    acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k
        a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        w_mask = k_mask[:, None] & n_mask[None, :]
        wg = tl.load(g_ptrs, mask=w_mask, other=0.0)
        wu = tl.load(u_ptrs, mask=w_mask, other=0.0)
        if DOT_F32:
            a = a.to(tl.float32)
            wg = wg.to(tl.float32)
            wu = wu.to(tl.float32)
        acc_g = tl.dot(a, wg, acc_g)
        acc_u = tl.dot(a, wu, acc_u)
        a_ptrs += BLOCK_K
        g_ptrs += BLOCK_K
        u_ptrs += BLOCK_K
    gate = _round_to_bf16(acc_g)
    up = _round_to_bf16(acc_u)
    silu = _round_to_bf16(gate / (1.0 + tl.exp(-gate)))
    act = _round_to_bf16(silu * up)
    act_ptrs = act_ptr + offs_m.to(tl.int64)[:, None] * stride_am + offs_n[None, :]
    tl.store(act_ptrs, act.to(tl.bfloat16), mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def _down_residual_kernel(
    a_ptr,
    w_ptr,
    x_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_am,
    stride_wn,
    stride_xm,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    """out[M, N] = round(round(a @ w^T) + x), a [M, K], w [N, K], x [M, N]."""
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + offs_k[None, :]
    w_ptrs = w_ptr + offs_n.to(tl.int64)[None, :] * stride_wn + offs_k[:, None]  # [BLOCK_K, BLOCK_N] of w^T
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k
        a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        if DOT_F32:
            a = a.to(tl.float32)
            w = w.to(tl.float32)
        acc = tl.dot(a, w, acc)
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    mask = m_mask[:, None] & n_mask[None, :]
    rows = offs_m.to(tl.int64)[:, None]
    x = tl.load(x_ptr + rows * stride_xm + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
    out = _round_to_bf16(_round_to_bf16(acc) + x)
    tl.store(out_ptr + rows * stride_om + offs_n[None, :], out.to(tl.bfloat16), mask=mask)


def run(x: torch.Tensor, norm_weight: torch.Tensor, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    norm_weight = norm_weight.contiguous()
    w_gate_up = w_gate_up.contiguous()
    w_down = w_down.contiguous()
    t, hidden = x.shape
    inter = w_down.shape[1]
    out = torch.empty_like(x)
    if t == 0 or hidden == 0:
        return out
    dot_f32 = x.device.type == "cpu"  # CPU tensors: Triton runs in its interpreter (see the module docstring)
    h = torch.empty_like(x)
    _rmsnorm_kernel[(triton.cdiv(t, NORM_ROWS),)](
        x,
        norm_weight,
        h,
        t,
        hidden,
        x.stride(0),
        h.stride(0),
        EPS,
        BLOCK_N=NORM_BLOCK_N,
        ROWS=NORM_ROWS,
        num_warps=NORM_NUM_WARPS,
    )
    act = torch.empty((t, inter), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(t, GU_BLOCK_M) * triton.cdiv(inter, GU_BLOCK_N),)
    _gate_up_kernel[grid](
        h,
        w_gate_up[:inter],
        w_gate_up[inter:],
        act,
        t,
        inter,
        hidden,
        h.stride(0),
        w_gate_up.stride(0),
        act.stride(0),
        BLOCK_M=GU_BLOCK_M,
        BLOCK_N=GU_BLOCK_N,
        BLOCK_K=GU_BLOCK_K,
        GROUP_M=GROUP_M,
        DOT_F32=dot_f32,
        num_warps=GU_NUM_WARPS,
        num_stages=GU_NUM_STAGES,
    )
    grid = (triton.cdiv(t, DOWN_BLOCK_M) * triton.cdiv(hidden, DOWN_BLOCK_N),)
    _down_residual_kernel[grid](
        act,
        w_down,
        x,
        out,
        t,
        hidden,
        inter,
        act.stride(0),
        w_down.stride(0),
        x.stride(0),
        out.stride(0),
        BLOCK_M=DOWN_BLOCK_M,
        BLOCK_N=DOWN_BLOCK_N,
        BLOCK_K=DOWN_BLOCK_K,
        GROUP_M=GROUP_M,
        DOT_F32=dot_f32,
        num_warps=DOWN_NUM_WARPS,
        num_stages=DOWN_NUM_STAGES,
    )
    return out
