"""Timing in the guard: the timers that measure one call, and the interleaved rounds over the roles.

Each round measures every role once, in a random order, so drift in clocks or temperature hits all of them
alike; every call gets inputs of its own and every checked output is checked outside the timed region. The
roles may live in different processes (the judge times the reference, each worker its own module): the loop
only asks ``measure(role, call)`` for a time.

On CUDA the time of a call is all the GPU work it caused, on every stream and context of its process, read
from CUPTI's activity records (see ``CuptiTimer``); without CUPTI, from CUDA events around a device-wide
synchronise (host latency included, for every role alike).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import math
import random
import statistics
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from time import perf_counter, perf_counter_ns
from typing import NamedTuple, Protocol

import torch

DEFAULT_FLUSH_BYTES = 256 * 2**20  # used when the device does not report its L2 size
_SE_FACTOR = 1.2533  # standard error of a median is about sqrt(pi/2) times that of a mean
_MAD_TO_SIGMA = 1.4826  # a normal sample's standard deviation from its median absolute deviation

Fn = Callable[..., object]
After = Callable[[int, object], object] | None  # what a block keeps of call i's output (see Timer.time_block)


@dataclass(frozen=True)
class TimingConfig:
    warmup: int = 2
    min_reps: int = 5
    max_reps: int = 50
    target_rel_se: float = 0.005
    max_seconds_per_workload: float = 1.0
    warmup_seconds: float = 0.0  # warm up by time too, so clocks have ramped before the first timed call
    block: int = 1  # calls a role makes per visit (its timer reads its clock once for them)

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> TimingConfig:
        defaults = cls()
        unknown = set(raw) - set(asdict(defaults))
        if unknown:  # a setting the engine thinks it made and this child would ignore
            raise ValueError(f"unknown timing settings {sorted(unknown)}")
        config = cls(
            warmup=int(raw.get("warmup", defaults.warmup)),  # type: ignore[arg-type]
            min_reps=int(raw.get("min_reps", defaults.min_reps)),  # type: ignore[arg-type]
            max_reps=int(raw.get("max_reps", defaults.max_reps)),  # type: ignore[arg-type]
            target_rel_se=float(raw.get("target_rel_se", defaults.target_rel_se)),  # type: ignore[arg-type]
            max_seconds_per_workload=float(
                raw.get("max_seconds_per_workload", defaults.max_seconds_per_workload)  # type: ignore[arg-type]
            ),
            warmup_seconds=float(raw.get("warmup_seconds", defaults.warmup_seconds)),  # type: ignore[arg-type]
            block=int(raw.get("block", defaults.block)),  # type: ignore[arg-type]
        )
        if config.warmup < 0 or config.min_reps < 2 or config.max_reps < config.min_reps or config.block < 1:
            raise ValueError(f"bad timing settings {dict(raw)}")
        return config


def rel_se(samples: Sequence[float]) -> float:
    """Relative standard error of the median: 1.2533 * sigma / sqrt(n) / median (inf if undefined), sigma
    estimated from the median absolute deviation. The standard deviation would let one outlier (a call whose
    host outlasted its head start, a busy neighbour) hold a workload's timing at its time cap, though the
    median it bounds hardly moved."""
    if len(samples) < 2:
        return math.inf
    median = statistics.median(samples)
    if median <= 0:
        return math.inf
    sigma = _MAD_TO_SIGMA * statistics.median(abs(sample - median) for sample in samples)
    return _SE_FACTOR * sigma / math.sqrt(len(samples)) / median


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
    us: float  # the call's time: on CUDA all the GPU work it caused
    out: object  # what the call returned
    stray: str | None = None  # GPU work that ran outside any call (a verdict, never a time)


class Timer(Protocol):
    kind: str

    def sync(self) -> None: ...

    def diagnostics(self) -> dict[str, float]: ...

    def time(self, fn: Fn, args: Sequence[object]) -> Timed:
        """Call fn(*args) once."""
        ...

    def time_block(self, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
        """Call fn on each of ``calls`` in turn, each timed on its own (a timer may read its clock once for all).
        ``after(i, out)``, run right after call i and outside its time, gives what the Timed keeps of its output
        (a copy, before the next call can reuse the buffer it returned). Its GPU work is one launch per tensor in
        what it returns (the copy's) at most: the CUPTI timer takes any more as the call's, launched too late."""
        ...

    def warm_block(self, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
        """The calls made as in ``time_block`` but untimed (their times are 0): loading kernels, growing the
        allocator and compiling at first calls happen here, and what they cost the host is forgotten."""
        ...


def each_timed(timer: Timer, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
    """``time_block`` for timers whose clock costs nothing to read: one call after another. What each call returned
    stays referenced until the block is over: released as the next call's result replaced it, it would run a
    finalizer the candidate put on it after that call's clock stopped and before its result was copied (one that
    filled the next result, red team round 7)."""
    timed, returned = [], []
    for i, args in enumerate(calls):
        call = timer.time(fn, args)
        returned.append(call.out)
        timed.append(call._replace(out=after(i, call.out)) if after is not None else call)
    return timed


class CpuTimer:
    """A monotonic clock around the call."""

    kind = "cpu"

    def sync(self) -> None:
        return None

    def diagnostics(self) -> dict[str, float]:
        return {}

    def time(self, fn: Fn, args: Sequence[object]) -> Timed:
        start = perf_counter_ns()
        out = fn(*args)
        end = perf_counter_ns()
        return Timed((end - start) / 1e3, out)

    def time_block(self, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
        return each_timed(self, fn, calls, after)

    def warm_block(self, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
        return [Timed(0.0, call.out) for call in each_timed(self, fn, calls, after)]


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
        self.buffer = torch.empty(size // 4 + 1, dtype=torch.int32, device=device)

    def flush(self) -> None:
        self.buffer.zero_()


HEAD_START_US = 100.0  # GPU busy-wait after the flush: the host enqueues the call meanwhile
MAX_HEAD_START_US = 5000.0  # a call whose host side is slower than this pays for it (its GPU really waits)
ENQUEUE_WINDOW = 16  # the head start follows the typical host side of the last calls
SPIN_UP_SECONDS = 0.05  # busy GPU before timing, so clocks have left their idle state


class _CudaTimerBase:
    """What both CUDA timers share: the L2 flush and the busy-wait that keeps launch latency out.

    After the flush the GPU busy-waits, so the call is already enqueued when its work starts. The wait follows
    the host: twice the median of the last calls' enqueue times (from HEAD_START_US up to MAX_HEAD_START_US), so
    a steadily slow host never reads as a slow kernel. Not the slowest: one stray enqueue in sixteen (a page
    fault, a busy core) would make every call of the next sixteen wait for it; a call whose host side outlasts
    the head start pays for the excess (its GPU waits), which moves a median of many calls little."""

    kind = "cuda"

    def __init__(self, device: torch.device, flusher: L2Flusher | None = None) -> None:
        self.device = device
        self._flusher = flusher if flusher is not None else L2Flusher(device)
        self._reset_persisting_l2 = _persisting_l2_reset()
        self.cycles_per_us = 2000.0  # a guess until measured, on clocks that have ramped up
        self.spin_up(SPIN_UP_SECONDS)
        self.cycles_per_us = self._sleep_rate()
        self.head_start_us = HEAD_START_US
        self.starved_calls = 0  # calls whose host side outlasted the head start (their GPU waited)
        self.max_enqueue_us = 0.0
        self._enqueues: deque[float] = deque(maxlen=ENQUEUE_WINDOW)
        self._host_us: list[float] = []  # every timed call's host side since the last diagnostics

    def _sleep_rate(self) -> float:
        """GPU clock cycles per microsecond of `torch.cuda._sleep`, measured (at least 1000: 1 GHz)."""
        cycles = 1_000_000
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles // 10)  # first launch loads the kernel
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        elapsed_us = start.elapsed_time(end) * 1e3
        return max(1000.0, cycles / elapsed_us) if elapsed_us > 0 else 2000.0

    def spin_up(self, seconds: float) -> None:
        """Keep the GPU busy for a while, so its clocks ramp up before anything is timed."""
        torch.cuda._sleep(int(seconds * 1e6 * self.cycles_per_us))
        self.sync()

    def sync(self) -> None:
        # Named, the device costs nothing to find; unnamed, torch asks the driver how many devices there are
        # (0.2 ms on an H200 host), once per synchronise and per stream lookup.
        torch.cuda.synchronize(self.device)

    def warm_block(self, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
        """Untimed calls: no flush, no head start, no markers. The head start then follows these calls' host
        sides but the first (a first call loads kernels and grows the allocator: tens of milliseconds that
        would make every timed call of the next blocks wait for nothing)."""
        outs, enqueues = [], []
        for i, args in enumerate(calls):
            started = perf_counter()
            out = fn(*args)
            enqueues.append((perf_counter() - started) * 1e6)
            self.sync()
            outs.append(Timed(0.0, after(i, out) if after is not None else out))
        self._enqueues.clear()
        self._enqueues.extend(enqueues[1:])
        self._follow_host()
        return outs

    def _prepare(self) -> None:
        """Cold caches, then the busy-wait the call's launches queue behind."""
        if self._reset_persisting_l2 is not None:  # lines a stream's access policy pinned would survive a flush
            self._reset_persisting_l2()
        self._flusher.flush()
        self._head_start()

    def _head_start(self) -> None:
        torch.cuda._sleep(int(self.head_start_us * self.cycles_per_us))

    def _adapt(self, enqueue_us: float) -> None:
        if enqueue_us > self.head_start_us:
            self.starved_calls += 1
        self.max_enqueue_us = max(self.max_enqueue_us, enqueue_us)
        self._enqueues.append(enqueue_us)
        self._host_us.append(enqueue_us)
        self._follow_host()

    def _follow_host(self) -> None:
        typical = statistics.median(self._enqueues) if self._enqueues else 0.0
        self.head_start_us = min(MAX_HEAD_START_US, max(HEAD_START_US, 2 * typical))

    def diagnostics(self) -> dict[str, float]:
        """How the harness itself behaved, for the record: a reader can tell a noisy host from a noisy kernel.
        ``host_median_us``: the median host side of the calls timed since last asked, which the head start keeps
        out of their times (the GPU's, as under a CUDA graph); where it outlasts them, an eager loop of the calls
        runs at the host's pace, and the report says so."""
        host, self._host_us = self._host_us, []
        return {"head_start_us": self.head_start_us, "starved_calls": self.starved_calls,
                "host_median_us": statistics.median(host) if host else 0.0,
                "persisting_l2_reset": float(self._reset_persisting_l2 is not None),
                "max_enqueue_us": self.max_enqueue_us, "sleep_cycles_per_us": self.cycles_per_us}


