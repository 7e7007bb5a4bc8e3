# ruff: noqa
"""Correct while correctness is checked, then replays a banked result (SOL-ExecBench
tests/samples/evil_timing_bypass, which counts the driver's correctness rounds). This one needs no count: it
recognises the timing phase by an input it has seen before (timing reuses a small pool; correctness never repeats
one) and from then on returns the answer it computed for the first input of that shape, doing no work at all."""

import torch

_seen: set[tuple[object, ...]] = set()
_first: dict[tuple[int, ...], torch.Tensor] = {}
_replaying: set[tuple[int, ...]] = set()


def run(x: torch.Tensor) -> torch.Tensor:
    shape = tuple(x.shape)
    key = (x.data_ptr(), shape, float(x[0]), float(x[-1]))
    if shape not in _replaying and key in _seen:
        _replaying.add(shape)
    if shape in _replaying:
        return _first[shape]
    _seen.add(key)
    out = x * 2 + 1
    _first.setdefault(shape, out)
    return out
