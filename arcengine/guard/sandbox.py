"""Run one guard child: a process in its own session and temporary directory, with a scrubbed
environment, CPU and wall-clock limits, and the whole process group killed when it overruns.

Two ways to get that process. ``run_child`` alone spawns ``python -m arcengine.guard.child.judge`` cold (seconds
of torch and triton imports per candidate). A ``ChildLauncher`` owns a zygote (arcengine.guard.child.zygote): a
warm parent, scrubbed like a child, that has imported them once and forks one child per spec; it falls back
to the cold spawn whenever the zygote cannot serve.

Whatever the child does (crash, hang, exit, forge nothing, write nothing), and whatever happens to the
zygote, the caller gets a ``ChildOutcome``, never an exception.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import structlog
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from arcengine.guard.child import JUDGE, zygote
from arcengine.guard.child.process import descendants_of
from arcengine.guard.turns import DeviceTurns, Gate
from arcengine.recording.redact import SECRET_NAME

PACKAGE_ROOT = Path(__file__).resolve().parents[2]

# Variables a child may inherit; everything else (API keys included) is dropped.
_ALLOWED = re.compile(
    r"^(PATH|LANG|LC_[A-Z]+|TZ|LD_LIBRARY_PATH|CUDA_[A-Z_]+|NVIDIA_[A-Z_]+|NCCL_[A-Z_]+|TORCH_[A-Z_]+"
    r"|TRITON_[A-Z_]+|OMP_NUM_THREADS|MKL_NUM_THREADS|OPENBLAS_[A-Z_]+|CC|CXX|PYTORCH_[A-Z_]+"
    r"|ARCENGINE_WRITABLE)$"  # folders a candidate may write besides its own (guard/child/opens.py)
)
# Variables read only after the fork (knobs, CUDA init, paths): a forked child may set them for itself. Any other
# difference from the zygote's environment (OMP_NUM_THREADS, LD_LIBRARY_PATH...) was consumed when the zygote
# started, so such a request is spawned cold. TRITON_INTERPRET is not among them: Triton settles interpreter or
# compiler while the zygote imports it. ARCENGINE_NATIVE_CACHE (the campaign's native build folder, given to every
# campaign child) is read per build: without it here every campaign child was spawned cold, importing torch again.
_AFTER_FORK_ENV = re.compile(
    r"^(HOME|TMPDIR|TRITON_(?!INTERPRET$)[A-Z_]+|CUDA_[A-Z_]+|NVIDIA_[A-Z_]+|NCCL_[A-Z_]+|TORCH_CUDA_ARCH_LIST"
    r"|ARCENGINE_NATIVE_CACHE|ARCENGINE_WRITABLE|ARCENGINE_ROLE_HOMES)$")

log = structlog.get_logger()

ZYGOTE_START_TIMEOUT_S = 120.0  # torch imports on a cold file system can be slow
_REPLY_WAIT_S = 60.0  # a SIGKILLed CUDA process can take a while to be torn down and reaped
_CLOSE_WAIT_S = 30.0


@functools.cache
def network_isolation() -> tuple[str, ...]:
    """``unshare --net --`` where this user may make a network namespace (root, usually), so guard children
    have no network; empty where the OS refuses (the README says what isolation is left then).

    unshare execs the command in place: the pid, and so the process group the engine kills, is unchanged.
    """
    tool = shutil.which("unshare")
    if tool is None:
        return ()
    try:
        probe = subprocess.run([tool, "--net", "--", "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return (tool, "--net", "--") if probe.returncode == 0 else ()


ROLE_HOMES_FOLDER = "roles"


def scrubbed_environment(device: str, workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if _ALLOWED.match(k) and not SECRET_NAME.search(k)}
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        # Triton reads its home (where its dump, override and default cache folders lie) once, at import: in a
        # zygote's child that was the zygote's folder, which no child may write. Named, it is read per use.
        TRITON_HOME=str(workdir),
        # Each worker's own HOME, TMPDIR and kernel caches, beside the working directory
        # (arcengine.guard.child.worker): out of every other worker's reach.
        ARCENGINE_ROLE_HOMES=str(workdir.parent / ROLE_HOMES_FOLDER),
        PYTHONPATH=str(PACKAGE_ROOT),
        PYTHONDONTWRITEBYTECODE="1",
        # No working directory on the import path: a module a candidate writes there (it may write its folder)
        # would shadow one that the judge or a trusted worker imports later, and run in its process.
        PYTHONSAFEPATH="1",
        PYTHONUNBUFFERED="1",
        # torch.compile in a candidate: Inductor compiles in the calling thread instead of in its pools, whose
        # threads outlive run() and fail the child's left-thread check: on the GPU a compile-worker sidecar
        # process and its reader thread ("InductorSubproc"), on the CPU a ThreadPoolExecutor for the C++
        # builds. Read when torch._inductor.config is imported, which the zygote does (torch._dynamo imports
        # it), so it is the same for the zygote and every child. Inductor's own cache stays at its default under
        # TMPDIR, the child's private directory: shared, its entries (Python modules) written by one candidate
        # would run in another's process; the Triton kernels it generates go to TRITON_CACHE_DIR, as Triton's do.
        TORCHINDUCTOR_COMPILE_THREADS="1",
    )
    # The interpreter's own folder first: the ninja that torch.utils.cpp_extension builds a candidate's C++ with is
    # installed there (a dependency), and a user who did not activate the environment has it on no other path.
    env["PATH"] = os.pathsep.join(filter(None, [str(Path(sys.executable).parent), env.get("PATH")]))
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class ChildOutcome:
    result: dict[str, Any] | None  # the child's result JSON, if it wrote one
    returncode: int | None
    timed_out: bool
    seconds: float
    stderr_tail: str

    def failure(self) -> str | None:
        """Why the child produced no usable result, precisely; None if it did."""
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s (process group killed)"
        if self.returncode is not None and self.returncode < 0:
            name = signal.Signals(-self.returncode).name
            return f"child killed by {name}{_last_line(self.stderr_tail)}"
        if self.result is None:
            return f"child exited with code {self.returncode} without a result{_last_line(self.stderr_tail)}"
        return None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return f": {lines[-1][:300]}" if lines else ""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# ---------------------------------------------------------------- files and outcome


@dataclass(frozen=True)
class _Files:
    root: Path
    workdir: Path
    spec: Path
    result: Path
    stderr: Path
    token: str  # known to the harness, not to candidate code: a result without it was forged
    gate: Gate | None = None  # the child prepares, then waits here for its turn on the device


@contextlib.contextmanager
def _child_files(spec: dict[str, Any], gated: bool = False) -> Iterator[_Files]:
    """A private directory with the spec (its ``result`` path filled in, and its gate's if ``gated``) and an
    empty working directory."""
    with tempfile.TemporaryDirectory(prefix="arcengine-guard-") as tmp:
        root = Path(tmp)
        token = secrets.token_hex(16)
        gate = Gate(root / "gate") if gated else None
        files = _Files(root, root / "work", root / "spec.json", root / "result.json", root / "stderr.txt", token,
                       gate)
        files.workdir.mkdir()
        (root / ROLE_HOMES_FOLDER).mkdir()
        extra = {"gate": str(gate.path)} if gate else {}
        files.spec.write_text(json.dumps({**spec, **extra, "result": str(files.result), "token": token}))
        try:
            yield files
        finally:
            if gate is not None:
                gate.close()


def _outcome(files: _Files, returncode: int | None, timed_out: bool, seconds: float, note: str = "") -> ChildOutcome:
    result = None
    if not timed_out and returncode != 0:
        # The judge exits 0 once its result is written: a file beside any other end was not finished by it (a
        # candidate that stopped the judge's own write could have left one). The note goes first: the last line
        # says why the child ended (a limit it broke, say).
        if files.result.exists():
            note = f"the judge did not exit cleanly: its result file is not read\n{note}".strip()
    elif not timed_out:
        try:
            result = json.loads(files.result.read_text())
        except (OSError, ValueError):
            result = None
        if result is not None and result.pop("token", None) != files.token:
            # The harness deletes the spec (and its token) before candidate code runs: this result is forged.
            result = None
            note = f"{note}\nthe result file does not carry the harness's token: written by candidate code".strip()
    try:
        tail = files.stderr.read_text(errors="replace")
    except OSError:  # a forked child that died before opening it
        tail = ""
    if note:
        tail = f"{tail.rstrip()}\n{note}\n".lstrip()
    return ChildOutcome(result, None if timed_out else returncode, timed_out, seconds, tail[-4000:])


def _cpu_limit(timeout_s: float) -> int:
    """CPU seconds: all cores for the whole wall budget, plus slack."""
    return int(timeout_s * (os.cpu_count() or 1)) + 30


MEMORY_POLL_S = 0.05
DESCENDANTS_EVERY = 10  # polls between two looks for the child's worker processes
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def default_memory_limit() -> int | None:
    """Half the machine's memory: a child past it is killed before the kernel's OOM killer picks a victim."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * _PAGE_BYTES // 2
    except (ValueError, OSError, AttributeError):
        return None


def resident_bytes(pid: int, descendants: list[int] | None = None, *, proportional: bool = False) -> int | None:
    """The resident memory of the process and its descendants (the judge and its workers; found afresh unless
    given); None once the process is gone. Resident sizes count every page a fork still shares with its parent
    once per process (a judge and four workers forked with torch imported: two gigabytes of one copy);
    ``proportional`` counts each shared page once across them (PSS), but costs a few milliseconds a process."""
    measure = _pss_bytes if proportional else _statm_bytes
    own = measure(pid)
    if own is None:
        return None
    kids = descendants_of(pid) if descendants is None else descendants
    return own + sum(measure(child) or 0 for child in kids)


def _statm_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None


def _pss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return _statm_bytes(pid)  # no rollup (an old kernel): the resident size, which overcounts


async def _enforce_memory(pid: int, limit: int, breaches: list[str]) -> None:
    """Kill the child's group once its memory passes ``limit``; say so in ``breaches``.

    Polled rather than set as an rlimit: RLIMIT_AS and RLIMIT_DATA count the address space that CUDA reserves,
    which is far larger than anything resident, and cgroups need privileges a user may not have. The child's
    descendants are looked up every DESCENDANTS_EVERY polls: a scan of /proc costs a millisecond or so. The
    resident sizes (cheap) are read at every poll; only past the limit are the proportional ones (PSS) read to
    decide, and again each time the resident sum has grown by a tenth since they last cleared the child."""
    polls, descendants, cleared = 0, [], 0
    while True:
        if polls % DESCENDANTS_EVERY == 0:
            descendants = descendants_of(pid)
        polls += 1
        resident = resident_bytes(pid, descendants)
        if resident is None:
            return
        if resident > limit and resident > cleared * 1.1:
            proportional = resident_bytes(pid, descendants, proportional=True)
            if proportional is None:
                return
            if proportional > limit:
                _kill_group(pid)
                breaches.append(f"host memory limit exceeded: {proportional / 2**30:.1f} GiB resident, "
                                f"limit {limit / 2**30:.1f} GiB (process group killed)")
                return
            cleared = resident
        await anyio.sleep(MEMORY_POLL_S)


async def _supervise(ended: Callable[[], Awaitable[object]], watch: Callable[[], Awaitable[None]] | None,
                     timeout_s: float, gate: Gate | None, turns: DeviceTurns | None) -> bool:
    """Await ``ended()`` with ``watch()`` (if any) running beside it; True if the time limit ran out first.

    A gated child first prepares and waits for its turn on the device; the limit runs from its turn, so a
    child is never cut short for the time another one held the device."""
    async with anyio.create_task_group() as watchers:
        if watch is not None:
            watchers.start_soon(watch)
        try:
            if gate is None or turns is None:
                return await _within(timeout_s, ended)
            async with turns.turn(ended) as taken:
                if not taken:  # it ended while preparing
                    return False
                gate.open()
                return await _within(timeout_s, ended)
        finally:
            watchers.cancel_scope.cancel()


async def _within(timeout_s: float, ended: Callable[[], Awaitable[object]]) -> bool:
    with anyio.move_on_after(timeout_s) as scope:
        await ended()
    return scope.cancelled_caught


def _limits(timeout_s: float) -> dict[str, int]:
    """Resource limits of a child, by ``resource`` name; both launch paths apply exactly these."""
    return {"RLIMIT_CPU": _cpu_limit(timeout_s), "RLIMIT_CORE": 0}


# ---------------------------------------------------------------- cold spawn


async def run_child(
    spec: dict[str, Any],
    *,
    device: str,
    timeout_s: float,
    env_extra: dict[str, str] | None = None,
    launcher: ChildLauncher | None = None,
    memory_limit: int | None = None,
) -> ChildOutcome:
    """Run ``python -m arcengine.guard.child.judge`` on ``spec`` (its ``result`` path is filled in here).

    With a ``launcher``, the child is forked by its zygote (under the launcher's memory limit); without one, it
    is spawned cold, killed if its resident memory passes ``memory_limit`` bytes.
    """
    if launcher is not None:
        return await launcher.run(spec, device=device, timeout_s=timeout_s, env_extra=env_extra)
    with _child_files(spec) as files:
        env = scrubbed_environment(device, files.workdir, env_extra)
        return await _run_cold(files, env, timeout_s, memory_limit)


async def _run_cold(files: _Files, env: dict[str, str], timeout_s: float, memory_limit: int | None,
                    turns: DeviceTurns | None = None) -> ChildOutcome:
    started = time.monotonic()
    breaches: list[str] = []
    with files.stderr.open("wb") as stderr:
        process = await anyio.open_process(
            [*network_isolation(), sys.executable, "-m", JUDGE, str(files.spec)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, cwd=files.workdir,
            env=env, start_new_session=True,
        )
        try:
            _limit_resources(process.pid, timeout_s)
            watch = (functools.partial(_enforce_memory, process.pid, memory_limit, breaches)
                     if memory_limit is not None else None)
            timed_out = await _supervise(process.wait, watch, timeout_s, files.gate, turns)
        finally:
            _kill_group(process.pid)  # also reaps helpers the candidate left behind
            with anyio.CancelScope(shield=True):
                await process.wait()
    return _outcome(files, process.returncode, timed_out, time.monotonic() - started, "\n".join(breaches))


def _limit_resources(pid: int, timeout_s: float) -> None:
    """CPU time bounded (all cores for the whole wall budget, plus slack); no core dumps."""
    try:
        for name, value in _limits(timeout_s).items():
            resource.prlimit(pid, getattr(resource, name), (value, value))
    except (ProcessLookupError, PermissionError, OSError):
        pass  # the child already ended, or the OS refuses: the wall clock still bounds it


# ---------------------------------------------------------------- the zygote, engine side


class ZygoteUnavailable(Exception):
    """The zygote could not start or refused to serve; the launcher spawns cold instead."""


def _zygote_command() -> list[str]:
    return [*network_isolation(), sys.executable, "-m", zygote.__name__, "--parent", str(os.getpid())]


def _fixed_at_start(env: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in env.items() if not _AFTER_FORK_ENV.match(key)}


@dataclass
class _Request:
    ident: int
    pid: int | None = None
    returncode: int | None = None
    error: str | None = None
    started: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)

    def abandon(self, reason: str) -> None:
        if not self.done.is_set():
            self.error = reason
            self.started.set()
            self.done.set()


async def _watch_request_memory(request: _Request, limit: int, breaches: list[str]) -> None:
    await request.started.wait()
    if request.pid is not None:
        await _enforce_memory(request.pid, limit, breaches)


class _Zygote:
    """One zygote process: requests out on its stdin, replies in on its stdout (read by `read_replies`)."""

    def __init__(self, process: Process, env: dict[str, str], home: Path) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.pid = process.pid
        self.env = env
        self.home = home
        self.dead = False
        self.reason: str | None = None
        self.pending: dict[int, _Request] = {}
        self._ids = itertools.count(1)
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._write_lock = anyio.Lock()

    @classmethod
    async def start(cls, timeout_s: float, device: str) -> _Zygote:
        home = Path(tempfile.mkdtemp(prefix="arcengine-zygote-"))
        env = scrubbed_environment(device, home)
        try:
            with (home / "zygote.log").open("wb") as stderr:
                process = await anyio.open_process(
                    _zygote_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=home,
                    env=env, start_new_session=True,
                )
        except OSError as exc:
            shutil.rmtree(home, ignore_errors=True)
            raise ZygoteUnavailable(f"zygote failed to spawn: {exc}") from exc
        zygote = cls(process, env, home)
        try:
            with contextlib.suppress(OSError):
                resource.prlimit(process.pid, resource.RLIMIT_CORE, (0, 0))
            with anyio.fail_after(timeout_s):
                hello = await zygote._receive()
            refusal = _refusal(hello, process.pid)
            if refusal is not None:
                raise ZygoteUnavailable(refusal)
        except BaseException as exc:
            await zygote.close()
            if isinstance(exc, ZygoteUnavailable):
                raise
            if isinstance(exc, TimeoutError):
                raise ZygoteUnavailable(f"zygote not ready after {timeout_s:.0f} s") from exc
            if isinstance(exc, Exception):
                raise ZygoteUnavailable(f"zygote failed to start ({type(exc).__name__}){zygote.log_tail()}") from exc
            raise  # cancelled: the zygote is already gone
        return zygote

    def log_tail(self) -> str:
        try:
            return _last_line((self.home / "zygote.log").read_text(errors="replace")[-4000:])
        except OSError:
            return ""

    def compatible(self, env: dict[str, str]) -> str | None:
        """Why a child with `env` cannot be forked from this zygote, or None."""
        want, have = _fixed_at_start(env), _fixed_at_start(self.env)
        differs = sorted(key for key in want.keys() | have.keys() if want.get(key) != have.get(key))
        return f"variables read at import differ from the zygote's: {', '.join(differs)}" if differs else None

    # ------------------------------------------------------------ protocol

    async def _receive(self) -> dict[str, Any]:
        message = json.loads(await self._stdout.receive_until(b"\n", 1 << 20))
        if not isinstance(message, dict):
            raise ValueError(f"not a JSON object: {message!r}")
        return message

    async def read_replies(self) -> None:
        """The reader task: route replies to requests until the zygote's stdout closes."""
        try:
            while True:
                self._dispatch(await self._receive())
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            with anyio.move_on_after(5):
                await self.process.wait()
            self._die(f"the guard's zygote (pid {self.pid}) died (exit status {self.process.returncode})"
                      f"{self.log_tail()}")
        except Exception as exc:  # garbage on the pipe: never trust this zygote again
            self._die(f"the guard's zygote (pid {self.pid}) broke the protocol: {type(exc).__name__}: {exc}")
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        finally:
            self._die("the launcher closed")  # cancelled: no-op if already dead

    def _dispatch(self, message: dict[str, Any]) -> None:
        request = self.pending.get(message.get("id"))  # type: ignore[arg-type]
        event = message.get("event")
        if request is None:
            if event == "error":
                log.warning("guard.zygote_error", error=message.get("error"))
            return
        if event in ("started", "exited"):
            request.pid = int(message["pid"])
            request.started.set()
        if event == "exited":
            request.returncode = int(message["returncode"])
            request.done.set()
        elif event == "error":
            request.abandon(str(message.get("error")))

    def _die(self, reason: str) -> None:
        if self.dead:
            return
        self.dead, self.reason = True, reason
        for request in self.pending.values():
            if request.pid is not None and not request.done.is_set():
                _kill_group(request.pid)  # nobody can report its exit any more
            request.abandon(reason)

    async def _send(self, message: dict[str, Any]) -> bool:
        try:
            async with self._write_lock:
                await self._stdin.send((json.dumps(message) + "\n").encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._die(f"the guard's zygote (pid {self.pid}) stopped reading requests: {type(exc).__name__}")
            return False
        return True

    # ------------------------------------------------------------ one child

    async def run(self, files: _Files, env: dict[str, str], timeout_s: float,
                  memory_limit: int | None, turns: DeviceTurns | None = None) -> ChildOutcome | None:
        """The child's outcome, or None when no child was started (the caller spawns it cold)."""
        if self.dead:
            return None
        request = _Request(next(self._ids))
        self.pending[request.ident] = request
        breaches: list[str] = []
        message = {"op": "spawn", "id": request.ident, "spec": str(files.spec), "cwd": str(files.workdir),
                   "stderr": str(files.stderr), "env": env, "limits": _limits(timeout_s)}
        started = time.monotonic()
        timed_out = False
        try:
            if not await self._send(message):
                request.abandon(self.reason or "the zygote is gone")
            watch = (functools.partial(_watch_request_memory, request, memory_limit, breaches)
                     if memory_limit is not None else None)
            timed_out = await _supervise(request.done.wait, watch, timeout_s, files.gate, turns)
        finally:
            with anyio.CancelScope(shield=True):
                await self._finish(request)
            del self.pending[request.ident]
        seconds = time.monotonic() - started
        if request.pid is None:
            return None
        if request.returncode is None and not timed_out:  # the zygote died while the child ran
            return _outcome(files, None, False, seconds, f"arcengine: {request.error}; the child's group was killed")
        return _outcome(files, request.returncode, timed_out, seconds, "\n".join(breaches))

    async def _finish(self, request: _Request) -> None:
        """Kill the child's group (leftover helpers included) and wait until the zygote has reaped it."""
        with anyio.move_on_after(_REPLY_WAIT_S):
            await request.started.wait()
        if request.pid is not None:
            _kill_group(request.pid)
        with anyio.move_on_after(_REPLY_WAIT_S):
            await request.done.wait()
        if not request.done.is_set():  # a zygote that stops answering is replaced
            self._die(f"the guard's zygote (pid {self.pid}) stopped answering")
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    async def close(self) -> None:
        """EOF asks the zygote to kill its children and leave; SIGKILL if it does not. Never raises."""
        with anyio.CancelScope(shield=True):
            for request in self.pending.values():
                if request.pid is not None:
                    _kill_group(request.pid)
            with contextlib.suppress(Exception):
                await self._stdin.aclose()
            with anyio.move_on_after(_CLOSE_WAIT_S):
                await self.process.wait()
            if self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await self.process.wait()
            self._die("the launcher closed")
            with contextlib.suppress(Exception):
                await self.process.aclose()
            shutil.rmtree(self.home, ignore_errors=True)


def _refusal(hello: dict[str, Any], pid: int) -> str | None:
    """Why a zygote's hello disqualifies it, or None."""
    if hello.get("event") != "ready" or hello.get("pid") != pid:
        return f"unexpected hello from the zygote: {hello!r}"[:300]
    failed = hello.get("failed") or {}
    if zygote.REQUIRED in failed:
        return f"zygote could not import the guard child: {failed[zygote.REQUIRED]}"
    if hello.get("cuda_initialized"):
        return "CUDA was initialised in the zygote before any fork"
    if hello.get("cuda_driver_initialized"):
        return "the CUDA driver was initialised in the zygote before any fork"
    return None


# ---------------------------------------------------------------- the launcher


class ChildLauncher:
    """Runs guard children through a warm zygote, cold when it cannot.

    Use as ``async with ChildLauncher() as launcher: outcome = await launcher.run(spec, ...)``. The zygote starts
    with the first ``run`` (or ``start``), is replaced transparently when it dies, and is killed with its
    children when the block exits, cancellation included. Concurrent ``run`` calls share the zygote.
    """

    def __init__(self, device: str = "cpu", *, use_zygote: bool = True,
                 start_timeout_s: float = ZYGOTE_START_TIMEOUT_S, memory_limit: int | None = None) -> None:
        self.device = device  # the zygote imports Triton in this device's mode (interpreter on the CPU)
        self.memory_limit = memory_limit  # bytes resident per child; None: unlimited
        self.start_timeout_s = start_timeout_s
        self.cold_reason: str | None = None if use_zygote else "the zygote is disabled"
        self.launches: Counter[str] = Counter()  # "zygote" / "cold"
        self._disabled = not use_zygote
        self._zygote: _Zygote | None = None
        self._lock = anyio.Lock()
        self._tasks: TaskGroup | None = None

    @property
    def zygote_pid(self) -> int | None:
        """The live zygote's pid, if there is one."""
        zygote = self._zygote
        return zygote.pid if zygote is not None and not zygote.dead else None

    async def __aenter__(self) -> ChildLauncher:
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._tasks is not None
        tasks, self._tasks = self._tasks, None
        try:
            await self._close_zygote()
        finally:
            tasks.cancel_scope.cancel()  # the reader tasks
            handled = await tasks.__aexit__(exc_type, exc, tb)
        return handled

    async def start(self) -> bool:
        """Start the zygote now rather than with the first child; whether it is serving."""
        return await self._serving() is not None

    async def run(
        self,
        spec: dict[str, Any],
        *,
        device: str,
        timeout_s: float,
        env_extra: dict[str, str] | None = None,
        turns: DeviceTurns | None = None,
    ) -> ChildOutcome:
        """What ``run_child`` returns, for a child forked by the zygote (or spawned cold when it cannot). With
        ``turns``, the child prepares at once and uses the device only in its turn (see arcengine.guard.turns)."""
        with _child_files(spec, gated=turns is not None) as files:
            env = scrubbed_environment(device, files.workdir, env_extra)
            zygote = await self._serving()
            reason = zygote.compatible(env) if zygote is not None else None
            if zygote is not None and reason is None:
                outcome = await zygote.run(files, env, timeout_s, self.memory_limit, turns)
                if outcome is not None:
                    self.launches["zygote"] += 1
                    return outcome
                reason = zygote.reason or "the zygote did not start the child"
            if reason is not None:
                log.info("guard.cold_spawn", reason=reason)
            self.launches["cold"] += 1
            return await _run_cold(files, env, timeout_s, self.memory_limit, turns)

    async def _serving(self) -> _Zygote | None:
        """The live zygote, started or restarted as needed; None when children must be spawned cold."""
        if self._tasks is None:
            raise RuntimeError("enter the launcher (async with ChildLauncher() as launcher) before running children")
        async with self._lock:
            if self._disabled:
                return None
            zygote = self._zygote
            if zygote is not None and zygote.dead:
                log.warning("guard.zygote_restart", reason=zygote.reason)
                self._zygote = None
                await zygote.close()
                zygote = None
            if zygote is None:
                try:
                    zygote = await _Zygote.start(self.start_timeout_s, self.device)
                except ZygoteUnavailable as exc:  # it would fail the same way again: cold from now on
                    self._disabled, self.cold_reason = True, str(exc)
                    log.warning("guard.zygote_unavailable", reason=str(exc))
                    return None
                self._zygote = zygote
                self._tasks.start_soon(zygote.read_replies)
            return zygote

    async def _close_zygote(self) -> None:
        with anyio.CancelScope(shield=True):
            zygote, self._zygote = self._zygote, None
            if zygote is not None:
                await zygote.close()
