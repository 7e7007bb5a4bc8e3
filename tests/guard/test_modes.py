"""A mode an untrusted call leaves on torch's stacks fails the call (guard/child/modes.py, threads.Watch)."""

from __future__ import annotations

import gc

import pytest
import torch
from torch.utils._python_dispatch import _pop_mode
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
from torch.utils.flop_counter import FlopCounterMode

from arcengine.guard.child import threads


def _leaves_checkpoint_mode(x: torch.Tensor) -> torch.Tensor:
    policy = create_selective_checkpoint_contexts(lambda ctx, op, *a, **k: CheckpointPolicy.PREFER_RECOMPUTE)
    policy[0].__enter__()
    return x * 2


def _leaves_flop_counter(x: torch.Tensor) -> torch.Tensor:
    FlopCounterMode(display=False).__enter__()
    return x * 2


def _uses_a_mode_inside(x: torch.Tensor) -> torch.Tensor:
    with FlopCounterMode(display=False):
        return x * 2


@pytest.mark.parametrize("fn", [_leaves_checkpoint_mode, _leaves_flop_counter])
def test_a_mode_left_pushed_fails_an_untrusted_call(fn: object) -> None:
    dispatch, function = torch._C._len_torch_dispatch_stack(), torch._C._len_torch_function_stack()
    try:
        with pytest.raises(threads.LeftRunning, match="mode pushed after returning"):
            threads.Watch(fn, "candidate")(torch.ones(4))  # type: ignore[arg-type]
    finally:  # the test's own process stands in for the worker: its stacks as they were
        while torch._C._len_torch_dispatch_stack() > dispatch:
            _pop_mode()
        while torch._C._len_torch_function_stack() > function:
            torch._C._pop_torch_function_stack()


def test_a_mode_used_and_left_inside_the_call_passes() -> None:
    assert torch.equal(threads.Watch(_uses_a_mode_inside, "candidate")(torch.ones(4)), torch.full((4,), 2.0))


def _leaves_python_dispatcher_on(x: torch.Tensor) -> torch.Tensor:
    _kept.append(torch._C._EnablePythonDispatcher())  # its guard kept alive: the key stays on for the thread
    return x * 2


def _switches_the_collector(x: torch.Tensor) -> torch.Tensor:
    if gc.isenabled():
        gc.disable()
    else:
        gc.enable()
    return x * 2


_kept: list[object] = []


@pytest.mark.parametrize(("fn", "reason"), [(_leaves_python_dispatcher_on, "dispatch key switched on"),
                                            (_switches_the_collector, "garbage collector switched on")])
def test_dispatch_keys_or_the_collector_left_changed_fail_an_untrusted_call(fn: object, reason: str) -> None:
    collecting = gc.isenabled()
    try:
        with pytest.raises(threads.LeftRunning, match=reason):
            threads.Watch(fn, "candidate")(torch.ones(4))  # type: ignore[arg-type]
    finally:
        _kept.clear()
        (gc.enable if collecting else gc.disable)()
