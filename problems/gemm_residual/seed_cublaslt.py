"""Seed candidate for gemm_residual: one cuBLASLt call through nvmath-python (GPU only).

out = a @ w.T + residual is cuBLASLt's D = A @ B + beta * C with C the residual and beta = 1: it accumulates in
float32, adds C in float32 and rounds D to bfloat16 once, the reference's contract. Split-K plans that reduce in
the output type (rounding partial sums to bfloat16) are excluded. The plan is made once per shape; which of
cuBLASLt's heuristic algorithms runs (0 = its first choice) comes from a table by T, over which the TUNABLES search.
"""

import torch
from nvmath.linalg.advanced import Matmul, MatmulPlanPreferences, MatmulReductionScheme

SMALL_T = 64  # T up to this is the decode band, memory-bound on the weight
ALGO_SMALL = 0  # index into cuBLASLt's heuristic list for the decode band
ALGO_LARGE = 0  # and for prefill
TUNABLES = {"SMALL_T": [16, 64, 256], "ALGO_SMALL": [0, 1, 2, 3], "ALGO_LARGE": [0, 1, 2, 3]}

# One rounding: no reduction in the output type.
_REDUCTIONS = MatmulReductionScheme.NONE | MatmulReductionScheme.COMPUTE_TYPE
_plans: dict[tuple[object, ...], tuple[Matmul, list[object]]] = {}


def _planned(a: torch.Tensor, b: torch.Tensor, residual: torch.Tensor) -> tuple[Matmul, list[object]]:
    key = (tuple(a.shape), tuple(b.shape), a.dtype, a.device)
    if key not in _plans:  # a plan per shape, as a serving stack keeps one: never an output
        matmul = Matmul(a, b, c=residual, beta=1.0)
        algorithms = matmul.plan(preferences=MatmulPlanPreferences(reduction_scheme_mask=_REDUCTIONS, limit=8))
        _plans[key] = (matmul, list(algorithms))
    return _plans[key]


def run(a: torch.Tensor, w: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    b = w.T  # a view: cuBLASLt reads it transposed
    matmul, algorithms = _planned(a, b, residual)
    matmul.reset_operands(a=a, b=b, c=residual)
    choice = ALGO_SMALL if a.shape[0] <= SMALL_T else ALGO_LARGE
    return matmul.execute(algorithm=algorithms[min(choice, len(algorithms) - 1)])
