# ruff: noqa
"""Correct RMSNorm in PyTorch on a private stream that first waits for the caller's (so it sees the inputs), then
returns without making the caller's stream wait for it. Events on the caller's stream time an empty region: it got
6.1x on the H200 before the guard counted every stream (issue 24). Honest time: the reference's, about 1x. GPU only."""

import torch

_STREAM: torch.cuda.Stream | None = None


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    global _STREAM
    if _STREAM is None:
        _STREAM = torch.cuda.Stream(device=x.device)
    _STREAM.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_STREAM):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return normed.to(x.dtype) * weight
