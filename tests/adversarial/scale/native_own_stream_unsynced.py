# ruff: noqa
"""CUDA C++ launches its kernel on a stream it created itself (cudaStreamCreateWithFlags, non-blocking: it never
waits for the legacy default stream nor PyTorch's current one) and returns an output the kernel fills later,
without any event or sync: the harness's own synchronise decides whether it is ready, and the kernel may read the
input before the current stream has finished writing it. GPU only."""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
__global__ void scale_kernel(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
torch::Tensor scale(torch::Tensor x) {
  static cudaStream_t own = nullptr;
  if (own == nullptr) cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256, 0, own>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
_ext = load_inline("native_own_stream_unsynced", cpp_sources="torch::Tensor scale(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["scale"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    return _ext.scale(x)
