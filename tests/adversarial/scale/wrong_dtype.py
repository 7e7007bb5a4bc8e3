# ruff: noqa
"""Returns float64 for a float32 problem: right values, wrong contract (and, on GPU, half the speed for the same
bandwidth). Passes comparisons that upcast both sides."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return x.double() * 2 + 1
