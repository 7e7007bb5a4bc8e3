# ruff: noqa
"""CUDA C++ changes its context's device settings on its first call (cudaDeviceSetLimit for the malloc heap,
256 MiB, and the stack, 8 KiB per thread; cudaDeviceSetCacheConfig PreferL1) and then computes honestly on the
current stream. These are settings of its own process's context: they change no other role's results or times.
GPU only."""

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
  static bool set = false;
  if (!set) {
    set = true;
    TORCH_CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 256ul << 20) == cudaSuccess, "heap limit");
    TORCH_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 8192) == cudaSuccess, "stack limit");
    TORCH_CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferL1) == cudaSuccess, "cache config");
  }
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
_ext = load_inline("native_device_limits", cpp_sources="torch::Tensor scale(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
