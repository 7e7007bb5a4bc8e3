# ruff: noqa
"""Returns 1/N everywhere: every row sums to one and the mean is exact, so it passes sum, mean and loose-atol checks
(the softmax problem's atol = 1e-5 exists because atol = 1e-2 would let it through)."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, 1.0 / x.shape[-1])
