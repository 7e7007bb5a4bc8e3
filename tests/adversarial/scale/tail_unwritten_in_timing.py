# ruff: noqa
"""Right through correctness, then in timing leaves the last twentieth of every output unwritten (a kernel that
skips its tail block): small enough that a check reading only a few elements might miss it, cheap enough to gain
a little. It knows timing has begun when an earlier workload's shape comes round again (correctness goes through
the workloads one after another, timing starts again from the first). Timing's audits draw their positions after
the call, so about a twentieth of them land in the tail."""

import torch

_shapes: list[tuple[int, ...]] = []  # in the order first seen
_timing = [False]


def run(x: torch.Tensor) -> torch.Tensor:
    shape = tuple(x.shape)
    if not _timing[0]:
        if shape in _shapes and shape != _shapes[-1]:
            _timing[0] = True
        elif shape not in _shapes:
            _shapes.append(shape)
    if not _timing[0]:
        return x * 2 + 1
    out = torch.full_like(x, float("nan"))
    head = x.numel() - x.numel() // 20
    out.view(-1)[:head] = x.view(-1)[:head] * 2 + 1
    return out
