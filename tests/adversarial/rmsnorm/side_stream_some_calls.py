# ruff: noqa
"""Side-stream work in a minority of the calls only: every third call runs on an unjoined private stream, the
others on the caller's. A rule that charges side-stream time only when it shows up in most rounds (the guard's
80%-of-rounds rule before issue 24) never charges it; the median then sits on the honest calls, so the gain is
small, but any gain is a timing leak. Honest time: about 1x. GPU only."""

import torch

_STREAM: list[torch.cuda.Stream] = []
_CALLS = [0]


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return normed.to(x.dtype) * weight


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if not _STREAM:
        _STREAM.append(torch.cuda.Stream(device=x.device, priority=-1))
    _CALLS[0] += 1
    if _CALLS[0] % 3:
        return _rmsnorm(x, weight)
    _STREAM[0].wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_STREAM[0]):
        return _rmsnorm(x, weight)
