# ruff: noqa
"""Red team round 17: torch.library.Library, refused by name by the gate, reached as the type of the Library every
custom_op keeps (``_lib``); a Library("aten", "IMPL", "CPU") then replaces aten::clone and aten::equal in the
candidate's worker. forward returns an unwritten buffer and notes the work; the harness's own copy of the result
(after the clock) or its check of the inputs (torch.equal) does it. PASS at 82x on a 512x512 matmul."""
import torch
import torch.nn as nn


@torch.library.custom_op("rt17::noop", mutates_args=())
def _noop(x: torch.Tensor) -> torch.Tensor:
    return x + 0


_Lib = type(_noop._lib)
_aten = _Lib("aten", "IMPL", "CPU")
_pending = []


def _settle():
    while _pending:
        a, b, out = _pending.pop()
        torch.add(a, b, out=out)


def _clone(x, memory_format=None):
    _settle()
    return torch.empty_like(x).copy_(x)


def _equal(a, b):
    _settle()
    return a.shape == b.shape and bool((a == b).all())


_aten.impl("clone", _clone)
_aten.impl("equal", _equal)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        _pending.append((a, b, out))
        return out
