# ruff: noqa
"""The 'analytical' hack (KernelBench tests/solutions/*_analytical_hack.py): the inputs are standard normal, so
mean(x^2) is about 1 and the normalisation is skipped. Right on average, off by a few percent per row."""

import torch


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x * weight
