# ruff: noqa
"""Native code that remembers its first answer per shape and returns it again: what no Python check could see inside
C++, the judge still sees in the outputs (fresh inputs on every case and every timed call)."""

from torch.utils.cpp_extension import load_inline

import torch

_SOURCE = """
torch::Tensor remembered;
torch::Tensor scale(torch::Tensor x) {
  if (!remembered.defined() || remembered.sizes() != x.sizes()) remembered = x * 2 + 1;
  return remembered;
}
"""
_MODULE = load_inline("arcengine_cached_scale", cpp_sources=[_SOURCE], functions=["scale"])


def run(x: torch.Tensor) -> torch.Tensor:
    return _MODULE.scale(x)
