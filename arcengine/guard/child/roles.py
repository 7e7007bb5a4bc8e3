"""The judge's handle on a role worker (arcengine.guard.child.worker): requests with time limits, replies checked.

Everything a worker sends is untrusted: the reply's shape is checked, its payload is bounded by what the
reference's outputs weigh, and tensors are rebuilt from bytes. A worker that dies, hangs past its limit or
answers nonsense is a failure of its role with the precise reason, never a crash of the judge.

Imports are limited to the standard library, torch and the guard's child-side modules, as for the child.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from arcengine.guard.child import channel, confine, correctness, process, worker
from arcengine.guard.child.device_memory import DeviceMemoryWatch

EXIT_WAIT_S = 2.0  # a worker told to exit gets this long before it is killed
HANG_REPORT_S = 2.0  # a worker past its limit gets this long to say where its Python runs, before it is killed
TRIM_WAIT_S = 30.0  # for a worker to hand its allocator's cache back to the driver
DEATH_WAIT_S = 10.0  # a worker whose channel closed gets this long to exit (a CUDA teardown) before it is killed
_FORKED: set[int] = set()  # the judge's workers: any other child of the judge is an orphan untrusted code left


def _shown(value: object) -> str:
    """A reply's field as a reason shows it: a short list's values, a long one's length, anything else's type."""
    if isinstance(value, list):
        return repr(value)[:120] if len(value) <= 4 else f"{len(value)} values"
    return type(value).__name__


class WorkerLost(Exception):
    """The worker died, hung or broke the protocol; the message says which, and ``hung`` whether it hung."""

    def __init__(self, message: str, hung: bool = False) -> None:
        super().__init__(message)
        self.hung = hung


@dataclass(frozen=True)
class Timed:
    """A worker's answer to a block of timed calls."""

    times: list[float]  # of the calls that ran well, in order
    failure: str | None  # why the next one did not
    seeds: list[int]  # each call's inputs' seed, drawn by the worker when it made them (at least one per time)


@dataclass(frozen=True)
class Reply:
    """A worker's answer to one call."""

    failure: str | None
    us: float | None = None  # the call's own time (timed calls)
    seconds: float = 0.0  # the call's wall time in the worker, first-call compilation included
    outputs: object = None  # rebuilt like the call's return value: a tensor, or a tuple of tensors and values


