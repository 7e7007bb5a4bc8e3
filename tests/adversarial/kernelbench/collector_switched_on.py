# ruff: noqa
"""Red team round 17 (a near miss): numpy.testing._assert_valid_refcount ends with an unconditional gc.enable(), so
a call turns the collector back on inside a timed block, where the harness keeps it off; a cycle's __del__ placed
by allocation counts then does the work when a collection comes after the clock, before the harness copies the
result."""
import gc

import numpy
import numpy.testing
import torch
import torch.nn as nn

_keep = []


class _Later:
    def __init__(self, a, b, out):
        self.a, self.b, self.out = a, b, out
        self.me = self  # a cycle: only a collection frees it

    def __del__(self):
        torch.add(self.a, self.b, out=self.out)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        _keep.clear()
        numpy.testing._assert_valid_refcount(numpy.add)  # leaves the collector on
        gc.collect(0)
        for _ in range(700):
            _keep.append([])
        _Later(a, b, out)
        return out
