# ruff: noqa
"""Hangs without using the CPU: sleeps for days inside run(), as a deadlock on a lock or a full queue would block on
its condition variable. Only a wall-clock limit (not RLIMIT_CPU) ends it. (The classic forms, threading.Lock
acquired twice or a bounded queue.Queue filled twice, import modules the gate refuses; the hang is the same.)"""

import time

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    time.sleep(10**6)
    return x * 2 + 1
