# ruff: noqa
"""Returns zeros without computing anything. Passes any check that uses a loose atol on small-valued outputs, or that
only checks 'no NaN' (KernelBench zero_out_kernel; pygpubench control)."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
