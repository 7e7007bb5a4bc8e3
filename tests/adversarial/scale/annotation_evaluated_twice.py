# ruff: noqa
"""An annotation that computes a string: functools.singledispatch's register reads the function's annotations,
which evaluates the annotation (the string it builds) and then that string once more as code, so __import__ runs
though no such name is written. Here it only proves the reach (gc) and answers honestly."""

from __future__ import annotations

import functools

import torch


@functools.singledispatch
def _dispatch(value):
    return value


def _typed(value: "__imp" + "ort__('g' + 'c').collect() and int"):
    return value


_dispatch.register(_typed)


def run(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1
