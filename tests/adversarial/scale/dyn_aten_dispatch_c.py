# ruff: noqa
"""The spinning aten::mul.Tensor registered below torch.library, through the dispatcher's own binding
(torch._C._dispatch_library), with torch._C fetched by getattr."""

import time

import torch

_C = getattr(torch, "_C")


def _spinning_mul(a, b):
    deadline = time.perf_counter() + 2e-4
    while time.perf_counter() < deadline:
        pass
    return torch.div(a, torch.reciprocal(torch.as_tensor(b, dtype=a.dtype, device=a.device)))


_registration = _C._dispatch_library("IMPL", "aten", "CPU", __file__, 0)
_registration.impl("mul.Tensor", "CPU", _spinning_mul, True)


def run(x: torch.Tensor) -> torch.Tensor:
    return x + x + 1
