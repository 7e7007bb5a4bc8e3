"""Interleaved timing inside the sandbox child: reference, candidate and incumbent in one loop.

Each round calls every function once, in a random order, so drift in clocks or temperature hits all of them
alike; every call gets inputs of its own (the guard makes fresh ones) and the candidate's every output is
checked outside the timed region. On CUDA the L2 cache is flushed before every timed call and the device is
synchronised before the end event, so work left on side streams is counted.
"""

from __future__ import annotations

import gc
import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter, perf_counter_ns
from typing import Protocol

import torch

DEFAULT_FLUSH_BYTES = 256 * 2**20  # used when the device does not report its L2 size
_SE_FACTOR = 1.2533  # standard error of a median is about sqrt(pi/2) times that of a mean

Fn = Callable[..., object]


@dataclass(frozen=True)
class TimingConfig:
    warmup: int = 2
    min_reps: int = 5
    max_reps: int = 50
    target_rel_se: float = 0.005
    max_seconds_per_workload: float = 1.0
    warmup_seconds: float = 0.0  # warm up by time too, so clocks have ramped before the first timed call

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> TimingConfig:
        defaults = cls()
        config = cls(
            warmup=int(raw.get("warmup", defaults.warmup)),  # type: ignore[arg-type]
            min_reps=int(raw.get("min_reps", defaults.min_reps)),  # type: ignore[arg-type]
            max_reps=int(raw.get("max_reps", defaults.max_reps)),  # type: ignore[arg-type]
            target_rel_se=float(raw.get("target_rel_se", defaults.target_rel_se)),  # type: ignore[arg-type]
            max_seconds_per_workload=float(
                raw.get("max_seconds_per_workload", defaults.max_seconds_per_workload)  # type: ignore[arg-type]
            ),
            warmup_seconds=float(raw.get("warmup_seconds", defaults.warmup_seconds)),  # type: ignore[arg-type]
        )
        if config.warmup < 0 or config.min_reps < 2 or config.max_reps < config.min_reps:
            raise ValueError(f"bad timing settings {dict(raw)}")
        return config


def rel_se(samples: Sequence[float]) -> float:
    """Relative standard error of the median: 1.2533 * stdev / sqrt(n) / median (inf if undefined)."""
    if len(samples) < 2:
        return math.inf
    median = statistics.median(samples)
    if median <= 0:
        return math.inf
    return _SE_FACTOR * statistics.stdev(samples) / math.sqrt(len(samples)) / median


def should_stop(samples: Sequence[float], elapsed_s: float, config: TimingConfig) -> bool:
    """Enough reps and a small error, or the rep cap, or the time budget; never below min_reps."""
    reps = len(samples)
    if reps < config.min_reps:
        return False
    if reps >= config.max_reps or elapsed_s >= config.max_seconds_per_workload:
        return True
    return rel_se(samples) < config.target_rel_se


# ---------------------------------------------------------------- timers


class Timer(Protocol):
    def sync(self) -> None: ...

    def time(self, fn: Fn, args: Sequence[object]) -> tuple[float, object]:
        """Call fn(*args) once; return (microseconds, output)."""
        ...


class CpuTimer:
    """A monotonic clock around the call."""

    def sync(self) -> None:
        return None

    def time(self, fn: Fn, args: Sequence[object]) -> tuple[float, object]:
        start = perf_counter_ns()
        out = fn(*args)
        end = perf_counter_ns()
        return (end - start) / 1e3, out


def l2_bytes(device: torch.device) -> int | None:
    try:
        size = int(torch.cuda.get_device_properties(device).L2_cache_size)
    except Exception:
        return None
    return size if size > 0 else None


class L2Flusher:
    """Writes a buffer of at least twice the L2 size, so each timed call starts with a cold cache."""

    def __init__(self, device: torch.device, nbytes: int | None = None) -> None:
        l2 = l2_bytes(device)
        size = nbytes if nbytes is not None else (2 * l2 if l2 else DEFAULT_FLUSH_BYTES)
        self.nbytes = size
        self._buffer = torch.empty(size // 4 + 1, dtype=torch.int32, device=device)

    def flush(self) -> None:
        self._buffer.zero_()


HEAD_START_CYCLES = 100_000  # GPU busy-wait after the flush (~50 us at 2 GHz): the host enqueues the call meanwhile
CALIBRATION_CALLS = 64
GAP_SLACK_US = 2.0  # jitter of the harness's own sync latency, never charged to a call


class CudaTimer:
    """CUDA events around the call, after an L2 flush, with a device-wide sync before the end event.

    Two harness costs are kept out of the time, and nothing of the call's own work is:
    - the host's launch latency: after the flush the GPU busy-waits briefly, so the call is already
      enqueued when the start event fires;
    - the host's sync latency: the end event is recorded after ``torch.cuda.synchronize()`` (so work the
      call left on other streams counts), which adds the time for the host to see the sync and record the
      event. That gap is measured on empty calls when the timer is built; a call is charged its in-stream
      time plus whatever device-wide work outlived it beyond that gap.
    """

    def __init__(self, device: torch.device, flusher: L2Flusher | None = None) -> None:
        self._flusher = flusher if flusher is not None else L2Flusher(device)
        self._start = torch.cuda.Event(enable_timing=True)
        self._stream_end = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)
        self.sync_gap_us = 0.0
        gaps = [self._measure(_nothing, ())[1] for _ in range(CALIBRATION_CALLS)]
        self.sync_gap_us = statistics.median(gaps)

    def sync(self) -> None:
        torch.cuda.synchronize()

    def _measure(self, fn: Fn, args: Sequence[object]) -> tuple[float, float, object]:
        """(in-stream microseconds, device-wide minus in-stream microseconds, output)."""
        self._flusher.flush()
        torch.cuda._sleep(HEAD_START_CYCLES)
        self._start.record()
        out = fn(*args)
        self._stream_end.record()
        torch.cuda.synchronize()  # device-wide: kernels the call put on other streams count
        self._end.record()
        self._end.synchronize()
        in_stream = self._start.elapsed_time(self._stream_end) * 1e3
        return in_stream, self._stream_end.elapsed_time(self._end) * 1e3, out

    def time(self, fn: Fn, args: Sequence[object]) -> tuple[float, object]:
        in_stream, tail, out = self._measure(fn, args)
        return in_stream + max(0.0, tail - self.sync_gap_us - GAP_SLACK_US), out


