"""Compiling a candidate's Triton kernels with nothing run on the device (arcengine.guard.child.precompile).

Triton compiles only for a GPU it can see, so these run where there is one (bench/pipeline.py measures what
the compiler saves); the forked compiler's part on the CPU is covered by the sandbox's turn tests.
"""

from __future__ import annotations

import pytest
import torch

from arcengine.guard.child.precompile import compile_only

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="Triton compiles only for a visible GPU")


def _kernels() -> tuple[object, object]:
    import triton
    import triton.language as tl

    @triton.jit
    def fill(out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, 1.0, mask=offsets < n)

    @triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"])
    @triton.jit
    def tuned_fill(out_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, 1.0, mask=offsets < n)

    return fill, tuned_fill


def _compiled(kernel: object) -> int:
    caches = kernel.device_caches  # type: ignore[attr-defined]
    return len(caches[torch.cuda.current_device()][0])


def test_a_launch_on_shapes_only_compiles_what_the_real_launch_then_finds() -> None:
    fill, _ = _kernels()
    with compile_only():
        fill[(4,)](torch.empty(1000, device="meta"), 1000, BLOCK=256)  # type: ignore[index]
    assert _compiled(fill) == 1
    out = torch.zeros(1000, device="cuda")
    fill[(4,)](out, 1000, BLOCK=256)  # type: ignore[index]
    torch.cuda.synchronize()
    assert out.sum().item() == 1000.0  # launches run again outside the block
    assert _compiled(fill) == 1  # and found the kernel compiled on shapes alone


def test_nothing_runs_on_the_device_and_no_autotuning_choice_is_made() -> None:
    fill, tuned_fill = _kernels()
    out = torch.zeros(1000, device="cuda")
    with compile_only():
        fill[(4,)](out, 1000, BLOCK=256)  # type: ignore[index]
        tuned_fill[(8,)](out, 1000)  # type: ignore[index]
    torch.cuda.synchronize()
    assert out.sum().item() == 0.0
    assert _compiled(tuned_fill.fn) == 2  # type: ignore[attr-defined]  # every config compiled
    assert tuned_fill.cache == {}  # type: ignore[attr-defined]  # none chosen without timing
