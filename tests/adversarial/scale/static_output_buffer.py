# ruff: noqa
"""Honest: writes every answer into one buffer per shape and returns it, as code built on static outputs does
(CUDA graphs, preallocated workspaces): each call overwrites what the last returned. Must pass."""

import torch

_BUFFERS: dict[tuple[int, ...], torch.Tensor] = {}


def run(x: torch.Tensor) -> torch.Tensor:
    out = _BUFFERS.get(tuple(x.shape))
    if out is None:
        out = _BUFFERS[tuple(x.shape)] = torch.empty_like(x)
    torch.mul(x, 2, out=out)
    out.add_(1)
    return out
