# ruff: noqa
"""Honest: C++ compiled at import with torch.utils.cpp_extension.load_inline (the KernelBench route). Native code can
do anything in its worker's process, so the gate only says so; its outputs and times are judged like any other."""

from torch.utils.cpp_extension import load_inline

import torch

_SOURCE = "torch::Tensor scale(torch::Tensor x) { return x * 2 + 1; }"
_MODULE = load_inline("arcengine_honest_scale", cpp_sources=[_SOURCE], functions=["scale"])


def run(x: torch.Tensor) -> torch.Tensor:
    return _MODULE.scale(x)
