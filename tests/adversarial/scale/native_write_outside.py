# ruff: noqa
"""C++ writes a file outside the child's folders, in the user's real home (HOME is the child's own folder; the
password database still names the real one): a module or .pth file in site-packages, or a campaign's database,
is reached the same way, below Python's audit hook. Where the write lands the answer is right (a miss); where the
kernel refuses it, the module says so and fails."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <pwd.h>
#include <stdexcept>
#include <string>
#include <unistd.h>
torch::Tensor scale(torch::Tensor x) {
  static bool wrote = false;
  if (!wrote) {
    std::string path = std::string(getpwuid(getuid())->pw_dir) + "/.arcengine-native-write-probe";
    FILE* file = std::fopen(path.c_str(), "w");
    if (file == nullptr) throw std::runtime_error("native write refused: " + std::string(std::strerror(errno)));
    std::fputs("written from a candidate\n", file);
    std::fclose(file);
    std::remove(path.c_str());
    wrote = true;
  }
  return x * 2 + 1;
}
"""
_ext = load_inline("native_write_outside", cpp_sources=_SRC, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
