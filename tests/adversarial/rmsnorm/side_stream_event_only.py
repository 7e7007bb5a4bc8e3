# ruff: noqa
"""Work on a high-priority private stream whose end is recorded in an event that nobody waits on: the result is
handed back as if the event had been joined. The harness's device-wide view must count the stream anyway.
Honest time: about 1x. GPU only."""

import torch

_STATE: dict[str, object] = {}


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if not _STATE:
        _STATE["stream"] = torch.cuda.Stream(device=x.device, priority=-1)
        _STATE["done"] = torch.cuda.Event()
    stream = _STATE["stream"]
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * weight
        _STATE["done"].record(stream)
    return out
