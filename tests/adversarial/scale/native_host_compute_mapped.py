# ruff: noqa
"""The work done on the host, after the GPU's last record: CUDA C++ copies the input into pinned memory mapped for
the device (one copy, a few microseconds), computes y = 2x + 1 on the CPU (a 2 ms wait stands in for a heavy
computation) straight into that mapped memory, and returns a CUDA tensor over it: nothing is launched after the
copy, so a timer that ends a call at its last GPU record reads the copy alone. GPU only."""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <chrono>
#include <thread>
torch::Tensor scale(torch::Tensor x) {
  int64_t n = x.numel();
  float* host = nullptr;
  float* device = nullptr;
  cudaHostAlloc((void**)&host, n * sizeof(float), cudaHostAllocMapped);
  cudaHostGetDevicePointer((void**)&device, host, 0);
  cudaMemcpy(host, x.data_ptr<float>(), n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int64_t i = 0; i < n; ++i) host[i] = 2.0f * host[i] + 1.0f;
  std::this_thread::sleep_for(std::chrono::microseconds(2000));
  return torch::from_blob(device, x.sizes(), [host](void*) { cudaFreeHost(host); }, x.options());
}
"""
_ext = load_inline("native_host_compute_mapped", cpp_sources="torch::Tensor scale(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
