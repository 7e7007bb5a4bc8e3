# ruff: noqa
"""Compiles C++ at import through torch.utils.cpp_extension (the KernelBench load_inline route): arbitrary native code
and a compiler subprocess. arcengine allows NVRTC through cuda-python only."""

from torch.utils.cpp_extension import load_inline

import torch

_SOURCE = "torch::Tensor scale(torch::Tensor x) { return x * 2 + 1; }"


def run(x: torch.Tensor) -> torch.Tensor:
    module = load_inline("adv_scale", cpp_sources=[_SOURCE], functions=["scale"])
    return module.scale(x)
