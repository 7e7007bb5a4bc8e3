"""torch's mode stacks, which an untrusted call may not leave changed when it returns.

A mode on one of torch's stacks runs its owner's Python inside every torch operation that follows, the harness's
own included. Pushed in a call and left there, it ran the call's work in the harness's copy of the result, after
the clock (red team round 12: the caching mode of selective activation checkpointing, and FlopCounterMode, both
public, each with a callback of the candidate's; PASS at 1.83x for a kernel worth 0.82x), then took itself off the
stack from a ``__del__`` before anything looked. So the stacks are read right after each call returns, before the
harness runs a single torch operation, and a call that changed them fails. The reads are C calls (or torch's own
Python, sealed): nothing of the candidate's runs between the return and them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch._ops

# Each state by name, read without running anything a module could hook.
_PROBES: dict[str, Callable[[], object]] = {
    "a torch function mode": torch._C._len_torch_function_stack,
    "a torch dispatch mode": torch._C._len_torch_dispatch_stack,
    "a pre-dispatch mode": getattr(torch._ops, "_len_torch_dispatch_stack_pre_dispatch", lambda: 0),
}

State = tuple[object, ...]


def read() -> State:
    return tuple(probe() for probe in _PROBES.values())


def changed(before: State, after: State) -> str | None:
    """What a call changed and left so, as the end of a reason, or None."""
    names = [name for name, was, now in zip(_PROBES, before, after, strict=True) if was != now]
    return ", ".join(names) or None
