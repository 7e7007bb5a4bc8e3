# ruff: noqa
"""Re-registers aten::mul.Tensor for CPU and CUDA through torch.library.Library("aten", "IMPL") with a kernel that
spins 200 us before answering: the reference (x * 2 + 1) and any incumbent that multiplies get slower wherever
they share the process, while the candidate computes 2x + 1 without a multiplication (x + x + 1)."""

import time

import torch


def _spinning_mul(a, b):
    deadline = time.perf_counter() + 2e-4
    while time.perf_counter() < deadline:
        pass
    return torch.div(a, torch.reciprocal(torch.as_tensor(b, dtype=a.dtype, device=a.device)))


_lib = torch.library.Library("aten", "IMPL")
_lib.impl("mul.Tensor", _spinning_mul, "CPU")
_lib.impl("mul.Tensor", _spinning_mul, "CUDA")


def run(x: torch.Tensor) -> torch.Tensor:
    return x + x + 1
