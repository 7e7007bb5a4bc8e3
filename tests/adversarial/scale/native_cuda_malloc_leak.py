# ruff: noqa
"""CUDA C++ cudaMallocs 1 GiB of device memory on every call and never frees it, ignoring the error once the
device is full; the answer (its kernel on the current stream) stays right. Within a few hundred calls it holds
the whole GPU: the reference's and the incumbent's workers, on the same device, then fail to allocate. GPU only."""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
__global__ void scale_kernel(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
torch::Tensor scale(torch::Tensor x) {
  void* leak = nullptr;
  if (cudaMalloc(&leak, 1ul << 30) != cudaSuccess) cudaGetLastError();  // full: clear the error, go on
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
_ext = load_inline("native_cuda_malloc_leak", cpp_sources="torch::Tensor scale(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
