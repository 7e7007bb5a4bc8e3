"""Interleaved timing inside the sandbox child: reference, candidate and incumbent in one loop.

Each round calls every function once, in a random order, so drift in clocks or temperature hits all of them
alike; every call gets inputs of its own (the guard makes fresh ones) and the candidate's every output is
checked outside the timed region. On CUDA the L2 cache is flushed before every timed call and the device is
synchronised before the end event, so work left on side streams is counted.
"""

from __future__ import annotations

import ctypes
import gc
import math
import random
import statistics
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter, perf_counter_ns
from typing import NamedTuple, Protocol

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


def should_stop(samples: Sequence[float], elapsed_s: float, config: TimingConfig, wanted_reps: int = 0) -> bool:
    """Enough reps (at least `wanted_reps`) and a small error, or the rep cap, or the time budget; never below
    min_reps."""
    reps = len(samples)
    if reps < config.min_reps:
        return False
    if reps >= config.max_reps or elapsed_s >= config.max_seconds_per_workload:
        return True
    return reps >= wanted_reps and rel_se(samples) < config.target_rel_se


# ---------------------------------------------------------------- timers


class Timed(NamedTuple):
    us: float  # the call's own time (on CUDA: in its stream)
    tail_us: float  # on CUDA: from the host seeing the call's stream end until the whole device was idle
    out: object


class Timer(Protocol):
    def sync(self) -> None: ...

    def diagnostics(self) -> dict[str, float]: ...

    def time(self, fn: Fn, args: Sequence[object]) -> Timed:
        """Call fn(*args) once."""
        ...


class CpuTimer:
    """A monotonic clock around the call."""

    def sync(self) -> None:
        return None

    def diagnostics(self) -> dict[str, float]:
        return {}

    def time(self, fn: Fn, args: Sequence[object]) -> Timed:
        start = perf_counter_ns()
        out = fn(*args)
        end = perf_counter_ns()
        return Timed((end - start) / 1e3, 0.0, out)


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


HEAD_START_US = 100.0  # GPU busy-wait after the flush: the host enqueues the call meanwhile
MAX_HEAD_START_US = 5000.0  # a call whose host side is slower than this pays for it (its GPU really waits)
ENQUEUE_WINDOW = 16  # the head start follows the slowest of the last calls' host sides
SPIN_UP_SECONDS = 0.05  # busy GPU before timing, so clocks have left their idle state


