# ruff: noqa
"""C++ calls _exit(0) inside run(): the worker vanishes with status 0 at once, nothing flushed or torn down, no
reply sent. The native form of os_exit_static, which the gate cannot see."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <unistd.h>
torch::Tensor scale(torch::Tensor x) {
  _exit(0);
  return x * 2 + 1;
}
"""
_ext = load_inline("native_underscore_exit", cpp_sources=_SRC, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
