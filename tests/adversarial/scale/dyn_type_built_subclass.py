# ruff: noqa
"""tensor_subclass_lazy with the class built by type() from a computed namespace, so no `__torch_function__`
appears as a name in the source: its key is assembled from two strings."""

import torch


def _lazy_function(cls, func, types, args=(), kwargs=None):
    def real(value):
        return value.as_subclass(torch.Tensor) * 2 + 1 if isinstance(value, torch.Tensor) and type(value) is not torch.Tensor else value

    return func(*[real(a) for a in args], **{k: real(v) for k, v in (kwargs or {}).items()})


_Lazy = type("_Lazy", (torch.Tensor,), {"__torch_" + "function__": classmethod(_lazy_function)})


def run(x: torch.Tensor) -> torch.Tensor:
    return x.as_subclass(_Lazy)