class CudaTimer:
    """CUDA events around the call, after an L2 flush, with a device-wide sync before the end event.

    The call is charged its own stream's time; two harness costs are kept out of it:
    - the host's launch latency: after the flush the GPU busy-waits, so the call is already enqueued when the
      start event fires. The wait follows the host: twice the slowest of the last calls' enqueue times (from
      HEAD_START_US up to MAX_HEAD_START_US), so a slow host never reads as a slow kernel;
    - the host's sync latency: once the host has seen the call's stream finish it records a `seen` event, then
      synchronises the whole device and records the end event. The tail from `seen` to the end holds any work
      the call left on other streams plus the host's sync jitter (the wake-up before `seen` is nobody's, so it
      is left out). The tail is returned apart; `Interleaved.charge_side_streams` charges it only to a function
      whose tails are longer than the others' in the same rounds (same host, same jitter).
    """

    def __init__(self, device: torch.device, flusher: L2Flusher | None = None) -> None:
        self._flusher = flusher if flusher is not None else L2Flusher(device)
        self._start = torch.cuda.Event(enable_timing=True)
        self._stream_end = torch.cuda.Event(enable_timing=True)
        self._seen = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)
        self._reset_persisting_l2 = _persisting_l2_reset()
        self.cycles_per_us = 2000.0  # a guess until measured, on clocks that have ramped up
        self.spin_up(SPIN_UP_SECONDS)
        self.cycles_per_us = self._sleep_rate()
        self.head_start_us = HEAD_START_US
        self.starved_calls = 0  # calls whose host side outlasted the head start (their GPU waited)
        self.max_enqueue_us = 0.0
        self._enqueues: deque[float] = deque(maxlen=ENQUEUE_WINDOW)

    def _sleep_rate(self) -> float:
        """GPU clock cycles per microsecond of `torch.cuda._sleep`, measured (at least 1000: 1 GHz)."""
        cycles = 1_000_000
        torch.cuda._sleep(cycles // 10)  # first launch loads the kernel
        self._start.record()
        torch.cuda._sleep(cycles)
        self._end.record()
        self._end.synchronize()
        elapsed_us = self._start.elapsed_time(self._end) * 1e3
        return max(1000.0, cycles / elapsed_us) if elapsed_us > 0 else 2000.0

    def spin_up(self, seconds: float) -> None:
        """Keep the GPU busy for a while, so its clocks ramp up before anything is timed."""
        torch.cuda._sleep(int(seconds * 1e6 * self.cycles_per_us))
        torch.cuda.synchronize()

    def sync(self) -> None:
        torch.cuda.synchronize()

    def time(self, fn: Fn, args: Sequence[object]) -> Timed:
        if self._reset_persisting_l2 is not None:  # lines a stream's access policy pinned would survive a flush
            self._reset_persisting_l2()
        self._flusher.flush()
        torch.cuda._sleep(int(self.head_start_us * self.cycles_per_us))
        enqueue_started = perf_counter()
        self._start.record()
        out = fn(*args)
        self._stream_end.record()
        enqueue_us = (perf_counter() - enqueue_started) * 1e6
        # Spin until the call's stream is done: the host's wake-up latency then does not depend on how long
        # it waited (the driver's own wait turns from spinning to yielding after a while, which would make a
        # fast-launching call's tail look longer than a slow-launching one's).
        while not self._stream_end.query():
            pass
        self._seen.record()
        torch.cuda.synchronize()  # device-wide: kernels the call put on other streams end before the end event
        self._end.record()
        self._end.synchronize()
        self._adapt(enqueue_us)
        return Timed(self._start.elapsed_time(self._stream_end) * 1e3,
                     self._seen.elapsed_time(self._end) * 1e3, out)

    def _adapt(self, enqueue_us: float) -> None:
        if enqueue_us > self.head_start_us:
            self.starved_calls += 1
        self.max_enqueue_us = max(self.max_enqueue_us, enqueue_us)
        self._enqueues.append(enqueue_us)
        self.head_start_us = min(MAX_HEAD_START_US, max(HEAD_START_US, 2 * max(self._enqueues)))

    def diagnostics(self) -> dict[str, float]:
        """How the harness itself behaved, for the record: a reader can tell a noisy host from a noisy kernel."""
        return {"head_start_us": self.head_start_us, "starved_calls": self.starved_calls,
                "persisting_l2_reset": float(self._reset_persisting_l2 is not None),
                "max_enqueue_us": self.max_enqueue_us, "sleep_cycles_per_us": self.cycles_per_us}


def _persisting_l2_reset() -> Callable[[], object] | None:
    """The driver's cuCtxResetPersistingL2Cache for the current context, if it answers; else None."""
    try:
        reset = ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache
    except (OSError, AttributeError):
        return None
    reset.restype = ctypes.c_int
    return reset if reset() == 0 else None


def make_timer(device: torch.device) -> Timer:
    return CudaTimer(device) if device.type == "cuda" else CpuTimer()


# ---------------------------------------------------------------- interleaved loop


class CallError(Exception):
    """A timed function raised; `role` says which one."""

    def __init__(self, role: str, error: BaseException) -> None:
        super().__init__(f"{role} raised {type(error).__name__}: {error}")
        self.role = role
        self.error = error


SIDE_STREAM_SLACK_US = 3.0  # tails this much longer than the shortest role's are work left on other streams
SIDE_STREAM_ROUNDS = 0.8  # ... if they are longer in this share of the rounds: host jitter is not that steady
SIDE_STREAM_MIN_ROUNDS = 20  # rounds before tails that differ are judged: over fewer, chance could decide


@dataclass
class Interleaved:
    samples: dict[str, list[float]] = field(default_factory=dict)
    tails: dict[str, list[float]] = field(default_factory=dict)
    side_stream_us: dict[str, float] = field(default_factory=dict)  # per role charged: its median excess tail
    audit_failure: str | None = None

    def charge_side_streams(self) -> None:
        """Add to each call of a role the tail beyond the baseline, if that role's tails are longer.

        Every role's tail holds the host's sync jitter; only work left on other streams makes one role's
        tails longer than the others' round after round. The baseline is the role with the shortest median
        tail: the reference, unless another role is shorter still. A role is charged when its median tail
        exceeds the baseline's by the slack and its tail exceeds the baseline role's in the same round by the
        slack in most rounds: a median alone, over the few rounds a steady kernel needs, can land on either
        mode of a two-mode host jitter."""
        medians = self._median_tails()
        if not medians:
            return
        baseline_role = min(medians, key=medians.__getitem__)
        baseline = medians[baseline_role]
        for role, median in medians.items():
            excess = median - baseline
            if excess > SIDE_STREAM_SLACK_US and self._longer_most_rounds(role, baseline_role):
                self.side_stream_us[role] = excess
                self.samples[role] = [us + max(0.0, tail - baseline)
                                      for us, tail in zip(self.samples[role], self.tails[role], strict=True)]

    def _median_tails(self) -> dict[str, float]:
        return {role: statistics.median(t) for role, t in self.tails.items() if t}

    def wanted_rounds(self) -> int:
        """SIDE_STREAM_MIN_ROUNDS while some role's median tail stands out, else none beyond the config's."""
        medians = self._median_tails().values()
        return SIDE_STREAM_MIN_ROUNDS if medians and max(medians) - min(medians) > SIDE_STREAM_SLACK_US else 0

    def _longer_most_rounds(self, role: str, baseline_role: str) -> bool:
        pairs = list(zip(self.tails[role], self.tails[baseline_role], strict=False))
        longer = sum(tail > base + SIDE_STREAM_SLACK_US for tail, base in pairs)
        return longer >= SIDE_STREAM_ROUNDS * len(pairs)

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
    result = Interleaved(samples={role: [] for role in roles}, tails={role: [] for role in roles})
    gc.collect()
    gc.disable()  # a collection inside a timed call would be charged to whoever was running
    try:
        start = perf_counter()
        while not should_stop(result.samples[audit_role], perf_counter() - start, config, result.wanted_rounds()):
            calls = _round(fns, rng.sample(roles, len(roles)), prepare, calls, timer, result)
            if result.audit_failure is not None:
                break
    finally:
        gc.enable()
    result.charge_side_streams()
    return result


def _warm_up(fns: Mapping[str, Fn], prepare: Prepare, timer: Timer, warmup: int, warmup_seconds: float) -> int:
    call = 0
    for role, fn in fns.items():
        started = perf_counter()
        done = 0
        while done < warmup or perf_counter() - started < warmup_seconds:
            _call(role, timer, fn, prepare(role, call)[0])  # through the timer: its head start adapts too
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
        elapsed_us, tail_us, out = _call(role, timer, fns[role], inputs)
        result.samples[role].append(elapsed_us)
        result.tails[role].append(tail_us)
        if check is not None:
            failure = check(out)
            if failure is not None:
                result.audit_failure = f"output differs on a timed call (call {len(result.samples[role])}): {failure}"
        del out, inputs  # free them now so they do not sit in memory across the next call
        if result.audit_failure is not None:
            break
    return call


def _call(role: str, timer: Timer, fn: Fn, args: Sequence[object]) -> Timed:
    try:
        return timer.time(fn, args)
    except Exception as exc:
        raise CallError(role, exc) from exc
