"""The baseline's routes, in the worker that runs them: what a user would otherwise run instead of a candidate.

A problem declares its routes (``[baseline] routes`` in problem.toml): ``compile`` (the reference under
``torch.compile``), ``compile-max-autotune`` (the same, autotuned), ``eager`` (the reference itself, uncompiled:
KernelBench's eager baseline, named so a result reports its ratio; it is timed as the reference, never twice), or
the name of a function in the problem's ``baseline.py`` called like the reference's ``run`` (a library route:
cuBLAS through ``torch.mm``, SDPA, ...).
The judge checks each route like a candidate and times every correct one in the same rounds as the others; per
workload the fastest is the baseline, unless the reference itself is faster: a user who has the reference can
run it, so a baseline never trails it (``REFERENCE_ROUTE`` then names the reference as the baseline).

Each workload gets a compilation of its own, specialised to its shapes (``dynamic=False``) from a fresh copy of
the reference's code: Dynamo keeps its cache on the code object, so one compiled function shared by every shape
would recompile as the shapes change and, past its recompile limit, fall back to eager. Compilation happens at a
workload's first call, which the judge counts as compile time, never as run time.

Imports are limited to the standard library and torch, as for the child.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from types import ModuleType

COMPILE_MODES = {"compile": "default", "compile-max-autotune": "max-autotune"}
EAGER_ROUTE = "eager"  # the reference, uncompiled: its time is the reference's, so no worker runs it
BUILTIN_ROUTES = (*COMPILE_MODES, EAGER_ROUTE)  # routes that need no baseline.py
ROLE_PREFIX = "baseline:"  # the timing loop's name of a route: "baseline:compile"
REFERENCE_ROUTE = "reference"  # the baseline's name where the reference is: no route declared, correct or faster

Fn = Callable[..., object]


def timed_routes(names: Sequence[str]) -> tuple[str, ...]:
    """The routes a child checks and times beside the reference: all but eager, which is the reference."""
    return tuple(name for name in names if name != EAGER_ROUTE)


def role_of(route: str) -> str:
    return f"{ROLE_PREFIX}{route}"


def route_of(role: str) -> str | None:
    """The route a timing role names, or None for the other roles."""
    return role[len(ROLE_PREFIX):] if role.startswith(ROLE_PREFIX) else None


def fresh_function(fn: Fn) -> Fn:
    """A copy of ``fn`` with a code object of its own, so a compilation of it starts with an empty cache."""
    if not isinstance(fn, types.FunctionType):
        return fn
    copy = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


class Routes:
    """The declared routes, each one callable per workload."""

    def __init__(self, names: Sequence[str], reference: ModuleType, module: ModuleType | None) -> None:
        self._reference_run: Fn = reference.run
        self._library: dict[str, Fn] = {}
        self._compiled: dict[tuple[str, int], Fn] = {}
        for name in names:
            if name in BUILTIN_ROUTES:
                continue
            fn = getattr(module, name, None) if module is not None else None
            if not callable(fn):
                raise LookupError(f"baseline route {name!r} is not a function of the problem's baseline.py")
            self._library[name] = fn
        self.names = tuple(names)

    def fn(self, name: str, workload: int) -> Fn:
        if name in self._library:
            return self._library[name]
        if name == EAGER_ROUTE:  # engines leave it out of a child's routes (timed as the reference); a spec may not
            return self._reference_run
        if name not in COMPILE_MODES:
            raise LookupError(f"no baseline route {name!r}")
        key = (name, workload)
        if key not in self._compiled:
            import torch  # here, not at the top: the engine reads COMPILE_MODES without importing torch

            self._compiled[key] = torch.compile(fresh_function(self._reference_run), mode=COMPILE_MODES[name],
                                                dynamic=False)
        return self._compiled[key]
