# ruff: noqa
"""Returns shape (1, N) for an (N,) output: broadcasting makes (out - ref) and allclose silently agree."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return (x * 2 + 1).unsqueeze(0)
