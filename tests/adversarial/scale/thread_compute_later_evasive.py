# ruff: noqa
"""thread_compute_later without importing threading: the Thread class is reached as queue.threading.Thread (queue
imports threading), which a gate that bans the threading module by name lets through. The runtime check for
threads left running must still catch it."""

import queue
import time

import torch


def _fill(out: torch.Tensor, x: torch.Tensor) -> None:
    time.sleep(0.05)
    out.copy_(x * 2 + 1)


def run(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    queue.threading.Thread(target=_fill, args=(out, x), name="late-writer", daemon=True).start()
    return out
