"""Speed-of-light arithmetic: the roofline floor, the SOL score and the aggregate speedup."""

from __future__ import annotations

import math
from collections.abc import Iterable


def roofline_seconds(flops: float, nbytes: float, flops_per_s: float, bytes_per_s: float) -> float:
    """The least time the work can take on the device: the slower of its arithmetic and its traffic."""
    return max(flops / flops_per_s if flops_per_s > 0 else 0.0, nbytes / bytes_per_s if bytes_per_s > 0 else 0.0)


def sol_score(t_kernel: float, t_baseline: float, t_sol: float) -> float:
    """SOL-ExecBench's S = 1 / (1 + (T_k - T_sol) / (T_b - T_sol)): 0.5 at the baseline, 1 at the floor."""
    if t_baseline <= t_sol:  # the baseline is already at the floor: nothing can beat it
        return 1.0 if t_kernel <= t_baseline else 0.5 * t_baseline / t_kernel
    return 1.0 / (1.0 + (t_kernel - t_sol) / (t_baseline - t_sol))


def geometric_mean(values: Iterable[float]) -> float:
    values = list(values)
    if not values:
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))
