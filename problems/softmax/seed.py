"""Seed candidate for softmax: an online-softmax Triton kernel.

Each program handles ROWS_PER_PROGRAM rows. Pass 1 walks the row in BLOCK_N-wide chunks keeping a running
max and a running sum of exp(x - max) in float32 (rescaled when the max grows); pass 2 re-reads the row and
writes exp(x - max) / sum, rounded to nearest bfloat16. Correct for any M, N and any TUNABLES value, on the
GPU and under TRITON_INTERPRET=1.
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
def _softmax_kernel(
    x_ptr,
    out_ptr,
    M,
    N,
    stride_x,
    stride_out,
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

    # Pass 1: running max and running sum (online softmax), float32.
    m_run = tl.full([ROWS_PER_PROGRAM], float("-inf"), dtype=tl.float32)
    s_run = tl.zeros([ROWS_PER_PROGRAM], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_run, tl.max(x, axis=1))
        # A row that has seen only -inf so far keeps max -inf; use 0 as the shift so that no
        # (-inf) - (-inf) = NaN appears.
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s_run = s_run * tl.exp(m_run - m_safe) + tl.sum(tl.exp(x - m_safe[:, None]), axis=1)
        m_run = m_new
    m_fin = tl.where(m_run == float("-inf"), 0.0, m_run)
    s_fin = tl.where(row_mask, s_run, 1.0)  # rows past M: avoid 0 / 0 (never stored)

    # Pass 2: normalise and store.
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        mask = row_mask[:, None] & (cols < N)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m_fin[:, None]) / s_fin[:, None]
        if OUT_BF16:
            y = _round_to_bf16(y)
        tl.store(out_rows + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def run(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    m, n = x.shape
    out = torch.empty_like(x)
    if m == 0 or n == 0:
        return out
    grid = (triton.cdiv(m, ROWS_PER_PROGRAM),)
    _softmax_kernel[grid](
        x,
        out,
        m,
        n,
        x.stride(0),
        out.stride(0),
        BLOCK_N=BLOCK_N,
        ROWS_PER_PROGRAM=ROWS_PER_PROGRAM,
        OUT_BF16=x.dtype == torch.bfloat16,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return out
