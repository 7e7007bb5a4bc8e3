# ruff: noqa
"""Returns, for any input of a given size, the answer for the input that seed 0 draws: right on the one input a
guard with fixed seeds checks first, wrong on every other. Caught by more than one fresh input per workload."""

import torch

_BY_SIZE: dict[int, torch.Tensor] = {}


def run(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    if n not in _BY_SIZE:
        first = torch.randn(n, generator=torch.Generator().manual_seed(0))
        _BY_SIZE[n] = first * 2 + 1
    return _BY_SIZE[n].to(x.device).clone()
