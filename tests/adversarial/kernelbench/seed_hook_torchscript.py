# ruff: noqa
"""Red team round 17: round 16's device-module seed hook (torch._register_device_module) built from C callables
and a TorchScript function only, so a profile hook sees no Python frame of the module's: its manual_seed_all, which
torch.manual_seed called while the harness made a call's inputs, drew the inputs again from the seed and computed
the answer before the clock. PASS at 44x on a 512x512 matmul. Defeated by construction: KernelBench's input maker
seeds the generators it draws from directly, and calls no device module."""
import functools
import types

import torch
import torch.nn as nn
from torch import Tensor

_a = torch.empty(4, 128)
_b = torch.empty(4, 128)
_c = torch.empty(4, 128)
_seen = torch.zeros(1, dtype=torch.int64)
_gen = torch.Generator()


@torch.jit.script
def _work(a: Tensor, b: Tensor, c: Tensor, seen: Tensor, g: torch.Generator, seed: int):
    g.manual_seed(seed)
    torch.randn([a.shape[0], a.shape[1]], generator=g, out=a)
    torch.randn([b.shape[0], b.shape[1]], generator=g, out=b)
    torch.add(a, b, out=c)
    seen.fill_(seed)


torch._register_device_module("privateuseone", types.SimpleNamespace(
    _is_in_bad_fork=bool, manual_seed_all=functools.partial(_work, _a, _b, _c, _seen, _gen)))


class ModelNew(nn.Module):
    def forward(self, a, b):
        if int(_seen.item()) == torch.initial_seed():
            return _c.clone()
        return a + b
