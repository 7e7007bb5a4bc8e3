# ruff: noqa
"""C++ writes through a null pointer inside run(): a real SIGSEGV in native code (no faulthandler), which must come
back as the candidate's failure with the signal named, never as an engine failure."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
torch::Tensor scale(torch::Tensor x) {
  volatile float* nowhere = nullptr;
  *nowhere = 1.0f;
  return x * 2 + 1;
}
"""
_ext = load_inline("native_null_write", cpp_sources=_SRC, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
