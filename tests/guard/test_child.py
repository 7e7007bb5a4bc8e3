"""The sandbox child: unit tests of its pure parts, then the child run as a real subprocess on CPU."""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import random
import re
import secrets
import socket
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import torch

from arcengine.guard.child import PROFILING, channel, correctness, native_build, opens, timing, worker
from arcengine.guard.child.correctness import Tolerance, compare_outputs, compare_tensor, describe_exception
from arcengine.guard.child.device_memory import DeviceMemoryWatch
from arcengine.guard.child.judge import AUDIT_SHARE, SpecError, audited_calls, json_safe, parse_spec
from arcengine.guard.child.roles import RemoteRole, WorkerLost
from arcengine.guard.child.worker import Worker

ROOT = Path(__file__).resolve().parents[2]
TOL = Tolerance(atol=0.01, rtol=0.01, matched_ratio=0.999)

REFERENCE = """
import torch

def make_inputs(axes, generator, device):
    return (torch.randn(axes["M"], axes["N"], generator=generator, device=device),)

def run(x):
    return x * 2
"""

# NaN and +Inf at fixed positions of the input, propagated by x * 2.
NAN_REFERENCE = """
import torch

def make_inputs(axes, generator, device):
    x = torch.randn(axes["M"], axes["N"], generator=generator, device=device)
    x[0, 1] = float("nan")
    x[1, 2] = float("inf")
    return (x,)

def run(x):
    return x * 2
"""

WORKLOADS = [
    {"index": 0, "axes": {"M": 3, "N": 300}, "held_out": False},
    {"index": 1, "axes": {"M": 8, "N": 130}, "held_out": True},
]
FAST_TIMING = {
    "warmup": 1,
    "min_reps": 3,
    "max_reps": 6,
    "target_rel_se": 0.005,
    "max_seconds_per_workload": 0.2,
}


# ---------------------------------------------------------------- helpers


