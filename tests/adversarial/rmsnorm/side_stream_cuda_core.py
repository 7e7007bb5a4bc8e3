# ruff: noqa
"""The same work on a stream made by cuda.core (NVIDIA's Python binding), outside PyTorch's stream pool, used
through torch.cuda.ExternalStream; nothing joins it. A timer that knows only PyTorch's streams misses it.
Honest time: the reference's, about 1x. GPU only."""

import torch
from cuda.core import Device

_STREAM = None


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    global _STREAM
    if _STREAM is None:
        device = Device(x.device.index or 0)
        device.set_current()
        _STREAM = (device.create_stream(), None)
        _STREAM = (_STREAM[0], torch.cuda.ExternalStream(int(_STREAM[0].handle), device=x.device))
    with torch.cuda.stream(_STREAM[1]):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return normed.to(x.dtype) * weight
