"""PyTorch's dispatcher as an untrusted worker may change it: operators of the module's own, never torch's kernels.

Each operator call finds its kernel in the dispatcher's table when it is made, the harness's own calls included
(the copy of a result, the check of the inputs, the draw of the next call's inputs). A module that put a kernel of
its own on ``aten::clone`` ran its call's work inside the harness's copy of the result, after the clock (red team
round 17: PASS at 82x, through a ``torch.library.Library`` reached as the type of the one every ``custom_op``
keeps). Every registration from Python goes through one constructor (``torch._C._dispatch_library``) and the methods
of the object it makes. Wrapped there before the module is imported, a registration is refused (and the role
fails, through guard/child/opens.py) where it:

- is a fallback for every operator (the namespace "_"), or
- puts a kernel on an aten operator for a dispatch key that the harness's tensors pass through (every key but
  those of meta tensors and of functorch's transforms), or
- goes through a library object the harness did not see made.

Operators in a namespace of the module's own (``torch.library.custom_op``, ``triton_op``) pass, and so do torch's
own registrations for meta tensors. Native code that registers through C++ is outside the watch, like all native
code (docs/guard.md, the native trust limit).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import torch
import torch.library

from arcengine.guard.child import opens

# Dispatch keys no plain CPU or CUDA tensor reaches outside a functorch transform or a meta computation: torch
# registers aten kernels there lazily (vmap's decompositions, meta functions), and the harness never runs them.
HARMLESS_KEYS = frozenset({"Meta", "Functionalize", "FuncTorchBatched", "FuncTorchBatchedDecomposition",
                           "FuncTorchVmapMode", "FuncTorchGradWrapper", "FuncTorchDynamicLayerFrontMode",
                           "FuncTorchDynamicLayerBackMode"})
PROTECTED = "aten"  # the operators the harness itself calls
EVERY_OPERATOR = "_"  # a library in this namespace holds fallbacks, run for every operator without a kernel
# _DispatchModule's methods, each with the position of its dispatch key argument (None: it takes none).
METHODS: dict[str, int | None] = {"impl": 1, "impl_t_t": 1, "impl_with_aoti_compile": 2, "fallback": 0,
                                  "fallback_fallthrough": 0, "register_ad_inplace_or_view_fallback": None,
                                  "def_": None, "def_legacy": None, "def_name_t_t": None, "def_schema_t_t": None,
                                  "define": None}  # and reset, which only takes a library's kernels away

_libraries: dict[int, tuple[str, str]] = {}  # each library object the harness saw made: its namespace and key
_armed = False
_installed = False  # once per process: a zygote's forks inherit what it noted before its freeze


def refused_library(namespace: str, key: str) -> str | None:
    """Why a library of ``namespace`` for dispatch key ``key`` ("" for any) may not be made, or None."""
    if namespace == EVERY_OPERATOR:
        return "registers a fallback for every operator with PyTorch's dispatcher (it would run in the harness's own"\
               " operations)"
    if namespace == PROTECTED and key not in HARMLESS_KEYS:
        return (f"registers kernels on aten's operators{f' for {key}' if key else ''} (torch's own: they would run in"
                " the harness's own operations; define operators of your own namespace instead)")
    return None


def install() -> None:
    """Note every library made with the dispatcher from now on, and check each registration once ``arm`` is called;
    call before opens.install, and in a zygote before its ``gc.freeze`` (torch's libraries made so far are found by
    a walk of the heap, which sees no frozen object)."""
    global _installed
    if _installed:
        return
    _installed = True
    for library in (o for o in gc.get_objects() if type(o) is torch.library.Library):  # made at torch's import
        if library.m is not None:
            _libraries[id(library.m)] = (library.ns, library.dispatch_key)
    make = torch._C._dispatch_library

    def made(kind: str, namespace: str, key: str, *rest: Any) -> Any:
        if _armed and (why := refused_library(str(namespace), str(key))) is not None:
            opens.refuse(why)
        library = make(kind, namespace, key, *rest)
        _libraries[id(library)] = (str(namespace), str(key))
        return library

    torch._C._dispatch_library = made
    for name, position in METHODS.items():
        method = getattr(torch._C._DispatchModule, name, None)
        if method is not None:
            setattr(torch._C._DispatchModule, name, _checked(method, position))


def arm() -> None:
    """Refuse from now on: call right before the untrusted module is imported, once torch's own start-up
    registrations (CUDA's initialisation registers kernels of torch's on aten's operators) are made."""
    global _armed
    _armed = True


def _checked(method: Callable[..., Any], position: int | None) -> Callable[..., Any]:
    def checked(library: object, *args: Any, **kwargs: Any) -> Any:
        if not _armed:
            return method(library, *args, **kwargs)
        namespace, key = _libraries.get(id(library), (None, ""))
        if namespace is None:
            opens.refuse("registers with PyTorch's dispatcher through a library the harness did not see made")
        given = args[position] if position is not None and len(args) > position else kwargs.get("dispatch", "")
        if (why := refused_library(str(namespace), str(given or key))) is not None:
            opens.refuse(why)
        return method(library, *args, **kwargs)

    return checked
