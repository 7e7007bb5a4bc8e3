# ruff: noqa
"""Stays correct through correctness and the first timed rounds, then stops working. It recognises the timing phase
by an input it has seen before (timing reuses a small pool of inputs; correctness never repeats one), keeps
computing for a few more calls so that an audit drawn from the first min_reps rounds sees the right answer, and then
returns garbage, cheaply, for the rest: most timed calls, and so the median, are the cheap ones. On CPU it stays
honest for 4 calls after the first repeat (min_reps = 3); on CUDA, where warm-up runs by time, for 0.05 s."""

import time

import torch

_HONEST_AFTER_REPEAT = 4
_seen: set[tuple[object, ...]] = set()
_timed: dict[tuple[int, ...], list[float]] = {}


def _honest(x: torch.Tensor) -> bool:
    shape = tuple(x.shape)
    key = (x.data_ptr(), shape, float(x[0]), float(x[-1]))
    if shape not in _timed:
        if key not in _seen:
            _seen.add(key)
            return True
        _timed[shape] = [time.perf_counter(), 0]
    started, calls = _timed[shape]
    _timed[shape][1] = calls + 1
    if x.is_cuda:
        return time.perf_counter() - started < 0.05
    return calls < _HONEST_AFTER_REPEAT


def run(x: torch.Tensor) -> torch.Tensor:
    if _honest(x):
        return x * 2 + 1
    return torch.empty_like(x)
