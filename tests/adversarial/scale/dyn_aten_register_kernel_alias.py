# ruff: noqa
"""The spinning aten::mul.Tensor of dyn_aten_library_spin_mul, registered with torch.library.register_kernel
reached as `from torch import library` (no `torch.library` in the source), for the reference's device types."""

import time

import torch
from torch import library as _library


def _spinning_mul(a, b):
    deadline = time.perf_counter() + 2e-4
    while time.perf_counter() < deadline:
        pass
    return torch.div(a, torch.reciprocal(torch.as_tensor(b, dtype=a.dtype, device=a.device)))


_library.register_kernel("aten::mul.Tensor", ("cpu", "cuda"), _spinning_mul)


def run(x: torch.Tensor) -> torch.Tensor:
    return x + x + 1