def _run_child(tmp_path: Path, spec: dict[str, Any], env: dict[str, str] | None = None
               ) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    spec = {**spec, "result": str(tmp_path / "result.json")}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    if spec["device"] == "cpu":
        env["TRITON_INTERPRET"] = "1"  # as the parent sets it: Triton kernels run on CPU tensors
    proc = subprocess.run(
        [sys.executable, "-m", "arcengine.guard.child.judge", str(spec_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((tmp_path / "result.json").read_text()), proc


def _evaluate(
    tmp_path: Path,
    candidate: str,
    *,
    reference: str = REFERENCE,
    incumbent: str | None = None,
    workloads: list[dict[str, Any]] | None = None,
    device: str = "cpu",
    env: dict[str, str] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    paths = {}
    for name, source in (("reference", reference), ("candidate", candidate), ("incumbent", incumbent)):
        if source is not None:
            paths[name] = tmp_path / f"{name}.py"
            paths[name].write_text(textwrap.dedent(source))
    spec = {
        "mode": "evaluate",
        "device": device,
        "reference": str(paths["reference"]),
        "candidate": str(paths["candidate"]),
        "incumbent": str(paths["incumbent"]) if incumbent is not None else None,
        "workloads": workloads if workloads is not None else WORKLOADS,
        "tolerance": {"atol": 0.01, "rtol": 0.01, "matched_ratio": 0.999},
        "seeds": [0, 1],
        "timing": FAST_TIMING,
        **spec_extra,
    }
    result, _ = _run_child(tmp_path, spec, env)
    return result


def _assert_fails(result: dict[str, Any], *fragments: str) -> None:
    assert result["ok"] is True
    assert result["correct"] is False
    for fragment in fragments:
        assert fragment in result["failure"], result["failure"]


# ---------------------------------------------------------------- unit: comparison


def test_compare_tensor_accepts_within_tolerance() -> None:
    ref = torch.linspace(-1, 1, 1000)
    comparison = compare_tensor(ref + 0.005, ref, TOL)
    assert comparison.ok
    assert comparison.matched_ratio == 1.0
    assert comparison.max_abs_err == pytest.approx(0.005, abs=1e-6)


def test_compare_tensor_matched_ratio_allows_few_outliers() -> None:
    ref = torch.zeros(10_000)
    out = ref.clone()
    out[:5] = 0.05  # 0.05% off by 5x the tolerance: rounding-sized, within a 99.9% matched ratio
    assert compare_tensor(out, ref, TOL).ok
    out[:20] = 0.05  # 0.2% off
    comparison = compare_tensor(out, ref, TOL)
    assert not comparison.ok
    assert "99.8000% of elements" in comparison.failure
    assert comparison.matched_ratio == pytest.approx(0.998)


def test_compare_tensor_rejects_zeros() -> None:
    ref = torch.randn(1000, generator=torch.Generator().manual_seed(0))
    comparison = compare_tensor(torch.zeros_like(ref), ref, TOL)
    assert not comparison.ok
    assert comparison.matched_ratio < 0.1


def test_compare_tensor_metadata() -> None:
    ref = torch.ones(4, 4)
    assert "shape (16,)" in compare_tensor(torch.ones(16), ref, TOL).failure
    assert "dtype torch.float64" in compare_tensor(torch.ones(4, 4, dtype=torch.float64), ref, TOL).failure
    assert "not exactly torch.Tensor" in compare_tensor(torch.nn.Parameter(ref.clone()), ref, TOL).failure
    assert "not exactly torch.Tensor" in compare_tensor(ref.numpy(), ref, TOL).failure


def test_compare_tensor_nan_and_inf_positions() -> None:
    ref = torch.tensor([1.0, float("nan"), float("inf"), float("-inf")])
    assert compare_tensor(ref.clone(), ref, TOL).ok
    moved = torch.tensor([float("nan"), 1.0, float("inf"), float("-inf")])
    assert "NaN positions differ at 2 of 4 elements (first at (0,)" in compare_tensor(moved, ref, TOL).failure
    sign = torch.tensor([1.0, float("nan"), float("-inf"), float("-inf")])
    assert "+Inf positions differ" in compare_tensor(sign, ref, TOL).failure
    finite = torch.tensor([1.0, 0.0, float("inf"), float("-inf")])
    assert "NaN positions differ" in compare_tensor(finite, ref, TOL).failure


def test_compare_tensor_low_precision_compared_in_float32() -> None:
    ref = torch.randn(256, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    assert compare_tensor(ref.clone(), ref, TOL).ok
    assert compare_tensor(torch.zeros(0), torch.zeros(0), TOL).ok


def test_compare_outputs_structure() -> None:
    a, b = torch.ones(3), torch.zeros(3)
    assert compare_outputs((a, b), (a, b), TOL).ok
    assert compare_outputs([a, b], (a, b), TOL).ok
    assert "expected a tuple of 2" in compare_outputs(a, (a, b), TOL).failure
    assert "returned 1 outputs, expected 2" in compare_outputs((a,), (a, b), TOL).failure
    assert "expected a single tensor" in compare_outputs((a,), a, TOL).failure
    assert "output 1:" in compare_outputs((a, a), (a, b), TOL).failure


def test_an_audit_compares_the_sampled_positions_and_the_full_shape() -> None:
    ref, seed = torch.randn(300, 500), 12345
    sample = correctness.sample_output
    assert correctness.compare_samples(sample(ref.clone(), seed), ref, seed, TOL).ok
    assert not correctness.compare_samples(sample(ref, seed + 1), ref, seed, TOL).ok  # the seed picks the positions
    unwritten = ref.clone()
    unwritten[:30] = 0  # a tenth of the rows
    assert "of elements within" in (correctness.compare_samples(sample(unwritten, seed), ref, seed, TOL).failure or "")
    reshaped = ref.reshape(500, 300)  # every element in its flat place, in another shape
    failure = correctness.compare_samples(sample(reshaped, seed), ref, seed, TOL).failure
    assert failure == "output has shape [500, 300], expected [300, 500]"
    short = sample(torch.randn(7), seed)
    assert isinstance(short, correctness.Sample) and short.values.numel() == 7  # no more than it has
    pair = (ref, 3)
    assert correctness.compare_samples(sample(pair, seed), pair, seed, TOL).ok
    assert "output 1 is 4" in (correctness.compare_samples(sample((ref, 4), seed), pair, seed, TOL).failure or "")


def test_inputs_snapshot_and_verify() -> None:
    x = torch.tensor([1.0, float("nan"), 3.0])
    snapshot = correctness.snapshot_inputs([x, 4])
    assert correctness.verify_inputs([x, 4], snapshot) is None  # NaN compared bitwise, not by value
    x[0] = 2.0
    assert correctness.verify_inputs([x, 4], snapshot) == "candidate modified input 0"
    assert correctness.verify_inputs([snapshot[0], 5], snapshot) == "candidate modified input 1"
    assert not correctness.bitwise_equal(torch.zeros(2), torch.zeros(2, dtype=torch.int32))


def test_poison_allocator_fills_and_frees_a_block_per_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """One block per output, sized like it and freed last for output 0 (LIFO allocators hand it back first), after
    a larger one; every byte 0xFF (NaN in every float format), and none kept alive."""
    made: list[torch.Tensor] = []
    real = correctness._filled

    def spy(nbytes: int, device: torch.device) -> torch.Tensor:
        block = real(nbytes, device)
        made.append(block.clone())  # a copy: the block itself must be freed
        alive.append(weakref.ref(block))
        return block

    alive: list[weakref.ref[torch.Tensor]] = []
    monkeypatch.setattr(correctness, "_filled", spy)
    correctness.poison_allocator([torch.ones(10), torch.ones(3, dtype=torch.bfloat16)], torch.device("cpu"))
    assert [block.numel() for block in made] == [(40 + 6) * 5 // 4 + (1 << 20), 6, 40]
    assert all(bool((block == 0xFF).all()) for block in made)
    assert all(ref() is None for ref in alive)


def test_describe_exception_keeps_the_informative_line() -> None:
    error = RuntimeError(
        "CUDA error: an illegal memory access was encountered\n"
        "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/ for more information.\n"
        "CUDA kernel errors might be asynchronously reported at some other API call"
    )
    assert describe_exception(error) == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert describe_exception(ValueError()) == "ValueError"


def test_describe_exception_tells_a_compile_failure_by_its_cause() -> None:
    """torch.compile wraps a backend's error in one whose last line is advice on verbose logs."""

    def refusing_backend(graph: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> object:
        raise PermissionError("mkdir of /elsewhere/.triton, outside its own folders")

    compiled = torch.compile(lambda x: x * 2 + 1, backend=refusing_backend)
    with pytest.raises(Exception) as caught:
        compiled(torch.ones(4))
    assert "TORCHDYNAMO_VERBOSE" in str(caught.value)
    assert describe_exception(caught.value) == (
        f"{type(caught.value).__name__}: PermissionError: mkdir of /elsewhere/.triton, outside its own folders")


def test_seal_detects_patched_timer_and_settings() -> None:
    seal = correctness.default_seal([timing])
    assert seal.broken() is None
    original = timing.perf_counter_ns
    timing.perf_counter_ns = lambda: 0  # type: ignore[assignment]
    try:
        assert "timing.perf_counter_ns" in (seal.broken() or "")
    finally:
        timing.perf_counter_ns = original
    assert seal.broken() is None
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium" if precision != "medium" else "high")
    try:
        assert "float32_matmul_precision" in (seal.broken() or "")
    finally:
        torch.set_float32_matmul_precision(precision)


def test_seal_sees_the_threads_dispatch_keys_switched_at_import() -> None:
    # Red team round 19: autocast entered and a key excluded at import both passed the gate, and the per-call reads
    # (modes.py) start from the state after import; the seal, taken before it, compares them.
    seal = correctness.default_seal([timing])
    autocast = torch.autocast("cpu")
    autocast.__enter__()
    try:
        assert "autocast_cpu" in (seal.broken() or "") or "dispatch_keys" in (seal.broken() or "")
    finally:
        autocast.__exit__(None, None, None)
    excluded = torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradCPU))
    excluded.__enter__()
    try:
        assert "dispatch_keys_excluded" in (seal.broken() or "")
    finally:
        excluded.__exit__(None, None, None)
    assert seal.broken() is None


@pytest.mark.skipif(not hasattr(torch.backends.cudnn, "conv"), reason="torch before 2.9: no per-backend precision")
def test_the_seal_takes_torchs_per_backend_precision_towards_exact_float32_only() -> None:
    """torch 2.9's fp32_precision: "ieee" (exact float32) may be set, "tf32" not; the legacy switches, unreadable
    once the two APIs are mixed, are judged by the per-backend values."""
    conv, matmul = torch.backends.cudnn.conv.fp32_precision, torch.backends.cuda.matmul.fp32_precision
    seal = correctness.default_seal([timing])
    try:
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        assert seal.broken() is None
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        assert f"cuda.matmul.fp32_precision from {matmul!r} to 'tf32'" in (seal.broken() or "")
    finally:
        torch.backends.cudnn.conv.fp32_precision = conv
        torch.backends.cuda.matmul.fp32_precision = matmul


# ---------------------------------------------------------------- unit: timing and spec


def test_rel_se_and_stop_rule() -> None:
    config = timing.TimingConfig(min_reps=3, max_reps=10, target_rel_se=0.01, max_seconds_per_workload=5.0)
    assert timing.rel_se([1.0]) == math.inf
    assert timing.rel_se([10.0, 10.0, 10.0]) == 0.0
    # One outlier (a starved call) barely moves the median, nor the error bound the loop stops on.
    steady = [10.0 + 0.1 * (i % 5) for i in range(24)]
    assert timing.rel_se([*steady[:-1], 500.0]) < 1.2 * timing.rel_se(steady) < 0.005
    assert not timing.should_stop([10.0, 10.0], 0.0, config)  # below min_reps
    assert timing.should_stop([10.0, 10.0, 10.0], 0.0, config)  # error small
    assert not timing.should_stop([1.0, 10.0, 5.0], 0.0, config)  # noisy, budget left
    assert timing.should_stop([1.0, 10.0, 5.0], 6.0, config)  # budget spent
    assert timing.should_stop([1.0, 10.0] * 5, 0.0, config)  # rep cap


def test_time_interleaved_gives_every_call_its_number_and_checks_every_timed_call() -> None:
    seen: dict[str, list[int]] = {"reference": [], "candidate": []}
    warm: list[int] = []

    def measure(role: str, call: int, warming: bool) -> timing.Measured:
        (warm if warming else seen[role]).append(call)
        return timing.Measured(10.0 if role == "reference" else 5.0)

    config = timing.TimingConfig(warmup=1, min_reps=4, max_reps=4)
    result = timing.time_interleaved(["reference", "candidate"], measure, config, random.Random(0))
    assert result.rounds == 4 and len(warm) == 2 and result.audit_failure is None
    every_call = warm + seen["reference"] + seen["candidate"]
    assert len(set(every_call)) == len(every_call)  # no two calls share inputs
    assert result.paired_ratios("reference", "candidate") == [2.0] * 4


def test_a_warm_up_block_is_untimed_and_its_first_call_does_not_set_the_head_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A first call that loads kernels takes tens of milliseconds on the host; were it remembered, every timed call
    # of the next blocks would busy-wait for twice that on the GPU. The CUDA timer's logic, without a GPU.
    timer = object.__new__(timing.CuptiTimer)
    timer.head_start_us, timer._enqueues = timing.MAX_HEAD_START_US, deque(maxlen=timing.ENQUEUE_WINDOW)
    monkeypatch.setattr(timer, "sync", lambda: None)
    slow_first = iter([0.05, 0.0, 0.0, 0.0])
    kept: list[int] = []
    warm = timer.warm_block(lambda x: time.sleep(next(slow_first)) or x, [(1,), (2,), (3,), (4,)],
                            lambda i, out: kept.append(i) or out)
    assert [call.us for call in warm] == [0.0] * 4 and [call.out for call in warm] == [1, 2, 3, 4]
    assert kept == [0, 1, 2, 3]  # inputs checked and outputs copied as for timed calls
    # The three later calls only (a loaded machine may take milliseconds over each); counted, the first call's
    # 50 ms would have set the head start to its 5 ms cap.
    assert len(timer._enqueues) == 3 and max(timer._enqueues) < 40_000
    cpu = timing.CpuTimer().warm_block(lambda x: x, [(5,)])
    assert cpu[0].us == 0.0 and cpu[0].out == 5


def test_no_result_of_a_block_is_released_before_every_result_is_copied() -> None:
    # A finalizer on call i's result ran when call i+1's result replaced it: after call i+1's clock had stopped and
    # before its result was copied, so it could fill that result unseen (red team round 7, the event timer's
    # blocks). The block keeps every result until it is over.
    freed: list[int] = []
    seen: list[list[int]] = []

    class Result:
        pass

    def call(i: int) -> Result:
        out = Result()
        weakref.finalize(out, freed.append, i)
        return out

    timed = timing.each_timed(timing.CpuTimer(), call, [(i,) for i in range(4)],
                              lambda i, out: seen.append(list(freed)) or i)
    assert seen == [[], [], [], []] and [t.out for t in timed] == [0, 1, 2, 3]
    gc.collect()
    assert sorted(freed) == [0, 1, 2, 3]  # released once the block is over


def test_the_head_start_follows_the_typical_enqueue_not_a_stray_one() -> None:
    # One slow enqueue in a window (a page fault, a busy core) must not make the next sixteen calls wait for it:
    # the head start is twice the median; the stray call itself is starved (its GPU waits, and it pays).
    timer = object.__new__(timing.CuptiTimer)
    timer.head_start_us, timer.starved_calls, timer.max_enqueue_us = timing.HEAD_START_US, 0, 0.0
    timer._enqueues, timer._host_us = deque(maxlen=timing.ENQUEUE_WINDOW), []
    timer._reset_persisting_l2, timer.cycles_per_us = None, 2000.0
    for enqueue_us in [80.0] * 15 + [3000.0]:
        timer._adapt(enqueue_us)
    assert timer.head_start_us == 160.0 and timer.starved_calls == 1 and timer.max_enqueue_us == 3000.0
    # The host side the head start hid is reported, per batch of calls (a workload's), for the eager-loop warning.
    assert timing._CudaTimerBase.diagnostics(timer)["host_median_us"] == 80.0
    for _ in range(timing.ENQUEUE_WINDOW):  # a host that is steadily slower moves it
        timer._adapt(400.0)
    assert timer.head_start_us == 800.0
    assert timing._CudaTimerBase.diagnostics(timer)["host_median_us"] == 400.0


def test_time_interleaved_stops_at_the_first_wrong_timed_output() -> None:
    def measure(role: str, call: int, warming: bool) -> timing.Measured:
        return timing.Measured(1.0, None if call <= 6 else "wrong")  # right for a while, then garbage

    config = timing.TimingConfig(warmup=1, min_reps=20, max_reps=20)
    result = timing.time_interleaved(["candidate"], measure, config, random.Random(0))
    # call 0 warmed up; calls 1 to 6 were right
    assert result.audit_failure is not None
    assert "on a timed call (the candidate's call 7): wrong" in result.audit_failure


def test_time_interleaved_reports_which_role_raised() -> None:
    def boom() -> None:
        raise ValueError("no")

    config = timing.TimingConfig(warmup=0, min_reps=2, max_reps=2)
    measure = timing.local_measure({"candidate": boom}, [()], timing.CpuTimer())
    with pytest.raises(timing.CallError) as caught:
        timing.time_interleaved(["candidate"], measure, config, random.Random(0))
    assert caught.value.role == "candidate"


def _activity(name: str, start: int, end: int, correlation: int, value: int = -1) -> timing.Activity:
    return timing.Activity(name, start * 1000, end * 1000, correlation, value)  # microseconds in, CUPTI's ns stored


def _marker(value: int, start: int, end: int, correlation: int) -> timing.Activity:
    return _activity(timing.MEMSET, start, end, correlation, value)


MARKS = timing.Marks(0xA11CE, 0xB0B)


def test_a_calls_span_counts_every_stream_from_the_earliest_start_to_the_latest_end() -> None:
    batch = [
        _activity("distribution", 0, 5, 11),  # the harness's work since the last call: the next inputs
        _activity("copy", 5, 7, 12),  # ... and a snapshot of them
        _marker(MARKS.open, 7, 40, 13),  # the L2 flush, which opens the call
        _activity("spin", 40, 140, 14),  # the head start
        _activity("side_kernel", 60, 400, 16),  # a stream that never waited: it ran during the head start
        _activity("main_kernel", 140, 150, 15),
        _marker(MARKS.close, 401, 402, 17),  # the closing set
    ]
    assert timing.block_spans(batch, [MARKS], closed_before=10) == [(340.0, None, 17)]
    alone = [record for record in batch if record.name != "side_kernel"]
    assert timing.block_spans(alone, [MARKS], closed_before=10) == [(10.0, None, 17)]
    # A host slower than the head start (computing on the CPU, say): the GPU waited from 140 to 300 for it.
    late = [*batch[:4], _activity("main_kernel", 300, 310, 15), batch[-1]]
    assert timing.block_spans(late, [MARKS], closed_before=10) == [(170.0, None, 17)]


def test_a_call_ends_no_earlier_than_its_return_to_the_host() -> None:
    """A result the host computed after the GPU's last record (into memory mapped for the device, with nothing
    launched after it) is the call's: its set of the host's return is its end."""
    marks = timing.Marks(0xA11CE, 0xB0B, returned=0xBAC)
    batch = [
        _marker(marks.open, 0, 40, 1),
        _activity("spin", 40, 140, 2),  # the head start
        _activity("read_inputs", 140, 150, 3),  # a copy of the inputs to the host
        _marker(marks.returned, 2150, 2151, 4),  # the host returned 2 us after the GPU's last record
        _marker(marks.close, 2160, 2161, 5),
    ]
    assert timing.block_spans(batch, [marks], closed_before=0) == [(2010.0, None, 5)]
    nothing = [batch[0], batch[1], batch[3], batch[4]]  # no record at all: from the head start's end to the return
    assert timing.block_spans(nothing, [marks], closed_before=0) == [(2010.0, None, 5)]
    # A host faster than the head start returns while it runs: the call's own records end it, as before.
    early = [*batch[:3], _marker(marks.returned, 60, 61, 4), batch[4]]
    assert timing.block_spans(early, [marks], closed_before=0) == [(10.0, None, 5)]
    assert timing.block_spans([*early[:3], early[4]], [marks], 0)[0].stray is not None  # the return's set lost
    outside = [*batch[:3], batch[4], _marker(marks.returned, 2170, 2171, 6)]  # after the closing set: not a return
    assert "lost its own marker" in (timing.block_spans(outside, [marks], 0)[0].stray or "")


def test_a_block_is_cut_at_the_harness_markers_and_the_calls_own_sets_do_not_pass_for_them() -> None:
    second = timing.Marks(0xC0FFEE, 0xD00D)
    batch = [
        _marker(MARKS.open, 0, 40, 1),
        _activity("spin", 40, 140, 2),
        _marker(0xB0C, 140, 141, 3),  # the call's own sets, with any value but the closing one
        _activity("main_kernel", 141, 150, 4),
        _marker(MARKS.close, 151, 152, 5),
        _activity("distribution", 152, 160, 6),  # the harness, between calls: nobody's time
        _marker(second.open, 160, 200, 7),
        _activity("spin", 200, 300, 8),
        _activity("main_kernel", 300, 320, 9),
        _marker(second.close, 321, 322, 10),
    ]
    assert timing.block_spans(batch, [MARKS, second], closed_before=0) == [(10.0, None, 5), (20.0, None, 10)]
    forged = [*batch, _marker(second.close, 400, 401, 11)]  # a set that copies a closing marker's value
    assert "lost its own marker" in (timing.block_spans(forged, [MARKS, second], 0)[1].stray or "")


def test_a_call_span_flags_work_that_finished_after_its_call_was_over() -> None:
    batch = [
        _activity("leftover", 0, 900, 9),  # launched in the previous block (before its last closing set, 10)
        _marker(MARKS.open, 0, 40, 12),
        _activity("spin", 40, 140, 13),
        _activity("main_kernel", 140, 150, 14),
        _marker(MARKS.close, 151, 152, 15),
    ]
    span = timing.block_spans(batch, [MARKS], closed_before=10)[0]
    assert span.stray is not None and "outside its call (leftover)" in span.stray
    assert timing.block_spans(batch[1:4], [MARKS], 10)[0].stray is not None  # no closing set: records incomplete
    empty = [_marker(MARKS.open, 0, 10, 1), _activity("spin", 10, 11, 2), _marker(MARKS.close, 11, 12, 3)]
    assert timing.block_spans(empty, [MARKS], 0) == [(0.0, None, 3)]  # no GPU work at all: no time
    own_context = [timing.Activity(timing.NEW_CONTEXT, 0, 0, -1), *batch[1:]]
    assert "a CUDA context of its own" in (timing.block_spans(own_context, [MARKS], 10)[0].stray or "")


def test_parse_spec_and_helpers() -> None:
    with pytest.raises(SpecError):
        parse_spec({"mode": "evaluate", "device": "tpu", "result": "r"})
    with pytest.raises(SpecError):
        parse_spec({"mode": "evaluate", "device": "cpu", "result": "r", "workloads": []})
    assert parse_spec({"mode": "profile", "device": "cpu", "result": "r"}).mode == "profile"
    assert json_safe({"a": math.inf, "b": [1.5, math.nan]}) == {"a": None, "b": [1.5, None]}


# ---------------------------------------------------------------- the child as a subprocess


def test_correct_candidate_passes_with_paired_times(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    return x + x\n", incumbent="def run(x):\n    return x * 2.0\n")
    assert result["ok"] and result["correct"], result["failure"]
    assert result["stage"] == "done" and result["failure"] is None
    assert [w["index"] for w in result["workloads"]] == [0, 1]
    for workload in result["workloads"]:
        assert workload["correct"] and workload["matched_ratio"] == 1.0 and workload["max_abs_err"] == 0.0
        assert workload["time_us"] > 0 and workload["ref_time_us"] > 0 and workload["incumbent_time_us"] > 0
        assert 3 <= workload["reps"] <= 6
        assert len(workload["paired_ratios"]) == workload["reps"]
    assert result["workloads"][1]["held_out"] is True
    assert result["device"]["kind"] == "cpu" and result["device"]["torch"] == torch.__version__
    assert set(result["seconds"]) == {"load", "precompile", "wait", "compile", "correctness", "baseline", "timing"}


def test_timed_calls_made_a_block_at_a_time_are_each_timed_and_audited(tmp_path: Path) -> None:
    timing_in_blocks = {**FAST_TIMING, "block": 4, "min_reps": 5, "max_reps": 9}
    result = _evaluate(tmp_path, "def run(x):\n    return x + x\n", incumbent="def run(x):\n    return x * 2.0\n",
                       timing=timing_in_blocks)
    assert result["correct"], result["failure"]
    for workload in result["workloads"]:
        assert 5 <= workload["reps"] <= 9 and len(workload["paired_ratios"]) == workload["reps"]
        assert workload["harness"]["candidate_audit_us"] > 0  # the candidate's blocks were audited
    # Wrong from its eleventh call on, inside a block whose first calls were right: that call is the one named.
    late = """
    calls = [0]

    def run(x):
        calls[0] += 1
        return x * 2 if calls[0] <= 10 else x * 3
    """
    result = _evaluate(tmp_path, late, timing=timing_in_blocks)
    _assert_fails(result, "of elements within")
    assert "call of the candidate" in result["failure"] or "the candidate's call" in result["failure"]


def test_a_block_audits_a_random_quarter_of_its_calls_and_always_its_last() -> None:
    """The last call always: a kernel that stops working after some number of calls is caught in the block it
    stops in, however late (a random quarter alone missed one that stopped in the timing's last block)."""
    rng = random.Random(0)
    for count in (1, 2, 4, 8, 9):
        for _ in range(200):
            picked = audited_calls(count, rng)
            assert count - 1 in picked and picked <= set(range(count))
            assert len(picked - {count - 1}) >= math.ceil(AUDIT_SHARE * count) - 1
    assert len({frozenset(audited_calls(8, rng)) for _ in range(100)}) > 5  # the others are drawn


def test_a_candidate_that_returns_the_same_buffer_every_call_passes_in_blocks(tmp_path: Path) -> None:
    # Static outputs (CUDA graphs, torch.compile's reduce-overhead): the next call of a block overwrites what the
    # last returned, so the block keeps a copy of each output, made right after its call.
    static = """
    import torch

    buffers = {}

    def run(x):
        out = buffers.setdefault(tuple(x.shape), torch.empty_like(x))
        torch.mul(x, 2, out=out)
        return out
    """
    result = _evaluate(tmp_path, static, timing={**FAST_TIMING, "block": 4})
    assert result["correct"], result["failure"]


def test_triton_candidate_passes_in_interpreter(tmp_path: Path) -> None:
    candidate = """
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    def run(x):
        y = torch.empty_like(x)
        _double[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
    """
    result = _evaluate(tmp_path, candidate, workloads=WORKLOADS[:1])
    assert result["correct"], result["failure"]
    assert result["workloads"][0]["paired_ratios"] == []  # no incumbent


def test_wrong_candidate_fails_with_reason(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    return x * 2.1\n")
    _assert_fails(result, "workload 0 (M=3, N=300) seed 0 (normal inputs): output:", "of elements within atol=0.01")
    assert result["stage"] == "correctness"
    assert result["failure_workload"] == 0 and result["failure_held_out"] is False
    assert len(result["workloads"]) == 1 and result["workloads"][0]["correct"] is False
    assert result["workloads"][0]["matched_ratio"] < 0.999


def test_zeros_candidate_fails_on_matched_ratio(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "import torch\ndef run(x):\n    return torch.zeros_like(x)\n")
    _assert_fails(result, "need 99.9000%")


def test_unwritten_output_fails(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "import torch\ndef run(x):\n    return torch.empty_like(x)\n")
    _assert_fails(result, "workload 0")


def test_a_candidate_wrong_only_in_timing_fails_on_its_first_wrong_call(tmp_path: Path) -> None:
    # Right through correctness (at most six calls here), then every element in place but the shape wrong: the
    # audit that follows each timed call, on positions drawn after it returned, sees it.
    candidate = """
    calls = [0]

    def run(x):
        calls[0] += 1
        out = x * 2
        return out if calls[0] <= 6 else out.reshape(out.shape[1], out.shape[0])
    """
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, "output has shape [300, 3], expected [3, 300]")
    assert "warm-up call of the candidate" in result["failure"] or "on a timed call" in result["failure"]


def test_input_modifying_candidate_fails(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    return x.mul_(2)\n")
    _assert_fails(result, "candidate modified input 0")


def test_tensor_subclass_output_fails(tmp_path: Path) -> None:
    candidate = """
    import torch

    class Sneaky(torch.Tensor):
        pass

    def run(x):
        return (x * 2).as_subclass(Sneaky)
    """
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, "output is arcengine_guard_kernel.Sneaky, not exactly torch.Tensor")


def test_raising_candidate_fails_with_message(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    raise ValueError('tile size too large')\n")
    _assert_fails(result, "candidate raised ValueError: tile size too large (line 2)")


def test_a_refusal_swallowed_before_a_raise_is_the_reason(tmp_path: Path) -> None:
    """Writing into a descriptor of the driver's broke CUDA on a GPU, and the error that followed hid the refused
    open: the refusal is the cause, so it is the reason."""
    candidate = """
    import os

    def run(x):
        try:
            open(os.eventfd(0), "wb")
        except PermissionError:
            pass
        raise RuntimeError("CUDA error: OS call failed or operation not supported on this OS")
    """
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, "opened descriptor", "eventfd", "(the harness's or the driver's)")


def test_python_left_running_on_a_librarys_thread_fails(tmp_path: Path) -> None:
    """The catalogue's callback parked at import on TorchScript's inter-op pool, judged without the gate (which
    refuses its route): it runs Python between and after calls on a thread that existed before any of them, and
    the frames show it."""
    candidate = (ROOT / "tests" / "adversarial" / "scale" / "jit_fork_parked_callback.py").read_text()
    result = _evaluate(tmp_path, candidate)
    assert result["ok"] is True and result["correct"] is False
    assert "candidate left Python running on a library's thread" in result["failure"], result["failure"]
    assert re.search(r"candidate\.py, line (29|30|31)\)", result["failure"])  # where it runs: the callback's loop


def test_nan_positions_are_compared(tmp_path: Path) -> None:
    candidate = "import torch\ndef run(x):\n    return torch.nan_to_num(x * 2, nan=0.0)\n"
    result = _evaluate(tmp_path, candidate, reference=NAN_REFERENCE, workloads=WORKLOADS[:1])
    _assert_fails(result, "NaN positions differ at 1 of 900 elements (first at (0, 1)")


def test_held_out_workloads_are_checked(tmp_path: Path) -> None:
    candidate = "def run(x):\n    return x * 2 if x.shape[1] == 300 else x * 3\n"
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, "held-out workload 1 (M=8, N=130) seed 0")
    assert result["failure_workload"] == 1 and result["failure_held_out"] is True
    assert [w["correct"] for w in result["workloads"]] == [True, False]


def test_import_errors_and_missing_run(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "import torch\nraise RuntimeError('bad module')\n")
    _assert_fails(result, "candidate failed to import: RuntimeError: bad module")
    assert result["stage"] == "load"
    result = _evaluate(tmp_path, "RUN = 1\n")
    _assert_fails(result, "candidate has no callable run")


def test_candidate_patching_the_harness_fails(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "import time\ntime.perf_counter_ns = lambda: 0\ndef run(x):\n    return x * 2\n")
    _assert_fails(result, "candidate patched harness function time.perf_counter_ns")


def test_background_thread_fails(tmp_path: Path) -> None:
    candidate = """
    import threading
    import time

    def run(x):
        out = x * 2
        threading.Thread(target=time.sleep, args=(1.0,), name="late-writer", daemon=True).start()
        return out
    """
    result = _evaluate(tmp_path, candidate, workloads=WORKLOADS[:1])
    _assert_fails(result, "left a thread running", "late-writer")


def test_broken_reference_is_a_harness_failure(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    return x\n", reference="def run(x):\n    return x\n")
    assert result["ok"] is False and result["correct"] is False
    assert result["failure"] == "reference has no callable make_inputs"


def test_profile_mode_reports_positive_ceilings(tmp_path: Path) -> None:
    result, _ = _run_child(tmp_path, {"mode": "profile", "device": "cpu"})
    assert result["ok"] is True
    assert result["bandwidth_bytes_per_s"] > 0 and result["flops_per_s"] > 0
    assert result["device"]["kind"] == "cpu"


def test_a_profiling_child_profiles_and_judges_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine's profiling child starts no worker (and so imports none of what workers need): a second off it.
    monkeypatch.setenv(PROFILING, "1")
    profiled, _ = _run_child(tmp_path, {"mode": "profile", "device": "cpu"})
    assert profiled["ok"] is True and profiled["flops_per_s"] > 0
    result = _evaluate(tmp_path, "def run(x):\n    return x * 2 + 1\n")
    assert result["ok"] is False and "which has no workers" in result["failure"]


# ---------------------------------------------------------------- CUDA (skipped where there is no GPU)

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
CUDA_WORKLOADS = [
    {"index": 0, "axes": {"M": 3, "N": 300}, "held_out": False},
    {"index": 1, "axes": {"M": 4096, "N": 4096}, "held_out": True},
]
TRITON_DOUBLE = """
import torch
import triton
import triton.language as tl

@triton.jit
def _double(x_ptr, y_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs + SHIFT, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

def run(x):
    y = torch.empty_like(x)
    _double[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), SHIFT=SHIFT_VALUE, BLOCK=1024)
    return y
"""


@cuda_only
def test_cuda_triton_candidate_passes_with_device_info(tmp_path: Path) -> None:
    candidate = TRITON_DOUBLE.replace("SHIFT_VALUE", "0")
    result = _evaluate(
        tmp_path, candidate, incumbent="def run(x):\n    return x + x\n", workloads=CUDA_WORKLOADS, device="cuda"
    )
    assert result["correct"], result["failure"]
    device = result["device"]
    assert device["kind"] == "cuda" and device["sm_count"] > 0 and device["l2_bytes"] > 0
    assert device["cuda"] and device["name"]
    for workload in result["workloads"]:
        assert workload["time_us"] > 0 and workload["incumbent_time_us"] > 0
        assert len(workload["paired_ratios"]) == workload["reps"]


@cuda_only
def test_cuda_unwritten_output_fails(tmp_path: Path) -> None:
    candidate = "import torch\ndef run(x):\n    return torch.empty_like(x)\n"
    result = _evaluate(tmp_path, candidate, workloads=CUDA_WORKLOADS, device="cuda")
    _assert_fails(result, "NaN positions differ")


@cuda_only
def test_cuda_illegal_address_is_a_verdict(tmp_path: Path) -> None:
    candidate = TRITON_DOUBLE.replace("SHIFT_VALUE", str(1 << 40))
    result = _evaluate(tmp_path, candidate, workloads=CUDA_WORKLOADS, device="cuda")
    _assert_fails(result, "workload 0")
    assert "CUDA error: an illegal memory access" in result["failure"], result["failure"]


@cuda_only
def test_cuda_profile_mode(tmp_path: Path) -> None:
    started = time.monotonic()
    result, _ = _run_child(tmp_path, {"mode": "profile", "device": "cuda"})
    assert result["ok"] is True, result
    assert result["bandwidth_bytes_per_s"] > 1e11 and result["flops_per_s"] > 1e13
    assert time.monotonic() - started < 60


# ---------------------------------------------------------------- distributions and determinism


def test_candidate_right_only_on_normal_inputs_fails_on_large_ones(tmp_path: Path) -> None:
    clamped = "def run(x):\n    return x.clamp(-50, 50) * 2\n"
    assert _evaluate(tmp_path, clamped, distributions=["normal"])["correct"] is True
    result = _evaluate(tmp_path, clamped, distributions=["normal", "large"])
    _assert_fails(result, "(large inputs)")


def test_every_distribution_is_drawn_even_with_few_seeds(tmp_path: Path) -> None:
    # Two seeds, three distributions: the third (large) still runs, and this candidate fails only there.
    candidate = "import torch\ndef run(x):\n    return torch.where(x.abs() > 100, 0.0, x * 2)\n"
    result = _evaluate(tmp_path, candidate, distributions=["normal", "uniform", "large"])
    _assert_fails(result, "(large inputs)")


LARGE_OUTPUT = [{"index": 0, "axes": {"M": 1024, "N": 2048}, "held_out": False}]  # 8 MB out: sampled after case 1


def test_large_outputs_are_sampled_after_the_first_case_and_a_wrong_region_still_fails(tmp_path: Path) -> None:
    assert _evaluate(tmp_path, "def run(x):\n    return x * 2.0\n", workloads=LARGE_OUTPUT)["correct"] is True
    # Right on the first case (compared in full) and its rerun, then a tenth of the rows left at zero.
    later_wrong = ("calls = [0]\n\ndef run(x):\n    calls[0] += 1\n    y = x * 2.0\n"
                   "    if calls[0] > 2:\n        y[: y.shape[0] // 10] = 0\n    return y\n")
    _assert_fails(_evaluate(tmp_path, later_wrong, workloads=LARGE_OUTPUT), "seed 1 (")


def test_nondeterministic_candidate_fails_unless_the_problem_allows_it(tmp_path: Path) -> None:
    noisy = "import torch\ndef run(x):\n    return x * 2 + torch.rand_like(x) * 1e-4\n"
    _assert_fails(_evaluate(tmp_path, noisy), "nondeterministic")
    _assert_fails(_evaluate(tmp_path, noisy, workloads=LARGE_OUTPUT), "nondeterministic")  # the rerun sampled
    assert _evaluate(tmp_path, noisy, deterministic=False)["correct"] is True


def test_reference_specific_distribution(tmp_path: Path) -> None:
    reference = REFERENCE.replace(
        "def make_inputs(axes, generator, device):",
        "def make_inputs(axes, generator, device, distribution='normal'):\n"
        "    if distribution == 'ones':\n"
        "        return (torch.ones(axes['M'], axes['N'], device=device),)",
    )
    candidate = "import torch\ndef run(x):\n    return torch.where(x == 1, 0.0, x * 2)\n"
    assert _evaluate(tmp_path, candidate, reference=reference)["correct"] is True
    _assert_fails(_evaluate(tmp_path, candidate, reference=reference, distributions=["normal", "ones"]),
                  "(ones inputs)")


def test_distribution_assignment_and_transforms() -> None:
    from arcengine.guard.child import distributions

    cases = distributions.assign([0, 1], ["normal", "uniform", "large"])
    assert [d for _, d in cases] == ["normal", "uniform", "large"]
    assert len({s for s, _ in cases}) == 3  # a distinct seed for the extra case
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1000, generator=generator).to(torch.bfloat16)
    uniform = distributions.TRANSFORMS["uniform"](x, generator)
    assert uniform.dtype == torch.bfloat16 and uniform.abs().max() <= 1
    assert distributions.TRANSFORMS["large"](x, generator).float().abs().max() > 500
    heavy = distributions.TRANSFORMS["heavy_tailed"](x.float(), generator)
    assert torch.isfinite(heavy).all() and heavy.abs().max() > x.float().abs().max()
    ints = torch.arange(5)
    assert distributions.make_inputs(lambda a, g, d: (ints,), {}, generator, torch.device("cpu"), "large")[0] is ints


def test_matched_ratio_forgives_rounding_not_wrong_values() -> None:
    ref = torch.linspace(1, 2, 2000)
    rounding = ref.clone()
    rounding[-1] += 0.05  # one element a little past tolerance (0.01 + 0.02): forgiven by the ratio
    assert compare_tensor(rounding, ref, TOL).ok
    skipped = ref.clone()
    skipped[-1] = 0.0  # one element simply not computed
    comparison = compare_tensor(skipped, ref, TOL)
    assert not comparison.ok and "off by" in comparison.failure and "(1999,)" in comparison.failure


@pytest.mark.parametrize("chunk", [1 << 24, 7, 1])
def test_a_comparison_made_in_chunks_reads_as_one_made_whole(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large outputs are compared a chunk at a time (bounded temporaries): counts, first positions, the worst
    element and the ratio are the whole tensor's, whichever chunk holds them."""
    monkeypatch.setattr(correctness, "COMPARE_CHUNK", chunk)
    ref = torch.linspace(1, 2, 60).reshape(3, 4, 5)
    nan_late = ref.clone()
    nan_late[2, 3, 4], nan_late[1, 0, 0] = float("nan"), float("nan")
    assert ("NaN positions differ at 2 of 60 elements (first at (1, 0, 0)"
            in compare_tensor(nan_late, ref, TOL).failure)
    outlier = ref.clone()
    outlier[0, 0, 1] += 0.1  # past tolerance, forgiven alone by a lax ratio; the worst is the later one
    outlier[2, 1, 3] = 0.0  # expected 1.81
    lax = Tolerance(atol=0.01, rtol=0.01, matched_ratio=0.9)
    failure = compare_tensor(outlier, ref, lax).failure
    assert "element (2, 1, 3) is off by" in failure and "expected 1.8" in failure
    comparison = compare_tensor(outlier, ref, TOL)
    assert "96.6667% of elements" in comparison.failure and comparison.max_abs_err == ref[2, 1, 3].item()
    pairs = torch.complex(ref, -ref)
    moved = pairs.clone()
    moved[1, 2, 2] = complex(0.0, float("inf"))
    assert "(1, 2, 2, 1)" in compare_tensor(moved, pairs, TOL).failure  # complex values: (real, imaginary)
    assert compare_tensor(pairs.clone(), pairs, TOL).ok


def test_seal_sees_swapped_code_objects_class_methods_and_function_modes() -> None:
    import types

    module = types.ModuleType("harness_under_test")
    exec("def compare(a, b):\n    return a == b\n\nclass Timer:\n    def time(self):\n        return 1.0\n",
         module.__dict__)
    seal = correctness.HarnessSeal()
    seal.watch_module(module)
    assert seal.broken() is None
    module.compare.__code__ = (lambda a, b: True).__code__  # same function object, new body
    assert "compare" in (seal.broken() or "")

    seal = correctness.HarnessSeal()
    seal.watch_module(module)
    module.Timer.time = lambda self: 0.0
    assert "Timer.time" in (seal.broken() or "")

    seal = correctness.HarnessSeal()
    with torch.overrides.TorchFunctionMode():
        assert "torch_function_modes" in (seal.broken() or "")
    assert seal.broken() is None


def test_seal_sees_a_base_method_shadowed_on_a_subclass_and_forgives_a_harmless_reassignment() -> None:
    import types

    module = types.ModuleType("harness_under_test")
    exec("class Base:\n    def time(self):\n        return 1.0\n    @staticmethod\n    def now():\n        return 2.0\n"
         "class Timer(Base):\n    pass\n", module.__dict__)
    seal = correctness.HarnessSeal()
    seal.watch_module(module)
    assert seal.broken() is None
    module.Timer.time = lambda self: 0.0  # Base.time untouched, but Timer().time() now answers 0
    assert "Timer.time" in (seal.broken() or "")
    del module.Timer.time
    assert seal.broken() is None
    module.Timer.time = module.Base.__dict__["time"]  # the same function, now found one class earlier
    assert seal.broken() is None
    module.Base.__dict__["now"].__func__.__code__ = (lambda: 0.0).__code__
    assert "now" in (seal.broken() or "")


def test_seal_of_a_module_holding_an_enum_is_intact_until_a_member_method_changes() -> None:
    # CUPTI's module holds enums: dir() of an Enum class lists what its metaclass lends (__contains__), which no
    # class in its MRO holds; watching those made every seal with cupti loaded report a patch on the H200.
    import enum
    import types

    module = types.ModuleType("harness_under_test")
    module.Result = enum.IntEnum("Result", "SUCCESS ERROR")  # type: ignore[attr-defined]
    module.Result.__module__ = module.__name__
    seal = correctness.HarnessSeal()
    seal.watch_module(module)
    assert seal.broken() is None
    module.Result.__str__ = lambda self: "SUCCESS"  # type: ignore[attr-defined]
    assert "Result.__str__" in (seal.broken() or "")


def test_a_call_that_hangs_is_judged_at_its_own_limit_not_the_childs(tmp_path: Path) -> None:
    # Right through correctness, then a call that never returns: the worker is killed at the call's limit (the
    # floor, the reference being fast) with the reason, and the judge writes the verdict.
    candidate = """
    import time
    calls = [0]

    def run(x):
        calls[0] += 1
        if calls[0] > 8:
            while True:
                time.sleep(1)
        return x * 2
    """
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, "candidate failed during timing", "did not return within 10 s")
    assert re.search(r"\(hung at \S*candidate\.py, line 9; its process was killed\)", result["failure"])  # its loop


def test_a_worker_that_closes_its_channel_and_runs_on_is_killed(tmp_path: Path) -> None:
    # Its socket closed at import (native code can close any descriptor), then a loop: the judge reads the closed
    # channel as a death, and waits for the exit status a bounded time, not for ever.
    candidate = """
    import os, stat, time
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass
    while True:
        time.sleep(0.05)
    """
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, "the candidate did not load: closed its channel to the harness and went on running "
                          "(killed after 10 s)")


def test_every_child_draws_its_own_inputs_unless_pinned(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    candidate = f"""
    def run(x):
        with open({str(seen)!r}, "a") as log:
            log.write(repr(float(x.sum())) + "\\n")
        return x * 2
    """
    salts = set()
    for _ in range(2):
        result = _evaluate(tmp_path, candidate)
        assert result["correct"] is True, result["failure"]
        salts.add(result["input_salt"])
    first_inputs = seen.read_text().splitlines()
    # No input repeats across the two children; within one, only the determinism check's (once per workload).
    assert len(salts) == 2 and len(set(first_inputs)) == len(first_inputs) - 2 * len(WORKLOADS)
    pinned = {_evaluate(tmp_path, candidate, input_salt=11)["input_salt"] for _ in range(2)}
    assert pinned == {11}


FakeWorker = tuple[RemoteRole, socket.socket]


@pytest.fixture
def fake_worker() -> Iterator[FakeWorker]:
    """The judge's handle on a worker, and the worker's end of the socket, played by the test itself."""
    judge_end, worker_end = socket.socketpair()
    remote = RemoteRole("candidate", os.getpid(), judge_end)
    remote.kill = lambda: None  # type: ignore[method-assign]  # the test's own process stands in for the worker
    yield remote, worker_end
    worker_end.close()
    judge_end.close()


def test_a_reply_the_workers_harness_did_not_write_is_refused(fake_worker: FakeWorker) -> None:
    # A frame forged by candidate code that found its socket carries no or the wrong request number.
    remote, worker_end = fake_worker
    remote.begin({"op": "call"})
    command, _ = channel.receive(worker_end, 5.0)
    channel.send(worker_end, {"id": command["id"] + 1, "us": 0.001, "failure": None, "outputs": []})
    with pytest.raises(WorkerLost, match="a reply to another request"):
        remote.finish(5.0)
    remote.begin({"op": "call"})
    command, _ = channel.receive(worker_end, 5.0)
    channel.send(worker_end, {"id": command["id"], "us": 1.0, "failure": None, "outputs": []})
    assert remote.finish(5.0)[0]["us"] == 1.0


def test_a_sample_of_a_shape_that_is_not_one_is_refused(fake_worker: FakeWorker) -> None:
    remote, worker_end = fake_worker
    meta, payload = channel.pack_tensors([torch.ones(4)])
    for shape, readable in (([2, 2], True), ("2x2", False), ([2, -2], False), ([2.0, 2], False)):
        remote.begin({"op": "audit"})
        command, _ = channel.receive(worker_end, 5.0)
        channel.send(worker_end, {"id": command["id"], "us": 1.0, "failure": None, "single": True,
                                  "outputs": [{"tensor": 0, "meta": meta[0], "sampled_from": shape}]}, payload)
        if readable:
            reply = remote._reply(*remote.finish(5.0, 1 << 20))
            assert reply.outputs == correctness.Sample(reply.outputs.values, (2, 2))  # type: ignore[union-attr]
        else:
            with pytest.raises(WorkerLost, match="cannot read"):
                remote._reply(*remote.finish(5.0, 1 << 20))


def test_a_block_of_times_that_is_not_the_blocks_calls_is_refused(fake_worker: FakeWorker) -> None:
    remote, worker_end = fake_worker
    for times, failure, seeds, accepted in (
            ([1.0, 2.0], None, [7, 8], True), ([1.0], "raised", [9, 10], True), ([1.0], "raised", [11], True),
            ([1.0], None, [7], False), ([1.0, 2.0, 3.0], None, [7, 8, 9], False), ([1.0, -2.0], None, [7, 8], False),
            (["1"], "raised", [7], False),
            ([1.0, 2.0], None, [7], False), ([1.0, 2.0], None, None, False), ([1.0, 2.0], None, [7, "8"], False),
            ([1.0, 2.0], None, [7, 1 << 70], False)):
        # The reply is written first, numbered as the next request will be; the request itself is read after.
        channel.send(worker_end, {"id": remote.requests + 1, "times": times, "failure": failure, "seeds": seeds})
        if accepted:
            timed = remote.time({"seeds": [1, 2]}, 5.0)
            assert timed.times == times and timed.seeds == seeds
        else:
            with pytest.raises(WorkerLost, match="times that are not"):
                remote.time({"seeds": [1, 2]}, 5.0)
        assert channel.receive(worker_end, 5.0)[0]["op"] == "time"
    # The reason shows what came back: an honest kernel lost this way on a GPU is then diagnosed from the log alone.
    channel.send(worker_end, {"id": remote.requests + 1, "times": [1.0], "failure": None, "seeds": [5, 6]})
    with pytest.raises(WorkerLost, match=re.escape("[1.0] for 2 calls, seeds [5, 6], failure 'None'")):
        remote.time({"seeds": [1, 2]}, 5.0)


def test_a_timed_calls_seed_that_comes_again_is_refused(fake_worker: FakeWorker) -> None:
    # Red team round 11: the worker's seed source rebound (sys reached past the gate), so every timed call got one
    # input and a cache answered it. 62 random bits never repeat: a repeat, in a block or across blocks, is refused.
    remote, worker_end = fake_worker
    for seeds, accepted in (([7, 8], True), ([9, 9], False), ([10, 11], True), ([12, 7], False)):
        channel.send(worker_end, {"id": remote.requests + 1, "times": [1.0, 2.0], "failure": None, "seeds": seeds})
        if accepted:
            assert remote.time({"seeds": [1, 2]}, 5.0).seeds == seeds
        else:
            with pytest.raises(WorkerLost, match="seed came again"):
                remote.time({"seeds": [1, 2]}, 5.0)
        channel.receive(worker_end, 5.0)


def test_the_workers_seeds_do_not_come_from_a_module_the_candidate_can_rebind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "randbits", lambda bits: 7)
    monkeypatch.setattr(os, "urandom", lambda count: bytes(count))
    seeds = {worker._fresh_seed() for _ in range(4)}
    assert len(seeds) == 4 and all(0 <= seed < 1 << 62 for seed in seeds)


def test_tensors_cross_the_channel_as_bytes_and_bad_metadata_is_refused() -> None:
    tensors = [torch.randn(3, 4).to(torch.bfloat16), torch.arange(5), torch.zeros(0, 2), torch.tensor(True)]
    meta, parts = channel.pack_tensors(tensors)
    judge_end, worker_end = socket.socketpair()
    channel.send(worker_end, {"meta": meta}, parts)
    _, payload = channel.receive(judge_end, 5.0)
    judge_end.close()
    worker_end.close()
    back = channel.unpack_tensors(meta, payload)
    assert all(correctness.bitwise_equal(a, b) for a, b in zip(tensors, back, strict=True))
    for bad in ({**meta[0], "shape": [-3, -4]}, {**meta[0], "dtype": "Tensor"}, {**meta[0], "nbytes": 10**9}):
        with pytest.raises(channel.ChannelError):
            channel.unpack_tensors([bad], payload)


SNOOP = """
import gc
import sys

SECRETS = {secrets!r}  # reversed: the strings themselves must not sit in this module's own namespace
LOG = {log!r}


def _texts():
    frame = sys._getframe()
    while frame is not None:  # every frame up the stack: the worker's serving loop, and what forked it
        yield repr(frame.f_locals)
        frame = frame.f_back
    for module in list(sys.modules.values()):  # every module's globals (gc's object graph is refused)
        try:
            yield repr(vars(module))[:100000]
        except Exception:
            pass
    try:
        for obj in gc.get_objects():  # every container the interpreter tracks
            if isinstance(obj, dict | list | tuple):
                yield repr(obj)[:100000]
    except PermissionError:
        pass


def run(x):
    found = sorted({{secret[::-1] for text in _texts() for secret in SECRETS if secret[::-1] in text}})
    with open(LOG, "a") as log:
        log.write(repr(found) + "\\n")
    return x * 2
"""


def test_the_candidates_process_holds_no_token_and_no_result_path(tmp_path: Path) -> None:
    # Without the gate (the child judges what it is given), candidate code that walks every frame and every
    # module of its process finds neither: its worker was forked before the judge read the spec.
    log = tmp_path / "found.txt"
    secrets = ["token-" + "7f3a9c1e", "result" + ".json"]
    reversed_secrets = [secret[::-1] for secret in secrets]
    result = _evaluate(tmp_path, SNOOP.format(secrets=reversed_secrets, log=str(log)), token=secrets[0])
    _assert_fails(result, "gc.get_objects")  # the walk of every object is refused, but the rest is done
    found = {line for line in log.read_text().splitlines()}
    assert found == {"[]"}


REREGISTER = """
import os

import torch

LOG = {log!r}
_LIBRARY = torch.library.Library("aten", "IMPL")


def _mul(a, b):  # right only for b == 2, which is all this candidate and the reference use
    with open(LOG, "a") as log:
        log.write(f"mul {{os.getpid()}}\\n")
    return torch.ops.aten.add.Tensor(a, a)


_LIBRARY.impl("mul.Tensor", _mul, "CPU")


def run(x):
    with open(LOG, "a") as log:
        log.write(f"run {{os.getpid()}}\\n")
    return x * 2
"""


def test_an_operator_the_candidate_re_registers_is_refused_where_it_runs(tmp_path: Path) -> None:
    # Without the gate, aten::mul re-registered at import (logging who calls it): the dispatcher watch refuses the
    # library in the candidate's worker (guard/child/dispatcher_watch.py), so its kernel never runs anywhere, and
    # the reference's results (the judge's, its own worker's) stay the truth.
    log = tmp_path / "calls.txt"
    result = _evaluate(tmp_path, REREGISTER.format(log=str(log)))
    assert result["correct"] is False
    assert "registers kernels on aten's operators" in result["failure"]
    assert not log.exists() or "mul" not in log.read_text()


def test_the_incumbents_module_is_not_in_the_candidates_process(tmp_path: Path) -> None:
    # Without the gate: the first guard let a candidate slow its incumbent through sys.modules (29.6x, a KEEP).
    log = tmp_path / "reach.txt"
    incumbent = "SLOW = False\ndef run(x):\n    return x * 2\n"
    candidate = f"""
    import sys

    def run(x):
        found = sorted(name for name in sys.modules if name.startswith("arcengine_guard_"))
        with open({str(log)!r}, "a") as log:
            log.write(repr(found) + "\\n")
        return x * 2
    """
    result = _evaluate(tmp_path, candidate, incumbent=incumbent)
    assert result["correct"] is True and result["incumbent_failure"] is None, result["failure"]
    seen = set(log.read_text().splitlines())
    assert seen == {"['arcengine_guard_kernel', 'arcengine_guard_reference']"}  # its own, and make_inputs'



# A module that records, at import, the folders its worker was given, in its own HOME, and writes a file into each
# of its kernel caches (its own: allowed).
_RECORDS_ITS_FOLDERS = """
import json, os

FOLDERS = {name: os.environ[name] for name in ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "ARCENGINE_NATIVE_CACHE")}
for name in ("TRITON_CACHE_DIR", "ARCENGINE_NATIVE_CACHE"):
    with open(os.path.join(FOLDERS[name], "mine"), "w") as mine:
        mine.write(__name__)
with open(os.path.join(FOLDERS["HOME"], "folders.json"), "w") as record:
    json.dump({**FOLDERS, "cwd": os.getcwd(), "file": __file__, "name": __name__}, record)

def run(x):
    return x * 2
"""


def _folders_env(tmp_path: Path) -> dict[str, str]:
    """A sandbox's folders (each role's home, a campaign's shared caches), no folder writable beside them."""
    (tmp_path / "roles").mkdir()
    env = {name: value for name, value in os.environ.items() if name != opens.EXTRA_WRITABLE}
    return {**env, worker.ROLE_HOMES: str(tmp_path / "roles"), "TRITON_CACHE_DIR": str(tmp_path / "cache" / "triton"),
            native_build.CACHE_ENV: str(tmp_path / "cache" / "native")}


def _digest(source: str) -> str:
    return hashlib.sha256(textwrap.dedent(source).encode()).hexdigest()[:16]


def test_each_untrusted_worker_has_its_own_home_and_its_own_sources_folder_of_the_shared_caches(
        tmp_path: Path) -> None:
    candidate = _RECORDS_ITS_FOLDERS + "# the candidate\n"
    result = _evaluate(tmp_path, candidate, incumbent=_RECORDS_ITS_FOLDERS, env=_folders_env(tmp_path))
    assert result["correct"] is True and result["incumbent_failure"] is None, result["failure"]
    records = [json.loads(path.read_text()) for path in (tmp_path / "roles").glob("*/folders.json")]
    assert len(records) == 2
    for source in (candidate, _RECORDS_ITS_FOLDERS):
        [seen] = [record for record in records if record["TRITON_CACHE_DIR"].endswith(_digest(source))]
        home = Path(seen["HOME"])
        assert seen["TMPDIR"] == seen["cwd"] == str(home) and home.parent == tmp_path / "roles"
        # The candidate and the incumbent look alike from inside (red team round 9: a module that knew it was the
        # incumbent ran slowly, or skipped its work, as the incumbent only): a home of a random name, one module
        # name, and a read-only copy of its file beside its home.
        assert re.fullmatch(r"[0-9a-f]{16}", home.name) and seen["name"] == worker.KERNEL_MODULE
        assert seen["file"] == f"{home}.py" and os.stat(seen["file"]).st_mode & 0o777 == 0o444
        # A later child running the same code finds the same folders: the incumbent compiles once per campaign.
        assert seen["TRITON_CACHE_DIR"] == str(tmp_path / "cache" / "triton" / _digest(source))
        assert seen["ARCENGINE_NATIVE_CACHE"] == str(tmp_path / "cache" / "native" / _digest(source))


def test_an_incumbent_that_skips_its_work_in_timed_calls_is_dropped_not_beaten(tmp_path: Path) -> None:
    # The incumbent's timed outputs are audited as the candidate's are: an incumbent that returned garbage fast
    # (red team round 9: as the incumbent only) would make every honest candidate after it a REVERT.
    result = _evaluate(tmp_path, "def run(x):\n    return x * 2\n", incumbent="def run(x):\n    return x * 3\n")
    assert result["correct"] is True, result["failure"]
    assert "incumbent failed during timing" in result["incumbent_failure"]
    assert "returned a wrong output" in result["incumbent_failure"]


def test_a_candidate_cannot_write_where_its_incumbent_loads_kernels(tmp_path: Path) -> None:
    # Triton's launcher is a shared object, found by a hash a candidate can compute: planted in the incumbent's
    # folder it would run there, and time the incumbent as slowly as it likes (a KEEP it did not earn).
    incumbent = "def run(x):\n    return x + x\n"
    targets = [f"os.path.dirname(os.environ['TRITON_CACHE_DIR']) + '/{_digest(incumbent)}/k'",  # its cache
               "os.path.dirname(os.environ['TRITON_CACHE_DIR']) + '/k'",  # the shared cache's root
               "os.path.dirname(os.environ['HOME']) + '/k'"]  # the folder of every role's home
    candidate = f"""
    import os

    def _plant(path):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as planted:
                planted.write("launcher")
        except PermissionError:
            return "refused"
        return "planted"

    def run(x):
        with open(os.path.join(os.environ["HOME"], "planted.txt"), "w") as log:
            log.write(" ".join(_plant(path) for path in [{", ".join(targets)}]))
        return x * 2
    """
    result = _evaluate(tmp_path, candidate, incumbent=incumbent, env=_folders_env(tmp_path))
    _assert_fails(result, "outside its own folders")
    [log] = (tmp_path / "roles").glob("*/planted.txt")  # in the candidate's home
    assert log.read_text() == "refused refused refused"
    assert not list((tmp_path / "roles").rglob("k")) and not list((tmp_path / "cache").rglob("k"))


# Red team round 5: the answer computed inside the harness's input maker, before the clock. torch.randn is swapped
# by a finalizer on the previous call's input (after that request's sampled seal check) for a one-use wrapper that
# draws the real input, computes and stores the answer, and puts torch.randn back; run() returns what was stored.
_WORK_IN_THE_INPUT_MAKER = """
import weakref

import torch

_real = torch.randn
_ready = {}


def _wrapper(*args, **kwargs):
    torch.randn = _real
    x = _real(*args, **kwargs)
    _ready[id(x)] = x * 2
    return x


def _arm():
    torch.randn = _wrapper


def run(x):
    answer = _ready.pop(id(x), None)
    weakref.finalize(x, _arm)
    return answer if answer is not None else x * 2
"""


def test_a_function_the_input_maker_calls_is_checked_before_every_calls_inputs(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, _WORK_IN_THE_INPUT_MAKER)
    _assert_fails(result, "torch.randn", "before a call's inputs were made")


# Each route is tried in one call, its refusal caught, so one child shows them all; the first fails the role.
_INTERPRETER_ROUTES = {
    "gc.get_referents": "gc.get_referents(run)", "gc.get_objects": "gc.get_objects()",
    "sys.settrace": "sys.settrace(None)", "sys.setprofile": "sys.setprofile(None)",
    "PyImport_ImportModule": "ctypes.pythonapi.PyImport_ImportModule",
    "builtins.exec": "pickle.loads(b'cbuiltins\\nexec\\n(Vx = 1\\ntR.')",
    "_import_dotted_name": "pickle.loads(b'ctorch._utils\\n_import_dotted_name\\n(Vgc\\ntR.')",
}


def test_reaching_the_interpreters_objects_or_frames_fails_however_spelled(tmp_path: Path) -> None:
    log = tmp_path / "refused.txt"
    tries = "\n".join(f"    refused.append(_refused(lambda: {call}))" for call in _INTERPRETER_ROUTES.values())
    candidate = f"""
import ctypes, gc, pickle, sys

def _refused(route):
    try:
        route()
    except PermissionError as refusal:
        return str(refusal)
    return "allowed"

def run(x):
    refused = []
{tries}
    with open({str(log)!r}, "w") as out:
        out.write("\\n".join(refused))
    return x * 2
"""
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, "gc.get_referents", "a route to the harness's own code")
    for (name, _), refusal in zip(_INTERPRETER_ROUTES.items(), log.read_text().splitlines(), strict=True):
        assert name in refusal, (name, refusal)


def test_an_unpickler_of_plain_data_still_runs(tmp_path: Path) -> None:
    candidate = """
    import pickle

    SCALE = pickle.loads(pickle.dumps({"scale": 2.0}))["scale"]

    def run(x):
        return x * SCALE
    """
    result = _evaluate(tmp_path, candidate)
    assert result["correct"] is True, result["failure"]


# Red team round 6: torch.Tensor's class is frozen, but each tensor has a dictionary of its own, where a method set
# shadows the class's wherever the harness calls it on that tensor: after the clock.
_SHADOWED_DETACH = """
import torch

def run(x):
    out = torch.empty_like(x)

    def detach():
        del out.detach
        torch.mul(x, 2, out=out)
        return out.detach()

    out.detach = detach
    return out
"""


@pytest.mark.parametrize("where", ["output", "input"])
def test_a_method_set_on_one_tensor_fails_before_the_harness_calls_it(tmp_path: Path, where: str) -> None:
    candidate = _SHADOWED_DETACH if where == "output" else """
    import torch

    def run(x):
        x.clone = lambda: x
        return x * 2
    """
    result = _evaluate(tmp_path, candidate)
    _assert_fails(result, where, "set on the tensor itself")


def test_a_candidate_may_turn_its_own_precision_towards_exact(tmp_path: Path) -> None:
    candidate = """
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")

    def run(x):
        return x * 2
    """
    result = _evaluate(tmp_path, candidate)
    assert result["correct"] is True, result["failure"]

GIB = 1 << 30


def _watched(remote: RemoteRole) -> list[int]:
    """The device's bytes in use (4 GiB, as a list the test changes), watched for ``remote`` with a 2.5 GiB limit
    over its timed calls and 60 GiB over all of them."""
    in_use = [4 * GIB]
    remote.memory = DeviceMemoryWatch(lambda: in_use[0], limit=int(2.5 * GIB), hog_limit=60 * GIB)
    return in_use


def _kept_call(remote: RemoteRole, worker_end: socket.socket, in_use: list[int], kept: int,
               trimmed: int | None, held: int = 0, op: Mapping[str, Any] = MappingProxyType({"op": "time"})) -> None:
    """One request (``op``: a timed block) of a fake worker that leaves ``kept`` bytes more in use, ``held`` of them
    (it says) held for the audit; told to trim, it gives ``trimmed`` back (None: the test expects no trim)."""
    remote.begin(op)
    command, _ = channel.receive(worker_end, 5.0)
    in_use[0] += kept
    channel.send(worker_end, {"id": command["id"], "us": 1.0, "failure": None, "outputs": [], "held_bytes": held})
    if trimmed is not None:
        trim = threading.Thread(target=_trim, args=(worker_end, in_use, trimmed))
        trim.start()
    try:
        remote.finish(5.0)
    finally:
        if trimmed is not None:
            trim.join()


def _trim(worker_end: socket.socket, in_use: list[int], given_back: int) -> None:
    command, _ = channel.receive(worker_end, 5.0)
    assert command["op"] == "trim"
    in_use[0] -= given_back
    channel.send(worker_end, {"id": command["id"]})


def test_a_worker_whose_calls_keep_device_memory_is_lost(fake_worker: FakeWorker) -> None:
    # Native code's cudaMalloc that is never freed (scale/native_cuda_malloc_leak), played by the device's count.
    remote, worker_end = fake_worker
    in_use = _watched(remote)

    def call(kept: int, meanwhile: int = 0, trimmed: int | None = None) -> None:
        _kept_call(remote, worker_end, in_use, kept, trimmed)
        in_use[0] += meanwhile  # another process's allocation between the worker's calls is not the worker's

    call(GIB, meanwhile=20 * GIB)
    call(GIB, meanwhile=-20 * GIB)
    call(0)  # what a call allocates and frees before it returns is not kept
    with pytest.raises(WorkerLost, match=r"kept 3\.0 GiB more device memory .*\(limit 2\.5 GiB"):
        call(GIB, trimmed=0)  # past the limit, the worker is told to trim: it gives nothing back


def test_what_the_harness_holds_for_the_audit_is_no_leak(fake_worker: FakeWorker) -> None:
    # KernelBench's 19_ReLU returns 6 GB per call: a timed block's calls held for the audit (inputs and outputs)
    # kept 24.1 GiB on an H100, past the quarter of the device, and the honest seed was lost. Once the audit
    # releases them (a reply that holds nothing), what stays counts again.
    remote, worker_end = fake_worker
    in_use = _watched(remote)
    _kept_call(remote, worker_end, in_use, 24 * GIB, trimmed=None, held=24 * GIB)
    assert not remote.closed
    with pytest.raises(WorkerLost, match=r"kept 24\.0 GiB more device memory"):
        _kept_call(remote, worker_end, in_use, 0, trimmed=0)  # released but never freed: the module's now


def test_only_a_workloads_steady_state_counts_against_the_device_memory_limit(fake_worker: FakeWorker) -> None:
    # KernelBench's 47_Sum_reduction_over_a_dimension has 8 GiB of inputs: during the checks, the other roles'
    # first allocations for a case (the reference's, the baseline's, the judge's) ran beside the candidate's call
    # and counted as its own, 32.1 GiB on an H100, and the honest seed was lost. Checks and warm-up blocks do not
    # count; the timed blocks after them, their audits and trims do.
    remote, worker_end = fake_worker
    in_use = _watched(remote)
    _kept_call(remote, worker_end, in_use, 32 * GIB, trimmed=None, op={"op": "call"})
    _kept_call(remote, worker_end, in_use, 8 * GIB, trimmed=None, op={"op": "time", "warm": True})
    assert remote.memory.kept == 0 and not remote.closed
    with pytest.raises(WorkerLost, match=r"kept 3\.0 GiB more device memory after its timed calls"):
        _kept_call(remote, worker_end, in_use, 3 * GIB, trimmed=0, op={"op": "time", "warm": False})


def test_memory_grabbed_once_in_the_checks_counts_past_three_quarters_of_the_device(fake_worker: FakeWorker) -> None:
    # Kept past that, it would leave the next child on the GPU too little to load (a campaign prepares one while
    # another is timed).
    remote, worker_end = fake_worker
    in_use = _watched(remote)
    _kept_call(remote, worker_end, in_use, 40 * GIB, trimmed=None, op={"op": "call"})
    with pytest.raises(WorkerLost, match=r"kept 61\.0 GiB more device memory after its calls .*three quarters"):
        _kept_call(remote, worker_end, in_use, 21 * GIB, trimmed=0, op={"op": "call"})


def test_blocks_the_allocator_holds_for_reuse_are_no_leak(fake_worker: FakeWorker) -> None:
    # torch.compile's autotuning leaves gigabytes in PyTorch's cache (an honest max-autotune candidate kept 23.5
    # GiB on an H100 at 66e6e84): past the limit the worker hands them back, and only what stays counts.
    remote, worker_end = fake_worker
    in_use = _watched(remote)
    _kept_call(remote, worker_end, in_use, 3 * GIB, trimmed=GIB)  # past the limit: a gigabyte of it comes back
    _kept_call(remote, worker_end, in_use, GIB, trimmed=GIB)  # and again
    assert remote.memory.kept == 2 * GIB and not remote.closed


def test_gpu_work_while_the_worker_waits_for_the_judge_is_found_in_the_records() -> None:
    # A native thread left running that launches only while its worker waits (so its own calls stay fast) and
    # slows the roles timed meanwhile: its kernels fall between a wait's two sets (scale/native_thread_gpu_idle).
    wait = timing.Marks(0x5EE9, 0xA3A4E)
    batch = [
        _activity("main_kernel", 0, 10, 1),  # the worker's last request, done before its wait opened
        _marker(wait.open, 11, 12, 2),
        _marker(wait.close, 900, 901, 4),
        _activity("distribution", 902, 910, 5),  # the next request's own work
    ]
    assert timing.idle_work(batch, [wait]) is None
    contending = [*batch, _activity("spin_while_idle", 300, 700, 3)]
    reason = timing.idle_work(contending, [wait])
    assert reason is not None and "while its worker waited for the judge (spin_while_idle)" in reason
    overlapping = [*batch, _activity("spin_while_idle", 5, 20, 3)]  # launched before the wait, ran into it
    assert timing.idle_work(overlapping, [wait]) is not None
    assert timing.idle_work(contending, []) is None  # no wait recorded (the events timer): nothing to say


def test_a_reply_leaves_the_device_before_the_worker_opens_its_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reply's tensors are copied to the host inside the worker's process: made after the set that opens its
    # wait, that copy was the worker's own GPU work "while it waited", and every honest candidate failed (H200).
    order: list[str] = []

    class Waits(timing.CuptiTimer):
        def __init__(self) -> None:  # no CUPTI: only the worker's calls around its wait are recorded
            pass

        def wait_begins(self) -> None:
            order.append("wait opens")

        def wait_ends(self) -> None:
            order.append("wait closes")

    copy_to_host = torch.Tensor.cpu
    monkeypatch.setattr(torch.Tensor, "cpu", lambda tensor: order.append("copied") or copy_to_host(tensor))
    judge_end, worker_end = socket.socketpair()
    worker = Worker(worker_end, "candidate")
    worker.timer = Waits()
    worker.diagnostics = lambda command: ({}, [torch.arange(4, dtype=torch.uint8)])  # type: ignore[method-assign]
    channel.send(judge_end, {"op": "diagnostics", "id": 1})
    channel.send(judge_end, {"op": "exit"})
    worker.serve()
    assert order == ["wait closes", "copied", "wait opens"]
    header, payload = channel.receive(judge_end, timeout_s=5)
    assert header["id"] == 1 and bytes(payload) == bytes(range(4))


def test_a_result_is_read_by_identity_so_none_of_its_code_runs_in_the_harness() -> None:
    # Red team round 11: a set lookup hashes and compares, and the candidate's own __hash__ or __eq__ ran there,
    # after the clock (a metaclass that called its class tuple; a __dict__ key whose hash computed the answer).
    ran: list[str] = []

    class PosesAsTuple(type):
        def __hash__(cls) -> int:
            ran.append("hash")
            return hash(tuple)

        def __eq__(cls, other: object) -> bool:
            ran.append("eq")
            return other is tuple

    class Later(metaclass=PosesAsTuple):
        def __iter__(self) -> Iterator[int]:
            ran.append("iter")
            return iter(())

    class Key:
        def __hash__(self) -> int:
            ran.append("key hash")
            return 0

    tensor = torch.ones(2)
    tensor.__dict__[Key()] = None  # type: ignore[index]
    ran.clear()  # its hash as it went in
    assert "not exactly torch.Tensor" in (correctness.returned_failure(Later()) or "")
    assert not correctness.is_sequence(Later())
    assert "no plain string" in (correctness.returned_failure(tensor) or "")
    assert ran == []


def test_a_stretch_of_the_harness_fails_where_the_modules_own_code_ran(tmp_path: Path) -> None:
    """Input making runs under a profile hook: a call of any function whose code lies in the module's files (a
    hook torch calls back, a finalizer) fails it, whatever route reached it; torch's and the harness's own
    Python do not, and the hook is gone after the stretch."""
    from arcengine.guard.child import own_code

    source = tmp_path / "candidate.py"
    source.write_text("def hook(seed):\n    return seed * 2\n")
    module = worker.load_module(str(source), "arcengine_test_own_code")
    absent = own_code.Absent((str(source), str(tmp_path / "candidate") + os.sep))
    with absent.during("its inputs"):
        torch.manual_seed(3)
        torch.randn(4)
    ran = r"code ran \(hook, line 1\) while the harness made its inputs"
    with pytest.raises(own_code.OwnCodeRan, match=ran), absent.during("its inputs"):
        torch.manual_seed(3)
        module.hook(3)
    assert sys.getprofile() is None
