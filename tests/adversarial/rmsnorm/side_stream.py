# ruff: noqa
"""Launches the work on a private CUDA stream and returns without making the caller's stream wait for it (KernelBench
non_default_stream_kernel; CUDA-L2 'stream injection'). Timing with events on the default stream sees an empty
region; and because the side stream does not wait for the harness's own L2 flush and pre-launch busy-wait either, the
work can run inside them. GPU only."""

import torch

_STREAM: torch.cuda.Stream | None = None


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    global _STREAM
    if _STREAM is None:
        _STREAM = torch.cuda.Stream(device=x.device)
    with torch.cuda.stream(_STREAM):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
        return normed.to(x.dtype) * weight
