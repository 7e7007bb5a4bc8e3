# ruff: noqa
"""Skips the last element of large outputs (a kernel whose tail tile is never launched), leaving it 0. One wrong
element in 1000 or more stays under the 0.1% of misses that matched_ratio = 0.999 forgives, whatever its error, so
the answer is accepted with an arbitrarily wrong value. Small outputs (N < 1000) are computed fully."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    out = x * 2 + 1
    if x.numel() >= 1000:
        out[-1] = 0.0
    return out
