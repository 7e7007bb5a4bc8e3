# ruff: noqa
"""Right through correctness, then in timing leaves the last twentieth of every output unwritten (a kernel that
skips its tail block): small enough that a check reading only a few elements might miss it, cheap enough to gain
a little. Timing's audits draw their positions after the call, so about a twentieth of them land in the tail."""

import torch

_calls = [0]


def run(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    if _calls[0] <= 40:
        return x * 2 + 1
    out = torch.full_like(x, float("nan"))
    head = x.numel() - x.numel() // 20
    out.view(-1)[:head] = x.view(-1)[:head] * 2 + 1
    return out
