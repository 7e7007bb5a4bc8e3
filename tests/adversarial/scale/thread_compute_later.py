# ruff: noqa
"""Returns an unwritten tensor at once and fills it from a background thread 50 ms later (CUDA-L2 / Makora 'thread
injection'): the timed call is empty, and a checker that looks late enough sees the right values."""

import threading
import time

import torch


def _fill(out: torch.Tensor, x: torch.Tensor) -> None:
    time.sleep(0.05)
    out.copy_(x * 2 + 1)


def run(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    threading.Thread(target=_fill, args=(out, x), name="late-writer", daemon=True).start()
    return out
