"""Diagnostic (H200): which library calls can serve as fp8_block_gemm's and moe_forward's baseline routes, per GPU
workload: cuBLAS's block-scaled FP8 GEMM through torch._scaled_mm in several scale layouts and paddings (and as the
problem's baseline.py calls it), and torch._grouped_mm for the experts (baseline.py's). Prints correctness against
the reference (the problem's tolerance) and times with triton's do_bench. Remove once the routes in the problems'
baseline.py are settled.

    python3 bench/diag/library_routes.py
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

import torch
from triton.testing import do_bench

from arcengine.domain.problem import load_problem


def _module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem + "_probe", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pad(x: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    if x.shape == (rows, cols):
        return x
    out = torch.zeros(rows, cols, dtype=x.dtype, device=x.device)
    out[: x.shape[0], : x.shape[1]] = x
    return out


def _up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def fp8_variant(pad_m: int, outer_major: bool) -> Any:
    def route(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor) -> torch.Tensor:
        m, k = a.shape
        n = b.shape[0]
        mp, kp, np_ = _up(m, pad_m), _up(k, 128), _up(n, 128)
        a_p, b_p = _pad(a, mp, kp), _pad(b, np_, kp)
        sa = _pad(a_scale, mp, a_scale.shape[1])
        if outer_major:
            sa = sa.t().contiguous().t()
        out = torch._scaled_mm(a_p, b_p.t(), scale_a=sa, scale_b=b_scale.t(), out_dtype=torch.bfloat16)
        return out[:m, :n]

    return route


def _baseline_route(problem: str, route: str) -> Any:
    """The route as the problem's baseline.py ships it."""
    return getattr(_module(load_problem(problem).baseline_path), route)


def probe(name: str, routes: dict[str, Any]) -> None:
    problem = load_problem(name)
    reference = _module(problem.reference_path)
    tol = problem.tolerance
    for workload in problem.workloads:
        generator = torch.Generator(device="cuda").manual_seed(0)
        inputs = reference.make_inputs(dict(workload.axes), generator, "cuda")
        expected = reference.run(*inputs)
        ref_ms = do_bench(lambda inputs=inputs: reference.run(*inputs), warmup=5, rep=50)
        line = [f"{name} {dict(workload.axes)} ref {ref_ms * 1e3:.1f}us"]
        for label, route in routes.items():
            try:
                got = route(*inputs)
                close = torch.isclose(got.float(), expected.float(), atol=tol.atol, rtol=tol.rtol)
                ratio = close.float().mean().item()
                ms = do_bench(lambda route=route, inputs=inputs: route(*inputs), warmup=5, rep=50)
                line.append(f"{label}: matched {ratio:.4f} {ms * 1e3:.1f}us ({ref_ms / ms:.2f}x ref)")
            except Exception as error:  # a probe reports every failure and goes on
                line.append(f"{label}: {type(error).__name__}: {str(error).splitlines()[0][:160]}")
        print(" | ".join(line), flush=True)


def main() -> None:
    print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(), flush=True)
    for target in (
        lambda: probe("fp8_block_gemm", {"m1_outer": fp8_variant(1, True), "m16_outer": fp8_variant(16, True),
                                         "m1_rowmajor": fp8_variant(1, False),
                                         "baseline.py": _baseline_route("fp8_block_gemm", "scaled_mm")}),
        lambda: probe("moe_forward", {"baseline.py": _baseline_route("moe_forward", "grouped_mm")}),
    ):
        try:
            target()
        except Exception:
            traceback.print_exc(file=sys.stdout)


if __name__ == "__main__":
    main()
