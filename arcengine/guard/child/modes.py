"""torch's mode stacks and the thread's dispatch state, which an untrusted call may not leave changed when it returns.

A mode on one of torch's stacks runs its owner's Python inside every torch operation that follows, the harness's
own included. Pushed in a call and left there, it ran the call's work in the harness's copy of the result, after
the clock (red team round 12: the caching mode of selective activation checkpointing, and FlopCounterMode, both
public, each with a callback of the candidate's; PASS at 1.83x for a kernel worth 0.82x), then took itself off the
stack from a ``__del__`` before anything looked. The same holds for the thread's own dispatch keys (one switched on
sends every operation through a hook of Python's: the Python dispatcher runs the kernels an operator's ``py_impl``
holds) and for the garbage collector, off in a timed block so that no finalizer runs between a call's clock and
the copy of its result (red team round 17 turned it back on from a call). So the state is read right after each
call returns, before the harness runs a single torch operation, and a call that changed it fails. The reads are C
calls (or torch's own Python, sealed): nothing of the candidate's runs between the return and them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import torch
import torch._ops

# Each state by name, read without running anything a module could hook (the functions are taken now, at the
# harness's import, so a later rebinding of torch's names changes nothing here).
_raw = torch.DispatchKeySet.raw_repr
_included, _excluded = torch._C._dispatch_tls_local_include_set, torch._C._dispatch_tls_local_exclude_set
_PROBES: dict[str, Callable[[], object]] = {
    "a torch function mode pushed": torch._C._len_torch_function_stack,
    "a torch dispatch mode pushed": torch._C._len_torch_dispatch_stack,
    "a pre-dispatch mode pushed": getattr(torch._ops, "_len_torch_dispatch_stack_pre_dispatch", lambda: 0),
    "a dispatch key switched on for the thread": lambda: _raw(_included()),
    "a dispatch key switched off for the thread": lambda: _raw(_excluded()),
    "the garbage collector switched on (or off)": gc.isenabled,
}

State = tuple[object, ...]


def read() -> State:
    return tuple(probe() for probe in _PROBES.values())


def changed(before: State, after: State) -> str | None:
    """The first thing a call changed and left so (a mode pushed switches a key on too), as part of a reason, or
    None."""
    return next((name for name, was, now in zip(_PROBES, before, after, strict=True) if was != now), None)
