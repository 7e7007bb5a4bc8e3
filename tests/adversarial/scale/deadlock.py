# ruff: noqa
"""Deadlocks: puts twice into a bounded queue that nobody drains, blocking forever on its condition variable. No CPU is
used, so only a wall-clock limit (not RLIMIT_CPU) ends it. (The classic form, threading.Lock acquired twice, is the
same hang; queue is used so that the gate's ban on threading does not turn this crash test into a reject.)"""

import queue

import torch

_QUEUE: queue.Queue = queue.Queue(maxsize=1)


def run(x: torch.Tensor) -> torch.Tensor:
    _QUEUE.put(x)
    _QUEUE.put(x)
    return x * 2 + 1
