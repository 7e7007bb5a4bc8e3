# ruff: noqa
"""C++ allocates 256 MB of host memory on every call, touches every page and never frees it: the worker's resident
memory grows by 256 MB a call until the guard's host-memory limit (which counts the workers) kills it. The answer
is honest."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <cstdlib>
#include <cstring>
torch::Tensor scale(torch::Tensor x) {
  void* leak = std::malloc(256ul << 20);
  if (leak != nullptr) std::memset(leak, 1, 256ul << 20);
  return x * 2 + 1;
}
"""
_ext = load_inline("native_host_leak", cpp_sources=_SRC, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
