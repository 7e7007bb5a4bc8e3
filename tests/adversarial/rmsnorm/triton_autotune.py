# ruff: noqa
"""Honest: a Triton RMSNorm whose launch configuration is chosen by triton.autotune at its first call per shape
(Triton times the configs itself, in this process). Its autotuning is compilation, not cheating: must pass."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (1, 2, 4, 8)], key=["N"])
@triton.jit
def _rmsnorm(x_ptr, w_ptr, out_ptr, N, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rms = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    normed = (x * rms).to(tl.bfloat16).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride + cols, (normed * w).to(tl.bfloat16), mask=mask)


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    m, n = x.shape
    _rmsnorm[(m,)](x, weight, out, n, x.stride(0), 1e-6, BLOCK=triton.next_power_of_2(n))
    return out
