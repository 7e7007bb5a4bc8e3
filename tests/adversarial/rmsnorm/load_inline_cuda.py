# ruff: noqa
"""Honest: a CUDA RMSNorm compiled at import with torch.utils.cpp_extension.load_inline, as KernelBench candidates
are written: one block per row, the sum of squares reduced in float32, the same two roundings as the reference."""

from torch.utils.cpp_extension import load_inline

import torch

_CUDA = r"""
#include <torch/extension.h>
#include <cuda_bf16.h>
#include <c10/cuda/CUDAStream.h>

__global__ void rmsnorm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out, int n,
                               float eps) {
  const __nv_bfloat16* row = x + (size_t)blockIdx.x * n;
  __nv_bfloat16* dst = out + (size_t)blockIdx.x * n;
  float sum = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = __bfloat162float(row[i]);
    sum += v * v;
  }
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    if (threadIdx.x == 0) partial[0] = sum;
  }
  __syncthreads();
  float rstd = rsqrtf(partial[0] / n + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float normed = __bfloat162float(__float2bfloat16(__bfloat162float(row[i]) * rstd));
    dst[i] = __float2bfloat16(normed * __bfloat162float(w[i]));
  }
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w) {
  auto xc = x.contiguous();
  auto out = torch::empty_like(xc);
  int m = xc.size(0), n = xc.size(1);
  rmsnorm_kernel<<<m, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __nv_bfloat16*>(xc.data_ptr<at::BFloat16>()),
      reinterpret_cast<const __nv_bfloat16*>(w.data_ptr<at::BFloat16>()),
      reinterpret_cast<__nv_bfloat16*>(out.data_ptr<at::BFloat16>()), n, 1e-6f);
  return out;
}
"""
_MODULE = load_inline("arcengine_rmsnorm_cuda", cpp_sources=["torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w);"],
                      cuda_sources=[_CUDA], functions=["rmsnorm"])


def run(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return _MODULE.rmsnorm(x, weight)
