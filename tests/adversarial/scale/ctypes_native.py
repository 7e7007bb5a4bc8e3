# ruff: noqa
"""Native escape through ctypes: libc calls (or any shared object) outside Python, invisible to every dynamic check."""

import ctypes

import torch

_libc = ctypes.CDLL(None)


def run(x: torch.Tensor) -> torch.Tensor:
    _libc.getpid()
    return x * 2 + 1
