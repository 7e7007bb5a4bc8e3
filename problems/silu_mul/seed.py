"""Seed candidate for silu_mul: a row-block x column-block Triton kernel.

The grid is (row blocks of ROWS_PER_PROGRAM rows, column blocks of BLOCK_D columns). Each program loads
its gate tile from columns [0, D) and the matching up tile from columns [D, 2 * D) of x, computes
silu(gate) * up in float32, rounds to nearest bfloat16 and stores. Rows past T and columns past D are
masked, so any T, D and any TUNABLES value is correct, on the GPU and under TRITON_INTERPRET=1.
"""

import torch
import triton
import triton.language as tl

BLOCK_D = 1024
ROWS_PER_PROGRAM = 1
NUM_WARPS = 4
TUNABLES = {
    "BLOCK_D": [64, 128, 256, 512, 1024, 2048, 4096],
    "ROWS_PER_PROGRAM": [1, 2, 4, 8],
    "NUM_WARPS": [1, 2, 4, 8, 16],
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
def _silu_mul_kernel(
    x_ptr,
    out_ptr,
    T,
    D,
    stride_x,
    stride_out,
    BLOCK_D: tl.constexpr,
    ROWS_PER_PROGRAM: tl.constexpr,
    OUT_BF16: tl.constexpr,
):
    pid_t = tl.program_id(0)
    pid_d = tl.program_id(1)
    rows = pid_t * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    cols = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = (rows < T)[:, None] & (cols < D)[None, :]
    rows64 = rows.to(tl.int64)[:, None]

    gate_ptrs = x_ptr + rows64 * stride_x + cols[None, :]
    gate = tl.load(gate_ptrs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gate_ptrs + D, mask=mask, other=0.0).to(tl.float32)
    # silu(g) = g / (1 + exp(-g)); exp overflows to +inf for g < -88, giving -0.0 as torch does.
    y = gate / (1.0 + tl.exp(-gate)) * up
    if OUT_BF16:
        y = _round_to_bf16(y)
    tl.store(out_ptr + rows64 * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def run(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    t, two_d = x.shape
    d = two_d // 2
    out = torch.empty((t, d), dtype=x.dtype, device=x.device)
    if t == 0 or d == 0:
        return out
    grid = (triton.cdiv(t, ROWS_PER_PROGRAM), triton.cdiv(d, BLOCK_D))
    _silu_mul_kernel[grid](
        x,
        out,
        t,
        d,
        x.stride(0),
        out.stride(0),
        BLOCK_D=BLOCK_D,
        ROWS_PER_PROGRAM=ROWS_PER_PROGRAM,
        OUT_BF16=x.dtype == torch.bfloat16,
        num_warps=NUM_WARPS,
    )
    return out
