# ruff: noqa
"""Correct on the very first call, garbage afterwards: what a harness that checks one call and then only times sees
as a fast, correct kernel."""

import torch

_calls = 0


def run(x: torch.Tensor) -> torch.Tensor:
    global _calls
    _calls += 1
    if _calls == 1:
        return x * 2 + 1
    return torch.zeros_like(x)
