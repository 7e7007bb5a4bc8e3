# ruff: noqa
"""Returns the expected mean of the output (2 * E[x] + 1 = 1) everywhere: right on average, wrong per element. Fools
checks on sums or means (the KernelBench 'analytical' hacks on loss kernels)."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, 1.0)
