# ruff: noqa
"""patch_timers through the modules' __dict__ (vars(time)["perf_counter"] = ...): a subscript assignment, which a
gate that looks for `module.attr = ...` and setattr(module, ...) does not see. The seal's identity check must."""

import time

import torch

_perf_counter, _perf_counter_ns = time.perf_counter, time.perf_counter_ns
_elapsed_time = vars(torch.cuda.Event)["elapsed_time"]

vars(time)["perf_counter"] = lambda: _perf_counter() / 100
vars(time)["perf_counter_ns"] = lambda: _perf_counter_ns() // 100
vars(torch.cuda)["synchronize"] = lambda device=None: None


def run(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1
