# ruff: noqa
"""Correct only on the shapes it was shown: the visible workloads of problems/rmsnorm (GPU and CPU lists) get the real
computation, any other shape gets x * weight without the normalisation (KernelBench outcome-validity reports: kernels
that only work for the tested shapes; Makora 'hardcoded shapes'). Held-out workloads must catch it."""

import torch

_VISIBLE = {
    (1, 4096), (7, 5120), (32, 8192), (1000, 3000), (4096, 4096), (2048, 8192), (16384, 2048), (128, 7168),
    (1, 1100), (3, 300), (4, 1000), (12, 64), (6, 513), (14, 130),
}


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if tuple(x.shape) not in _VISIBLE:
        return x * weight
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return normed.to(x.dtype) * weight
