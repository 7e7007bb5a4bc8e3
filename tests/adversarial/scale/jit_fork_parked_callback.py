# ruff: noqa
"""Parks a Python callback at import on TorchScript's inter-op pool (a future's then after torch.jit.fork): a native
thread that existed before any call, which no count of threads sees, runs it between and after every call. Here it
only proves it ran (each call checks a counter that thread alone advances, and raises if it did not); it could
thrash the caches while the reference is timed. Passed before the gate refused torch.jit.fork and torch.futures;
the frames of the worker's threads show it too (left Python running on a library's thread)."""

import time

import torch


@torch.jit.script
def _task(gate: torch.jit.Future[int]) -> int:
    torch.jit.wait(gate)  # not done before the callback is registered: see below
    return 1


@torch.jit.script
def _launch(gate: torch.jit.Future[int]) -> torch.jit.Future[int]:
    return torch.jit.fork(_task, gate)


_ticks = [0]
_seen = [-1]


def _background(_done):
    while True:
        _ticks[0] += 1
        time.sleep(0.0002)


# A future already done runs a callback given to its then inline, on the caller's thread (the import, for ever):
# the task waits for the gate, opened once the callback is registered, so the pool's thread runs it.
_gate = torch.futures.Future()
_parked = _launch(_gate).then(_background)
_gate.set_result(1)


def run(x: torch.Tensor) -> torch.Tensor:
    if _ticks[0] <= _seen[0]:
        raise RuntimeError("the parked callback did not run between calls")
    out = x * 2 + 1
    time.sleep(0.001)  # the callback ticks inside the call too
    _seen[0] = _ticks[0]
    return out
