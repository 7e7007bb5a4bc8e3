# ruff: noqa
"""Returns torch.empty_like(x) and never writes it, hoping the allocator hands back the block that held the reference's
result (KernelBench result_reuse_kernel: the CUDA caching allocator often does)."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)
