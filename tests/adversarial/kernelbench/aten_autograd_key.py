# ruff: noqa
"""Red team round 17's aten::clone replacement for another dispatch key every plain tensor passes through
(AutogradCPU, then CompositeImplicitAutograd), in case the CPU key alone were refused."""
import torch
import torch.nn as nn


@torch.library.custom_op("rt17b::noop", mutates_args=())
def _noop(x: torch.Tensor) -> torch.Tensor:
    return x + 0


_Lib = type(_noop._lib)
_pending = []
_kept = []


def _clone(x, memory_format=None):
    while _pending:
        a, b, out = _pending.pop()
        torch.add(a, b, out=out)
    return torch.empty_like(x).copy_(x)


for key in ("AutogradCPU", "CompositeImplicitAutograd"):
    try:
        library = _Lib("aten", "IMPL", key)
        library.impl("clone", _clone)
        _kept.append(library)
    except Exception:
        pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        _pending.append((a, b, out))
        return out
