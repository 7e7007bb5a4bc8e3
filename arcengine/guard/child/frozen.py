"""torch.Tensor, the harness's own classes and its modules made immutable in untrusted workers, before any of a
role's code is imported.

The harness calls methods of the tensors a call returns and of the inputs it checks (``detach``, ``clone``, ...)
once the call is over. ``torch.Tensor`` is a Python class: code that gets it as a value (a parameter, which no
static reading follows) could shadow one of those methods for a single harness call, do its work there, after the
clock, and remove the shadow before the seal looks. An immutable type refuses every such assignment
(``TypeError``), which closes the class by construction; PyTorch sets no attribute on it after its import (only a
private backend's registration does). The harness's classes (its timer, channel, checks) get the same, for code
that reaches them by a route the gate does not know; none of them changes after its definition. Its modules refuse
attribute assignment as well (their own code writes its globals directly, not through the module). Where a type
object is not laid out as expected, nothing is changed and the seal's checks remain.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from types import ModuleType

import torch

IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE
_FLAGS_OFFSET = 21 * ctypes.sizeof(ctypes.c_void_p)  # tp_flags, after PyTypeObject's 21 pointer-sized fields


def freeze(cls: type) -> bool:
    """Make ``cls`` refuse attribute assignment and deletion; whether it now does."""
    flags = ctypes.c_ulong.from_address(id(cls) + _FLAGS_OFFSET)
    if flags.value != cls.__flags__:  # not the layout this expects: leave it alone
        return False
    flags.value |= IMMUTABLE_TYPE
    return bool(cls.__flags__ & IMMUTABLE_TYPE)


def freeze_tensor() -> bool:
    return freeze(torch.Tensor)


def freeze_classes(modules: Iterable[ModuleType]) -> int:
    """Freeze every class defined in ``modules`` (not those they import); how many now refuse assignment."""
    return sum(freeze(value) for module in modules for value in list(vars(module).values())
               if isinstance(value, type) and value.__module__ == module.__name__)


class _SealedModule(ModuleType):
    """A module whose attributes cannot be assigned or deleted from outside (``module.name = ...``)."""

    def __setattr__(self, name: str, value: object) -> None:
        raise TypeError(f"cannot set {name!r} of sealed module {self.__name__!r}")

    def __delattr__(self, name: str) -> None:
        raise TypeError(f"cannot delete {name!r} of sealed module {self.__name__!r}")


def seal_modules(modules: Iterable[ModuleType]) -> None:
    """Make ``modules`` refuse attribute assignment and deletion, the class that does so refuse change itself."""
    freeze(_SealedModule)
    for module in modules:
        if type(module) is ModuleType:
            module.__class__ = _SealedModule