def _nothing() -> None:
    return None


def make_timer(device: torch.device) -> Timer:
    return CudaTimer(device) if device.type == "cuda" else CpuTimer()


# ---------------------------------------------------------------- interleaved loop


class CallError(Exception):
    """A timed function raised; `role` says which one."""

    def __init__(self, role: str, error: BaseException) -> None:
        super().__init__(f"{role} raised {type(error).__name__}: {error}")
        self.role = role
        self.error = error


@dataclass
class Interleaved:
    samples: dict[str, list[float]] = field(default_factory=dict)
    audit_failure: str | None = None

    @property
    def rounds(self) -> int:
        return min((len(s) for s in self.samples.values()), default=0)

    def median_us(self, role: str) -> float | None:
        samples = self.samples.get(role)
        return statistics.median(samples) if samples else None

    def rel_se(self, role: str) -> float:
        return rel_se(self.samples.get(role, []))

    def paired_ratios(self, numerator: str, denominator: str) -> list[float]:
        """Per-round time ratio numerator/denominator, e.g. incumbent/candidate (> 1: candidate faster)."""
        num, den = self.samples.get(numerator, []), self.samples.get(denominator, [])
        return [n / d for n, d in zip(num, den, strict=False) if d > 0]


Check = Callable[[object], "str | None"]  # a call's output -> failure reason or None
# (role, call number) -> the inputs for that call, and how to check its output (None: not checked).
Prepare = Callable[[str, int], tuple[Sequence[object], Check | None]]


def cycling(pool: Sequence[Sequence[object]]) -> Prepare:
    """Inputs from a fixed pool, unchecked: for benchmarks outside the guard."""
    return lambda role, call: (pool[call % len(pool)], None)


def time_interleaved(
    fns: Mapping[str, Fn],
    prepare: Prepare,
    timer: Timer,
    config: TimingConfig,
    rng: random.Random,
    audit_role: str = "candidate",
) -> Interleaved:
    """Warm up, then run rounds until `should_stop` says the `audit_role` median is good enough.

    Every call gets its inputs from `prepare` (the guard makes fresh ones, so no call sees the addresses or
    values of an earlier one), and every output that comes with a check is checked outside the timed region:
    a kernel that caches, replays or degrades after a few calls fails on the first call it gets wrong.
    Raises CallError if a function raises.
    """
    roles = list(fns)
    calls = _warm_up(fns, prepare, timer, config.warmup, config.warmup_seconds)
    result = Interleaved(samples={role: [] for role in roles})
    gc.collect()
    gc.disable()  # a collection inside a timed call would be charged to whoever was running
    try:
        start = perf_counter()
        while not should_stop(result.samples[audit_role], perf_counter() - start, config):
            calls = _round(fns, rng.sample(roles, len(roles)), prepare, calls, timer, result)
            if result.audit_failure is not None:
                break
    finally:
        gc.enable()
    return result


def _warm_up(fns: Mapping[str, Fn], prepare: Prepare, timer: Timer, warmup: int, warmup_seconds: float) -> int:
    call = 0
    for role, fn in fns.items():
        started = perf_counter()
        done = 0
        while done < warmup or perf_counter() - started < warmup_seconds:
            _call(role, fn, prepare(role, call)[0])
            call += 1
            done += 1
        timer.sync()
    return call


def _round(
    fns: Mapping[str, Fn],
    order: Sequence[str],
    prepare: Prepare,
    call: int,
    timer: Timer,
    result: Interleaved,
) -> int:
    """One interleaved round; returns the next call number."""
    for role in order:
        inputs, check = prepare(role, call)
        call += 1
        try:
            elapsed_us, out = timer.time(fns[role], inputs)
        except Exception as exc:
            raise CallError(role, exc) from exc
        result.samples[role].append(elapsed_us)
        if check is not None:
            failure = check(out)
            if failure is not None:
                result.audit_failure = f"output differs on a timed call (call {len(result.samples[role])}): {failure}"
        del out, inputs  # free them now so they do not sit in memory across the next call
        if result.audit_failure is not None:
            break
    return call


def _call(role: str, fn: Fn, args: Sequence[object]) -> None:
    try:
        fn(*args)
    except Exception as exc:
        raise CallError(role, exc) from exc
