# ruff: noqa
"""A Triton kernel that stores without a mask at an offset 2^40 elements past the output: a CUDA illegal address,
reported asynchronously and poisoning the whole context. The guard must name it, not crash. GPU only."""

import torch
import triton
import triton.language as tl


@triton.jit
def _wild_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    far = offs.to(tl.int64) + (1 << 40)
    tl.store(out_ptr + far, tl.zeros([BLOCK], dtype=tl.float32).to(out_ptr.dtype.element_ty))


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _wild_store[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
    return out
