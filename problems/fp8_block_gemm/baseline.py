"""Baseline route for the FP8 block-scaled GEMM: cuBLASLt's block-scaled FP8 GEMM through ``torch._scaled_mm``
(1x128 activation scales, 128x128 weight-block scales; Hopper, CUDA 12.9 or later), as a user without DeepGEMM
would run DeepSeek-V3's linear layers.

cuBLAS takes the activation scales outer-dimension-major (``a_scale.t().contiguous().t()``) and refuses some
shapes; measured on the H200 (bench/diag/library_routes.py): M = 1 and M = 37 are refused, M a multiple of 4
runs. So M is padded to a multiple of 16 where it is not a multiple of 4, and K and N to whole 128-blocks where
they are partial, with zero rows and columns (whose products are zero): the padding's copies are timed, as a
user's would be. torch.compile of the reference is not a route: it unrolls one GEMM per K group (up to 88 s of
compilation a shape) and its times in bench/results/problems-h200.json are 2-119x this route's on every workload
(bench/diag/library_routes.py, do_bench, another run).
"""

from __future__ import annotations

import torch

GROUP = 128


def _pad(x: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    if tuple(x.shape) == (rows, cols):
        return x
    out = x.new_zeros(rows, cols)
    out[: x.shape[0], : x.shape[1]] = x
    return out


def _up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def scaled_mm(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    rows = m if m % 4 == 0 else _up(m, 16)
    depth, cols = _up(k, GROUP), _up(n, GROUP)
    scale_a = _pad(a_scale, rows, a_scale.shape[1]).t().contiguous().t()
    out = torch._scaled_mm(_pad(a, rows, depth), _pad(b, cols, depth).t(), scale_a=scale_a, scale_b=b_scale.t(),
                           out_dtype=torch.bfloat16)
    return out[:m, :n]
