"""Destination-passing style: a candidate called as ``run(*inputs, *outputs)`` writes its results into output
tensors the harness allocates, and returns None (FlashInfer-Bench's default calling convention).

The judge learns the outputs' shapes and dtypes from the reference's first call on a workload (``describe``) and
sends them with every call; the worker allocates them fresh for each call (``allocate``), outside any timed
region, filled with 0xFF bytes (NaN in every floating format, -1 in the integer ones) so that an element the
candidate never writes cannot read as a result, and checks after the call (``written``) that it returned
nothing and kept every output where it was given: a candidate that swaps in other storage (``set_``,
``resize_``) has written nothing. What the outputs then hold is compared as a returned value would be.

Only the standard library and torch are imported, as for the rest of the child.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch

from arcengine.guard.child import correctness


class Layout(NamedTuple):
    """Where an output lives and how it is laid out, before the call: the call may change values only."""

    data_ptr: int
    storage_offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device


def layout(t: torch.Tensor) -> Layout:
    return Layout(t.data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype, t.device)


def describe(expected: object) -> dict[str, Any] | str:
    """The reference's outputs as the worker allocates them (shapes, dtypes, one tensor or a tuple), or why they
    cannot be passed as destinations."""
    single = not isinstance(expected, tuple | list)
    items = [expected] if single else list(expected)  # type: ignore[call-overload]
    if not items:
        return "the reference returned no outputs"
    tensors = []
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            return f"the reference's output {i} is {type(item).__name__}, not a tensor a candidate could write into"
        tensors.append({"shape": list(item.shape), "dtype": str(item.dtype).removeprefix("torch.")})
    return {"single": single, "tensors": tensors}


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, str(name), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown output dtype {name!r}")
    return dtype


def allocate(outputs: Mapping[str, Any], device: torch.device) -> list[torch.Tensor]:
    """Fresh output tensors for one call, every byte 0xFF (bool outputs: random bits, as no byte pattern of a bool
    is both valid and unlike every result)."""
    made = []
    for spec in outputs["tensors"]:
        shape, dtype = [int(n) for n in spec["shape"]], _dtype(spec["dtype"])
        if dtype == torch.bool:
            bits = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
            made.append(torch.randint(0, 2, shape, generator=bits, dtype=torch.bool).to(device))
            continue
        nbytes = math.prod(shape) * dtype.itemsize
        made.append(torch.full((nbytes,), 0xFF, dtype=torch.uint8, device=device).view(dtype).view(shape))
    return made


def written(returned: object, outputs: Sequence[torch.Tensor], before: Sequence[Layout],
            single: bool) -> tuple[object, str | None]:
    """The outputs as the call's result (one tensor or a tuple, as the reference returns them), or why the call
    did not write into them."""
    if returned is not None:
        return None, (f"returned {type(returned).__name__} instead of None: a destination-passing candidate writes "
                      f"its results into the {len(outputs)} output tensor(s) passed after its inputs")
    for i, (t, was) in enumerate(zip(outputs, before, strict=True)):
        if type(t) is torch.Tensor and (name := correctness.shadowed(t)):
            return None, f"output {i} {name}"
        if type(t) is not torch.Tensor or layout(t) != was:
            return None, (f"output {i} was moved to other storage or reshaped (set_, resize_, as_strided_) "
                          "instead of written into")
    return (outputs[0] if single else tuple(outputs)), None
