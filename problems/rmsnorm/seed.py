"""Seed candidate for rmsnorm: a two-pass Triton kernel.

Each program handles ROWS_PER_PROGRAM rows. Pass 1 accumulates sum(x^2) in float32 over the row in
BLOCK_N-wide chunks; pass 2 re-reads the row, scales by rsqrt(mean + eps), rounds to bfloat16 (as the
reference does), multiplies by the weight, rounds again and stores. Correct for any M, N and any TUNABLES
value, on the GPU and under TRITON_INTERPRET=1.
"""

import torch
import triton
import triton.language as tl

BLOCK_N = 256
ROWS_PER_PROGRAM = 1
NUM_WARPS = 4
NUM_STAGES = 1
TUNABLES = {
    "BLOCK_N": [64, 128, 256, 512, 1024, 2048, 4096, 8192],
    "ROWS_PER_PROGRAM": [1, 2, 4, 8],
    "NUM_WARPS": [1, 2, 4, 8, 16],
    "NUM_STAGES": [1, 2, 3, 4],
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
    out_ptr,
    M,
    N,
    stride_x,
    stride_out,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS_PER_PROGRAM: tl.constexpr,
    OUT_BF16: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    row_mask = rows < M
    rows64 = rows.to(tl.int64)
    x_rows = x_ptr + rows64[:, None] * stride_x
    out_rows = out_ptr + rows64[:, None] * stride_out
    cols0 = tl.arange(0, BLOCK_N)

    # Pass 1: sum of squares in float32.
    acc = tl.zeros([ROWS_PER_PROGRAM, BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    mean_sq = tl.sum(acc, axis=1) / N
    rstd = tl.rsqrt(mean_sq + eps)

    # Pass 2: normalise, round like the reference, apply the weight.
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        col_mask = cols < N
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
        if OUT_BF16:
            normed = _round_to_bf16(x * rstd[:, None])
            y = _round_to_bf16(normed * w[None, :])
        else:
            normed = (x * rstd[:, None]).to(out_ptr.dtype.element_ty).to(tl.float32)
            y = normed * w[None, :]
        tl.store(out_rows + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    weight = weight.contiguous()
    m, n = x.shape
    out = torch.empty_like(x)
    if m == 0 or n == 0:
        return out
    grid = (triton.cdiv(m, ROWS_PER_PROGRAM),)
    _rmsnorm_kernel[grid](
        x,
        weight,
        out,
        m,
        n,
        x.stride(0),
        out.stride(0),
        EPS,
        BLOCK_N=BLOCK_N,
        ROWS_PER_PROGRAM=ROWS_PER_PROGRAM,
        OUT_BF16=x.dtype == torch.bfloat16,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return out
