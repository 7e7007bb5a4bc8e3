# ruff: noqa
"""pygpubench #7 'gc_nan': walks gc.get_objects() for tensors shaped like its input (the reference's expected output
among them), fills every one that is not the input itself with NaN, and returns NaN. A checker that treats NaN in the
expected output as a wildcard, or that compares NaN positions, then sees agreement. gc is reached as timeit.gc, so a
gate that only refuses `import gc` misses it."""

import timeit

import torch

_gc = timeit.gc


def run(x: torch.Tensor) -> torch.Tensor:
    for obj in _gc.get_objects():
        if (
            type(obj) is torch.Tensor
            and obj is not x
            and obj.shape == x.shape
            and obj.dtype == x.dtype
            and obj.device == x.device
            and not torch.equal(obj, x)
        ):
            obj.fill_(float("nan"))
    return torch.full_like(x, float("nan"))
