# ruff: noqa
"""Honest: KernelBench's ModelNew with torch.compile applied at import (a decorator) and in __init__. Its first
compile registers torch's own operators with the dispatcher (Inductor's prims), which the dispatcher watch must
tell from a candidate's: a control that once failed at import when the watch ran in a worker forked from the
zygote, whose heap it could not walk."""
import torch
import torch.nn as nn


@torch.compile
def _add(a, b):
    return a + b


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.add = torch.compile(lambda a, b: _add(a, b) * 1.0)

    def forward(self, a, b):
        return self.add(a, b)
