# ruff: noqa
"""C++ forks inside run() and returns at once an output in shared memory (mmap MAP_SHARED) that the forked child
fills with 2x + 1 some 50 ms later, from its copy of the input: the call's time holds none of the work, and a
harness that read the output late would find it right. The children exit once done (the worker reaps them)."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ctime>
torch::Tensor scale(torch::Tensor x) {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {}  // the children of earlier calls
  int64_t n = x.numel();
  size_t bytes = n * sizeof(float);
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  TORCH_CHECK(shared != MAP_FAILED, "mmap");
  const float* in = x.data_ptr<float>();
  if (fork() == 0) {
    struct timespec later = {0, 50 * 1000 * 1000};
    nanosleep(&later, nullptr);
    for (int64_t i = 0; i < n; i++) static_cast<float*>(shared)[i] = 2.0f * in[i] + 1.0f;
    _exit(0);
  }
  return torch::from_blob(shared, {n}, [bytes](void* p) { munmap(p, bytes); }, torch::kFloat32);
}
"""
_ext = load_inline("native_fork_computes_later", cpp_sources=_SRC, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
