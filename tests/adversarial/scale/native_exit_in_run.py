# ruff: noqa
"""C++ calls exit(0) inside run(): the worker ends with status 0 and no reply (C atexit handlers and static
destructors run, Python's do not). Past any gate: no os._exit, sys.exit or getattr in the Python source."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <cstdlib>
torch::Tensor scale(torch::Tensor x) {
  std::exit(0);
  return x * 2 + 1;
}
"""
_ext = load_inline("native_exit_in_run", cpp_sources=_SRC, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