class EventTimer(_CudaTimerBase):
    """Without CUPTI: CUDA events from the end of the busy-wait to after a device-wide synchronise.

    Work on every stream of the context ends before the end event, so it counts; the host's wake-up from the
    synchronise counts too, for every role alike (a few microseconds of noise that CUPTI avoids)."""

    kind = "events"

    def __init__(self, device: torch.device, flusher: L2Flusher | None = None) -> None:
        super().__init__(device, flusher)
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def time(self, fn: Fn, args: Sequence[object]) -> Timed:
        self._prepare()
        enqueue_started = perf_counter()
        self._start.record()
        out = fn(*args)
        self._adapt((perf_counter() - enqueue_started) * 1e6)
        self.sync()
        self._end.record()
        self._end.synchronize()
        return Timed(self._start.elapsed_time(self._end) * 1e3, out)

    def time_block(self, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
        return each_timed(self, fn, calls, after)


def tensor_count(out: object) -> int:
    """The non-empty tensors in a call's output (a tuple's or list's too): how many copies keeping it launches."""
    if isinstance(out, tuple | list):
        return sum(tensor_count(item) for item in out)
    return int(type(out) is torch.Tensor and out.numel() > 0)  # what the worker copies (worker._copied)


class Activity(NamedTuple):
    """One CUPTI activity record: a kernel (by name), a copy or a set, with its GPU start and end in ns."""

    name: str
    start: int
    end: int
    correlation: int  # CUPTI's launch order: every API call that enqueues work takes the next number
    value: int = -1  # a set's 32-bit value (how the harness's own markers are told apart); -1 for the others


NEW_CONTEXT = "a CUDA context"  # the record of a context created after the log started
MEMSET = "memset"


class Marks(NamedTuple):
    """The values of the sets around one timed call: the L2 flush that opens it (the head start's busy-wait
    follows it), a small set after the call's synchronise that closes it, one before the harness makes the
    call's inputs (``made``) and one launched on a stream of its own the moment the call returns to the host
    (``returned``); -1 where there is none. Drawn at random for each call, so no launch of the call can pass for
    them."""

    open: int
    close: int
    made: int = -1
    returned: int = -1


class Span(NamedTuple):
    us: float  # the call's time
    stray: str | None  # why the records say work ran outside any call, or the harness lost its markers
    closed_at: int  # the closing marker's launch number: work launched before it belongs to a call


def block_spans(batch: Sequence[Activity], marks: Sequence[Marks], closed_before: int,
                copies: Sequence[int] | None = None) -> list[Span]:
    """The time of each call of a block from the records taken after it, and the reason if work ran outside a call.

    The batch holds, in launch order, per call: the harness's own work (the inputs, the checks), the opening
    set (the L2 flush), the head start's busy-wait, the call's launches, and the closing set. A call is
    everything launched between its head start and its closing set, on any stream: its time runs from the end
    of the head start (or the earliest start, if earlier) to the latest end, so work on a stream that never
    waited, which may start during the head start, counts from its own start, and a host that launches after
    the head start is over is waited for. A record launched before the previous block's last closing set
    (``closed_before``) that shows up only now ran outside its call: it outlived the synchronise that ended it
    (another context), and is stray.

    After a call's closing set the harness launches only its copy of the call's outputs: ``copies[i]`` launches
    at most. More, before the set that begins the next call's inputs (or the block's end), is work the module
    launched once its time had stopped (a thread, a finalizer, a signal handler, a host callback): stray, charged
    to that call.
    """
    ordered = sorted(batch, key=lambda record: record.correlation)
    if any(record.name == NEW_CONTEXT for record in ordered):
        return [Span(0.0, "created a CUDA context of its own (its work would escape the synchronise)",
                     closed_before)] * len(marks)
    at: dict[int, list[int]] = {}
    for i, record in enumerate(ordered):
        if record.name == MEMSET:
            at.setdefault(record.value, []).append(i)
    late = sorted({record.name for record in ordered if 0 <= record.correlation < closed_before})
    stray = f"GPU work ran outside its call ({', '.join(late)[:200]})" if late else None
    spans: list[Span] = []
    allowed = list(copies) if copies is not None else [len(ordered)] * len(marks)
    for i, mark in enumerate(marks):
        opened, closed = at.get(mark.open, []), at.get(mark.close, [])
        returned = at.get(mark.returned, []) if mark.returned != -1 else [-1]
        if (len(opened) != 1 or len(closed) != 1 or closed[0] <= opened[0] + 1 or len(returned) != 1
                or (returned[0] != -1 and not opened[0] + 1 < returned[0] < closed[0])):
            return [*spans, *[Span(0.0, "the harness lost its own marker sets (GPU activity records incomplete)",
                                   closed_before)] * (len(marks) - len(spans))]
        head, close = ordered[opened[0] + 1], ordered[closed[0]]
        calls = [r for n, r in enumerate(ordered[opened[0] + 2:closed[0]], opened[0] + 2) if n != returned[0]]
        # The host's return on the GPU's clock: its set ran on an idle stream of its own, so it starts when the call
        # returned (or when the head start was still running, for a host faster than it: then it is no later than
        # the call's work). The call ends no earlier: work the host did after the GPU's last record is the call's
        # (a result computed on the CPU into memory mapped for the device, with nothing launched after it).
        host_returned = [ordered[returned[0]].start] if returned[0] != -1 else []
        following = [len(ordered)]
        if i + 1 < len(marks):
            following = at.get(marks[i + 1].made) or at.get(marks[i + 1].open) or following
        after = ordered[closed[0] + 1:following[0]]
        if len(after) > allowed[i]:
            names = sorted({record.name for record in after})
            stray = stray or f"GPU work ran after its call had ended ({', '.join(names)[:200]})"
        if not calls and not host_returned:
            spans.append(Span(0.0, stray, close.correlation))
        else:
            # The GPU is the call's from the end of the head start: if its launches come later (a host slower
            # than the head start, computing on the CPU, say), the GPU waits on it, and that wait is the call's.
            start = min([head.end, *(r.start for r in calls)])
            end = max([*(r.end for r in calls), *host_returned])
            spans.append(Span(max(0, end - start) / 1e3, stray, close.correlation))
        stray = None  # late work is charged once, to the block's first call
    return spans


def idle_work(batch: Sequence[Activity], windows: Sequence[Marks]) -> str | None:
    """Why the records show GPU work that ran while the worker waited for the judge, or None.

    Each window is two sets: ``open`` after a reply, once the worker's device was idle (a device-wide
    synchronise), ``close`` on the next request's arrival. Work that ran between them came from something the
    role left running (a native thread, a stream it never waited for), and ran while other roles were timed,
    slowing them: a verdict, whatever its own calls' times.
    """
    sets = {record.value: record for record in batch if record.name == MEMSET}
    ours = {value for window in windows for value in (window.open, window.close)}
    ran: set[str] = set()
    for window in windows:
        slept, woke = sets.get(window.open), sets.get(window.close)
        if slept is None or woke is None:
            continue
        ran |= {record.name for record in batch if record.value not in ours and record.name != NEW_CONTEXT
                and record.end > slept.end and record.start < woke.start}
    if not ran:
        return None
    return (f"GPU work ran while its worker waited for the judge ({', '.join(sorted(ran))[:200]}): something it "
            f"left running works while other roles are timed")


ACTIVITY_BUFFER_BYTES = 1 << 20


class ActivityLog:
    """CUPTI's record of every kernel, copy and set this process runs, on every stream and context."""

    def __init__(self) -> None:
        self._cupti = importlib.import_module("cupti.cupti")  # the package's __init__ imports nothing
        kinds = self._cupti.ActivityKind
        self._kernel = int(kinds.CONCURRENT_KERNEL)
        self._labels = {int(kinds.MEMCPY): "memcpy", int(kinds.MEMSET): MEMSET, int(kinds.CONTEXT): NEW_CONTEXT}
        self._records: list[Activity] = []
        for kind in (kinds.CONCURRENT_KERNEL, kinds.MEMCPY, kinds.MEMSET):
            self._cupti.activity_enable(kind)
        # A context of the module's own would run work that the device-wide synchronise of the process's
        # primary context does not wait for; its creation is recorded, and refused (see block_spans).
        with contextlib.suppress(Exception):
            self._cupti.activity_enable(kinds.CONTEXT)
        self._cupti.activity_register_callbacks(self._requested, self._completed)

    @staticmethod
    def _requested() -> tuple[int, int]:
        return ACTIVITY_BUFFER_BYTES, 0

    def _completed(self, activities: Sequence[object]) -> None:
        for record in activities:
            kind = int(record.kind)  # type: ignore[attr-defined]
            name = str(record.name) if kind == self._kernel else self._labels.get(kind, "other")  # type: ignore[attr-defined]
            # A context record has no times and no launch number: it sorts first, as launched before anything.
            self._records.append(Activity(name, int(getattr(record, "start", 0)), int(getattr(record, "end", 0)),
                                          int(getattr(record, "correlation_id", -1)),
                                          int(record.value) if name == MEMSET else -1))  # type: ignore[attr-defined]

    def take(self) -> list[Activity]:
        """Every record of work that has completed (after a synchronise: all of it in this context)."""
        self._cupti.activity_flush_all(1)
        taken, self._records = self._records, []
        return taken

    def close(self) -> None:
        """Stop recording (a timer that could not use the records falls back to events)."""
        kinds = self._cupti.ActivityKind
        for kind in (kinds.CONCURRENT_KERNEL, kinds.MEMCPY, kinds.MEMSET, kinds.CONTEXT):
            with contextlib.suppress(Exception):
                self._cupti.activity_disable(kind)


class CuptiTimer(_CudaTimerBase):
    """The call's time from CUPTI's activity records: from the end of the head start (or its earliest start) to
    the latest end of every kernel, copy and set it launched, on any stream, or to its return to the host if that
    came later (see ``block_spans``). No event, tail or statistical rule: a call cannot hide work from it, and
    neither the host's launch latency (under the head start) nor its wake-up from the synchronise is in it. The
    records are read once per block of calls: a read costs about a millisecond, a call far less."""

    kind = "cupti"

    def __init__(self, device: torch.device, flusher: L2Flusher | None = None, log: ActivityLog | None = None) -> None:
        self._log = log if log is not None else ActivityLog()
        super().__init__(device, flusher)
        self._memset = DriverMemset()
        self._closer = torch.zeros(64, dtype=torch.int32, device=device)
        self._idler = torch.zeros(64, dtype=torch.int32, device=device)
        self._returner = torch.zeros(64, dtype=torch.int32, device=device)
        # Non-blocking (torch's pool) and high priority: the set that marks a call's return waits for nothing.
        self._returns = torch.cuda.Stream(device, priority=-1)
        self._marks = random.SystemRandom()
        self._waits: list[Marks] = []  # the worker's waits for the judge since the records were last read
        self._waiting: int | None = None  # the open wait's first set
        self.flush_us = 0.0  # the slowest read of the records, for the record
        self.reads: list[float] = []  # every read's time, since the last diagnostics
        self.sync()
        self._log.take()
        self._closed_at = 0
        # The harness's own markers must come back from the records, or the timer cannot be trusted here.
        probe = self.time_block(lambda: None, [()])[0]
        if probe.stray is not None:
            raise RuntimeError(f"CUPTI's records do not show the harness's markers: {probe.stray}")
        self._host_us.clear()  # the probe is no call's

    def time(self, fn: Fn, args: Sequence[object]) -> Timed:
        return self.time_block(fn, [args])[0]

    def wait_begins(self) -> None:
        """Before a reply: the device idle, then the set that opens the worker's wait (see ``idle_work``), done
        before the reply leaves, so it never runs while another role is timed."""
        self.sync()
        self._waiting = self._marks.getrandbits(32)
        self._memset(self._idler, self._waiting, torch.cuda.current_stream(self.device).cuda_stream)
        self.sync()

    def wait_ends(self) -> None:
        """On a request's arrival: the set that closes the wait, before any work of the request."""
        if self._waiting is None:
            return
        woke = self._marks.getrandbits(32)
        self._memset(self._idler, woke, torch.cuda.current_stream(self.device).cuda_stream)
        self._waits.append(Marks(self._waiting, woke))
        self._waiting = None

    def time_block(self, fn: Fn, calls: Sequence[Sequence[object]], after: After = None) -> list[Timed]:
        marks, outs, copies = self._draw(len(calls)), [], []
        stream = torch.cuda.current_stream(self.device).cuda_stream
        for i, mark in enumerate(marks):
            self._memset(self._closer, mark.made, stream)  # from here to the opening set: the call's inputs
            args = calls[i]  # made only now, where the caller makes them lazily (worker.CallInputs)
            if self._reset_persisting_l2 is not None:
                self._reset_persisting_l2()
            self._memset(self._flusher.buffer, mark.open, stream)  # the L2 flush, and the call's opening marker
            self._head_start()
            enqueue_started = perf_counter()
            out = fn(*args)
            enqueue_us = (perf_counter() - enqueue_started) * 1e6
            self._memset(self._returner, mark.returned, self._returns.cuda_stream)
            self._adapt(enqueue_us)
            self.sync()  # device-wide: every stream of the context is done
            self._memset(self._closer, mark.close, stream)
            outs.append(after(i, out) if after is not None else out)  # launched after the closing set: untimed
            copies.append(tensor_count(outs[-1]) if after is not None else 0)
        self.sync()
        read = perf_counter()
        batch = self._log.take()
        self.reads.append((perf_counter() - read) * 1e6)
        self.flush_us = max(self.flush_us, self.reads[-1])
        spans = block_spans(batch, marks, self._closed_at, copies)
        self._closed_at = max(self._closed_at, spans[-1].closed_at)
        idle, self._waits = idle_work(batch, self._waits), []
        if idle is not None:  # charged to the block's first call, before any other reason
            spans[0] = spans[0]._replace(stray=idle)
        return [Timed(span.us, out, span.stray) for span, out in zip(spans, outs, strict=True)]

    def _draw(self, count: int) -> list[Marks]:
        """Distinct random values, four per call."""
        values: list[int] = []
        while len(values) < 4 * count:
            value = self._marks.getrandbits(32)
            if value not in values:
                values.append(value)
        return [Marks(*values[4 * i:4 * i + 4]) for i in range(count)]

    def diagnostics(self) -> dict[str, float]:
        reads, self.reads = self.reads, []
        return {**super().diagnostics(), "activity_read_us": self.flush_us,
                "activity_read_median_us": statistics.median(reads) if reads else 0.0}


class DriverMemset:
    """cuMemsetD32Async on the current stream, through the driver: unlike PyTorch's fills (kernels), a set's
    CUPTI record carries its value, which is how the harness finds its own markers among the records."""

    def __init__(self) -> None:
        # Through PyDLL: the call keeps the GIL, so no Python thread runs between a call's closing set and the
        # harness's count of threads after it (threads.Watch.after_close).
        self._set = ctypes.PyDLL("libcuda.so.1").cuMemsetD32Async
        self._set.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
        self._set.restype = ctypes.c_int

    def __call__(self, buffer: torch.Tensor, value: int, stream: int) -> None:
        assert buffer.dtype == torch.int32 and buffer.is_contiguous()
        status = self._set(buffer.data_ptr(), value, buffer.numel(), stream)
        if status != 0:
            raise RuntimeError(f"cuMemsetD32Async failed with CUDA error {status}")


def _persisting_l2_reset() -> Callable[[], object] | None:
    """The driver's cuCtxResetPersistingL2Cache for the current context, if it answers; else None."""
    try:
        reset = ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache
    except (OSError, AttributeError):
        return None
    reset.restype = ctypes.c_int
    return reset if reset() == 0 else None


def make_timer(device: torch.device) -> Timer:
    """CUPTI's records where cupti-python is installed, else events around a device-wide synchronise."""
    if device.type != "cuda":
        return CpuTimer()
    log = None
    try:
        log = ActivityLog()
        return CuptiTimer(device, log=log)
    except Exception as exc:  # no cupti-python, no CUPTI for this driver, or no records: say so in the record
        if log is not None:
            log.close()
        timer = EventTimer(device)
        timer.kind = f"events (CUPTI unavailable: {type(exc).__name__}: {str(exc)[:120]})"
        return timer


# ---------------------------------------------------------------- interleaved loop


class CallError(Exception):
    """A timed call failed (raised, died, hung); `role` says whose."""

    def __init__(self, role: str, message: str, error: BaseException | None = None) -> None:
        super().__init__(f"{role}: {message}")
        self.role = role
        self.message = message
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


class Measured(NamedTuple):
    us: float
    failure: str | None = None  # the call's output (or its conduct) was wrong: the loop stops


# (role, call number, warm-up?) -> the call's time and what was wrong with it; raises CallError.
Measure = Callable[[str, int, bool], Measured]


def time_interleaved(
    roles: Sequence[str],
    measure: Measure,
    config: TimingConfig,
    rng: random.Random,
    audit_role: str = "candidate",
) -> Interleaved:
    """Warm up, then run rounds until `should_stop` says the `audit_role` median is good enough.

    Every call gets its own call number, from which ``measure`` makes fresh inputs (no call sees the
    addresses or values of an earlier one) and checks the output outside the timed region: a kernel that
    caches, replays or degrades after a few calls fails on the first call it gets wrong.
    """
    calls = _warm_up(roles, measure, config.warmup, config.warmup_seconds)
    result = Interleaved(samples={role: [] for role in roles})
    if isinstance(calls, str):
        result.audit_failure = calls
        return result
    gc.collect()
    gc.disable()  # a collection inside a timed call would be charged to whoever was running
    try:
        start = perf_counter()
        while not should_stop(result.samples[audit_role], perf_counter() - start, config):
            for role in rng.sample(list(roles), len(roles)):
                measured = measure(role, calls, False)
                calls += 1
                result.samples[role].append(measured.us)
                if measured.failure is not None:
                    result.audit_failure = (f"on a timed call (the {role}'s call {len(result.samples[role])}): "
                                            f"{measured.failure}")
                    return result
    finally:
        gc.enable()
    return result


def _warm_up(roles: Sequence[str], measure: Measure, warmup: int, warmup_seconds: float) -> int | str:
    """The next call number, or the first failure of a warm-up call."""
    call = 0
    for role in roles:
        started = perf_counter()
        done = 0
        while done < warmup or perf_counter() - started < warmup_seconds:
            failure = measure(role, call, True).failure
            if failure is not None:
                return f"warm-up call of the {role}: {failure}"
            call += 1
            done += 1
    return call


def local_measure(fns: Mapping[str, Fn], pool: Sequence[Sequence[object]], timer: Timer) -> Measure:
    """Functions of this process timed on a fixed pool of inputs, unchecked: for benchmarks outside the guard."""

    def measure(role: str, call: int, warm: bool) -> Measured:
        try:
            timed = timer.time(fns[role], pool[call % len(pool)])
        except Exception as exc:
            raise CallError(role, f"raised {type(exc).__name__}: {exc}", exc) from exc
        return Measured(timed.us, timed.stray)

    return measure
