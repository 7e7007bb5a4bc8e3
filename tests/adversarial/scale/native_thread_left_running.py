# ruff: noqa
"""Leaves a thread running after run() returns, started through the low-level _thread module (reached as
tempfile._thread, past a gate that bans `import _thread`). threading.enumerate() does not list such threads,
so a 'no new threads' check built on it is blind, and a worker like thread_compute_later's could run unnoticed. Here
the worker only sleeps and the answer is computed honestly, so the verdict is deterministic: the guard must still
see the thread (threading._active misses it; /proc/self/task or _thread._count() do not)."""

import tempfile
import time

import torch

_low_level = tempfile._thread


def run(x: torch.Tensor) -> torch.Tensor:
    _low_level.start_new_thread(time.sleep, (30.0,))
    return x * 2 + 1