class RemoteRole:
    """One worker process, seen from the judge."""

    def __init__(self, role: str, pid: int, sock: socket.socket) -> None:
        self.role = role
        self.pid = pid
        self.sock = sock
        self.closed = False
        self.requests = 0  # each request's number, which its reply must carry back
        self.memory: DeviceMemoryWatch | None = None  # set for untrusted roles on a GPU once they have loaded
        self._trimming = False  # a trim's own reply is judged as it is, not trimmed again
        self.seeds: set[int] = set()  # every timed call's seed so far: 62 random bits never repeat

    @classmethod
    def fork(cls, role: str) -> RemoteRole:
        pid, sock = worker.start(role)
        _FORKED.add(pid)
        return cls(role, pid, sock)

    def request(self, command: Mapping[str, Any], timeout_s: float,
                max_payload: int = 1 << 20) -> tuple[dict[str, Any], channel.Payload]:
        self.begin(command)
        return self.finish(timeout_s, max_payload)

    def begin(self, command: Mapping[str, Any]) -> None:
        """Send a request without waiting for its reply (several workers can then work side by side)."""
        if self.closed:
            raise WorkerLost(f"the {self.role}'s process is gone")
        self.requests += 1
        if self.memory is not None:
            self.memory.before_request(command)
        try:
            channel.send(self.sock, {**command, "id": self.requests})
        except OSError:
            raise WorkerLost(self.death_reason()) from None

    def finish(self, timeout_s: float, max_payload: int = 1 << 20) -> tuple[dict[str, Any], channel.Payload]:
        """The reply to the last request; WorkerLost if it does not come in time, or is not one."""
        if self.closed:
            raise WorkerLost(f"the {self.role}'s process is gone")
        try:
            header, payload = channel.receive(self.sock, timeout_s, max_payload)
        except channel.ChannelTimeout:
            where = self._where_hung()
            self.kill()
            raise WorkerLost(f"did not return within {timeout_s:.0f} s (hung{where}; its process was killed)",
                             hung=True) from None
        except channel.ChannelClosed:
            raise WorkerLost(self.death_reason()) from None
        except channel.ChannelError as exc:
            self.kill()
            raise WorkerLost(f"broke the harness's protocol ({exc})") from None
        if header.get("id") != self.requests:  # a reply its harness did not write, or one out of turn
            self.kill()
            raise WorkerLost("broke the harness's protocol (a reply to another request)")
        self._no_process_left()
        self._no_memory_kept(header)
        return header, payload

    def _where_hung(self) -> str:
        """Where the worker's Python runs, as the worker says it when told it is past its limit (worker.Worker.hung),
        for the reason; "" where it does not say in time (native code that never returns to the interpreter, a
        handler replaced) or says something else. Untrusted: it can only describe its own role's failure."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, worker.HANG_SIGNAL)
        try:
            header, _ = channel.receive(self.sock, HANG_REPORT_S, 0)
        except (channel.ChannelTimeout, channel.ChannelClosed, channel.ChannelError):
            return ""
        where = header.get("hung")
        return f" at {where[:200]}" if header.get("id") == self.requests and isinstance(where, str) else ""

    def _no_process_left(self) -> None:
        """Untrusted code (native, which the gate cannot read) may start processes; none may outlive its call,
        where it could share the GPU with the next role's timed calls. Checked from here, not in the worker."""
        if self.role not in worker.CANDIDATE_ROLES:
            return
        left = process.left_running(self.pid, os.getpid(), _FORKED)
        if left:
            for stray in left:
                process.kill_tree(int(stray.split()[0]))
            self.kill()
            raise WorkerLost(f"left a process running after its call: {', '.join(left[:3])}")

    def _no_memory_kept(self, header: Mapping[str, Any]) -> None:
        """Native code may allocate device memory PyTorch never sees and keep it (see device_memory). Past the
        limit, the worker is first told to hand its allocator's cache back (``trim``, itself a request whose
        reply counts what it gave back): blocks PyTorch holds for reuse are no leak (torch.compile's autotuning
        leaves gigabytes of them), and only what stays after that fails the role."""
        held = number(header.get("held_bytes")) or 0  # what the worker's harness keeps for the audit (it says)
        leak = self.memory.after_reply(int(held)) if self.memory is not None else None
        if leak is None:
            return
        if not self._trimming:
            self._trimming = True
            try:
                self.request({"op": "trim"}, TRIM_WAIT_S)  # raises WorkerLost itself if still past the limit
                return
            finally:
                self._trimming = False
        self.kill()
        raise WorkerLost(leak)

    def call(self, command: Mapping[str, Any], timeout_s: float, max_payload: int) -> Reply:
        """One untimed call; with ``hold`` in the command its outputs stay in the worker for ``audit``."""
        self.begin_call(command)
        return self.finish_call(command, timeout_s, max_payload)

    def begin_call(self, command: Mapping[str, Any]) -> None:
        """The call sent; the judge works meanwhile, then takes its reply with ``finish_call``."""
        self.begin({"op": "call", **command})

    def finish_call(self, command: Mapping[str, Any], timeout_s: float, max_payload: int) -> Reply:
        header, payload = self.finish(timeout_s, max_payload)
        if command.get("hold") and header.get("failure") is None:
            if header.get("held") is not True:
                self.kill()
                raise WorkerLost("broke the harness's protocol (outputs it was told to hold)")
            return Reply(None, seconds=number(header.get("seconds")) or 0.0)
        return self._reply(header, payload)

    def time(self, command: Mapping[str, Any], timeout_s: float) -> Timed:
        """A block of timed calls (see worker.Worker.time): the times of those that ran well, and why one did not."""
        header, _ = self.request({"op": "time", **command}, timeout_s)
        times, failure, seeds = header.get("times"), header.get("failure"), header.get("seeds")
        if (not isinstance(times, list) or any(number(us) is None or us < 0 for us in times)
                or len(times) > len(command["seeds"]) or (failure is None and len(times) != len(command["seeds"]))
                or not isinstance(seeds, list) or not len(times) <= len(seeds) <= len(command["seeds"])
                or any(type(seed) is not int or not 0 <= seed < 1 << 62 for seed in seeds)):
            self.kill()
            raise WorkerLost(f"broke the harness's protocol (times that are not its calls': {_shown(times)} for "
                             f"{len(command['seeds'])} calls, seeds {_shown(seeds)}, failure {str(failure)[:160]!r})")
        if len(self.seeds.union(seeds)) != len(self.seeds) + len(seeds):  # its inputs were not drawn afresh
            self.kill()
            raise WorkerLost("broke the harness's protocol (a timed call's seed came again: its inputs were not "
                             "fresh)")
        self.seeds.update(seeds)
        return Timed([float(us) for us in times], str(failure) if failure is not None else None, seeds)

    def audit(self, samples: Sequence[int | None], seal: bool, timeout_s: float, max_payload: int) -> list[Reply]:
        """The held block's audit: per call, its conduct and, where it has a sample seed, its outputs' samples
        (correctness.Sample); a failing call's Reply is the last."""
        header, payload = self.request({"op": "audit", "samples": list(samples), "seal": seal}, timeout_s,
                                       max_payload)
        calls = header.get("calls")
        if header.get("failure") is not None:
            failed_at = header.get("failed_at")
            count = failed_at if type(failed_at) is int and 0 <= failed_at < len(samples) else 0
            return [*[Reply(None)] * count, Reply(str(header["failure"]))]
        if not isinstance(calls, list) or len(calls) != len(samples):
            self.kill()
            raise WorkerLost("broke the harness's protocol (an audit of other calls)")
        replies, offset = [], 0
        for call, sample in zip(calls, samples, strict=True):
            if sample is None or not isinstance(call, dict) or call.get("outputs") is None:
                if sample is not None:  # a call it was asked to show, not shown
                    self.kill()
                    raise WorkerLost("broke the harness's protocol (an audit without the outputs asked for)")
                replies.append(Reply(None))
                continue
            size = _payload_bytes(call)
            replies.append(self._reply({**call, "failure": None}, memoryview(payload)[offset:offset + size]))
            offset += size
        return replies

    def _reply(self, header: Mapping[str, Any], payload: channel.Payload) -> Reply:
        failure = header.get("failure")
        if failure is not None:
            return Reply(str(failure), seconds=number(header.get("seconds")) or 0.0)
        try:
            outputs = _rebuild(header, payload)
        except (channel.ChannelError, KeyError, TypeError, ValueError) as exc:
            self.kill()
            raise WorkerLost(f"sent outputs the harness cannot read ({exc})") from None
        return Reply(None, number(header.get("us")), number(header.get("seconds")) or 0.0, outputs)

    def diagnostics(self, timeout_s: float = 10.0) -> tuple[str | None, dict[str, float]]:
        """The worker's timer: its kind and how its harness behaved (numbers only)."""
        with contextlib.suppress(WorkerLost):
            header, _ = self.request({"op": "diagnostics"}, timeout_s)
            timer, kind = header.get("timer"), header.get("kind")
            return (str(kind) if kind else None), numbers(timer)
        return None, {}

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not. After this it cannot write anything anywhere."""
        if not self.closed:
            with contextlib.suppress(OSError):
                channel.send(self.sock, {"op": "exit"})
            self.sock.settimeout(EXIT_WAIT_S)
            with contextlib.suppress(OSError):
                self.sock.recv(1)  # returns at the worker's exit (or its timeout)
        self.kill()

    def kill(self) -> None:
        """SIGKILL the worker and whatever it started (its compiler, processes of its code), then reap it."""
        if self.closed:
            return
        self.closed = True
        _kill_and_reap(self.pid)
        self.sock.close()

    def death_reason(self) -> str:
        """Why the worker's channel closed: its exit status, once it is reaped. One that still runs after
        DEATH_WAIT_S closed the channel itself (native code can close any descriptor): it is killed."""
        self.closed = True
        self.sock.close()
        status = _exit_status(self.pid, DEATH_WAIT_S)
        if status is None:
            _kill_and_reap(self.pid)
            return f"closed its channel to the harness and went on running (killed after {DEATH_WAIT_S:.0f} s)"
        if status < 0:
            return "died"
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            if sig == signal.SIGSYS:  # what the seccomp filter of arcengine.guard.child.confine does
                return f"died: killed by signal {sig} ({name}): {confine.KILLED_FOR}"
            return f"died: killed by signal {sig} ({name})"
        return f"died: exited with code {os.WEXITSTATUS(status)}"


def _kill_and_reap(pid: int) -> None:
    """SIGKILL a worker and whatever it started (it shares the judge's process group: no group is its own)."""
    process.kill_tree(pid)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _exit_status(pid: int, within_s: float) -> int | None:
    """The wait status of child ``pid`` once it has exited, waited for ``within_s`` at most: None if it still runs,
    -1 if it is no child to wait for (reaped already)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return -1
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def numbers(value: object) -> dict[str, float]:
    """The finite numbers of a mapping a worker sent (anything else in it dropped)."""
    if not isinstance(value, dict):
        return {}
    return {str(key): found for key, item in value.items() if (found := number(item)) is not None}


def number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _payload_bytes(call: object) -> int:
    """How many payload bytes one call's outputs take, from what it says of them."""
    try:
        return sum(int(entry["meta"]["nbytes"]) for entry in call["outputs"] if "tensor" in entry)  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return 0  # _rebuild refuses it


def _rebuild(header: Mapping[str, Any], payload: channel.Payload) -> object:
    described = header["outputs"]
    if not isinstance(described, list):
        raise channel.ChannelError("outputs that are not a list")
    metas = [entry["meta"] for entry in described if "tensor" in entry]
    tensors = iter(channel.unpack_tensors(metas, payload))
    items = [_tensor(entry, next(tensors)) if "tensor" in entry else entry["value"] for entry in described]
    if header.get("single") and len(items) == 1:
        return items[0]
    return tuple(items)


def _tensor(entry: Mapping[str, Any], tensor: torch.Tensor) -> object:
    """A tensor as sent, or the Sample it stands for."""
    if "sampled_from" not in entry:
        return tensor
    shape = entry["sampled_from"]
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise channel.ChannelError("a sample of a shape that is not one")
    return correctness.Sample(tensor, tuple(shape))


def max_payload(expected: object) -> int:
    """What a reply may weigh: the reference's outputs, with room for a wrong dtype, plus headroom."""
    items = expected if isinstance(expected, tuple | list) else (expected,)
    nbytes = correctness.tensor_bytes(item.values if isinstance(item, correctness.Sample) else item for item in items)
    return 8 * nbytes + (1 << 20)
