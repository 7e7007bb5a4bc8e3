# ruff: noqa
"""C++ (load_inline) computes y = 2x + 1 into its input's own storage through a raw float pointer and returns the
input: right values, no allocation, the caller's input destroyed. No Python in-place operator is called, so only a
check of the inputs after the call (their snapshot) can see it."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
torch::Tensor scale(torch::Tensor x) {
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); i++) p[i] = 2.0f * p[i] + 1.0f;
  return x;
}
"""
_ext = load_inline("native_inplace_input", cpp_sources=_SRC, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
