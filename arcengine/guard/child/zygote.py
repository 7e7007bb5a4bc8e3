"""The guard's zygote: a warm parent that forks sandbox children with torch, numpy and triton already imported.

Run as ``python -m arcengine.guard.child.zygote --parent PID`` by the engine (sandbox.ChildLauncher), with the same
scrubbed environment as the children. It imports the heavy modules once, never touches CUDA (a forked child
must be the first process to create a context), then serves one JSON object per line on stdin:

    {"op": "spawn", "id": 7, "spec": PATH, "cwd": DIR, "stderr": PATH, "env": {...},
     "limits": {"RLIMIT_CPU": 630, "RLIMIT_CORE": 0}}

and answers one JSON object per line on stdout:

    {"event": "ready", "pid": ..., "preloaded": [...], "failed": {module: error}, "cuda_initialized": false,
     "libcuda_loaded": false, "cuda_driver_initialized": false}    (once, after the imports)
    {"event": "started", "id": 7, "pid": 1234}                    (the child is in its own session)
    {"event": "exited", "id": 7, "pid": 1234, "returncode": -11}  (negative: killed by that signal)
    {"event": "error", "id": 7, "error": "..."}                   (no child was started)

Each forked child drops the zygote's pipes, takes its own session, directory, environment and limits, then
runs exactly what ``python -m arcengine.guard.child.judge SPEC.json`` runs. EOF on stdin, SIGTERM or the engine's
death ends the zygote and kills every child's process group.

Imports are limited to the standard library plus what the child itself imports, as for the child.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import resource
import select
import signal
import sys
import tempfile
import traceback
import warnings
from collections.abc import Mapping
from types import ModuleType
from typing import Any, NoReturn

from arcengine.guard.child import JUDGE, process

# Imported before any fork; triton may be missing (tolerated), the guard child may not. torch._dynamo is what
# torch.compile imports first, and importing it replaces torch.manual_seed (with a wrapper that Dynamo does not
# trace): imported here, the harness seal of a forked child takes that wrapper as its baseline instead of reading
# an honest torch.compile candidate as a patch. It costs the zygote 0.8 s and 70 MB on a CPU machine, about 5 s
# on an H200 machine. Nothing else torch.compile imports (Inductor's code cache, compiler, codegen) changes what
# the seal watches; those stay out, so the paths they fix at import (the code cache's header directory, under
# TMPDIR) are each child's own.
PRELOAD = ("numpy", "torch", "triton", "triton.language", "torch._dynamo", JUDGE)
REQUIRED = JUDGE
_HANDLED = (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT)


class Zygote:
    """The serving loop; one instance per process."""

    def __init__(self, parent: int | None) -> None:
        self.parent = parent
        self.pid = os.getpid()
        self.children: dict[int, int] = {}  # pid -> request id
        self.buffer = b""
        self.stopping = False
        self.start_dir = os.getcwd()
        self.original_handlers = {sig: signal.getsignal(sig) for sig in _HANDLED}
        self.child_module: ModuleType | None = None
        self.wake_r = self.wake_w = -1
        # Replies get a descriptor of their own; fd 1 goes to the log, so a library that prints while being
        # imported cannot garble the protocol.
        self.reply_fd = os.dup(1)
        os.dup2(2, 1)

    # ------------------------------------------------------------ start

    def preload(self) -> dict[str, Any]:
        preloaded, failed = warm_up()
        self.child_module = sys.modules.get(REQUIRED)
        torch = sys.modules.get("torch")
        return {
            "event": "ready",
            "pid": os.getpid(),
            "preloaded": preloaded,
            "failed": failed,
            # torch.cuda.is_initialized() only reads a flag; it creates no context.
            "cuda_initialized": bool(torch is not None and torch.cuda.is_initialized()),
            "libcuda_loaded": _libcuda_loaded(),
            "cuda_driver_initialized": _driver_initialized(),
        }

    def install_signals(self) -> None:
        # SIGCHLD and SIGTERM wake select() through the wakeup pipe instead of interrupting arbitrary code.
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, _ignore)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)

    def _stop(self, signum: int, frame: object) -> None:
        self.stopping = True

    # ------------------------------------------------------------ loop

    def serve(self) -> int:
        hello = self.preload()
        if self.child_module is None:
            self.send(hello)
            return 1
        self.install_signals()
        # Outlives many candidates, so none of them (same user) may ptrace it or read its memory to tamper with
        # the next child; each child is made dumpable again, as a freshly spawned one is.
        _set_dumpable(False)
        # A process a child's native code started in a session of its own leaves the group the engine kills; once
        # its parent is gone it is reparented here rather than to init, and killed (see sweep).
        process.prctl(process.PR_SET_CHILD_SUBREAPER, 1)
        self.send(hello)
        stdin_open = True
        while stdin_open and not self.stopping:
            readable, _, _ = select.select([0, self.wake_r], [], [])
            if self.wake_r in readable:
                with contextlib.suppress(BlockingIOError):
                    while os.read(self.wake_r, 512):
                        pass
                self.reap()
            if 0 in readable:
                data = os.read(0, 65536)
                stdin_open = bool(data)
                self.buffer += data
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    if line.strip():
                        self.handle(line)
            if self.parent is not None and os.getppid() != self.parent:
                break  # the engine is gone; PDEATHSIG normally got here first
        self.shutdown()
        return 0

    def handle(self, line: bytes) -> None:
        try:
            request = json.loads(line)
            ident = int(request["id"])
            if request.get("op") != "spawn":
                raise ValueError(f"unknown op {request.get('op')!r}")
        except (ValueError, KeyError, TypeError) as exc:
            self.send({"event": "error", "id": None, "error": f"bad request: {exc}"})
            return
        try:
            pid = self.spawn(request)
        except OSError as exc:  # fork failed (no memory, no pids): the engine falls back to a cold spawn
            self.send({"event": "error", "id": ident, "error": f"fork failed: {exc}"})
            return
        self.children[pid] = ident
        self.send({"event": "started", "id": ident, "pid": pid})

    def spawn(self, request: Mapping[str, Any]) -> int:
        sync_r, sync_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12 warns about OpenBLAS's idle threads
            pid = os.fork()
        if pid == 0:
            os.close(sync_r)
            self.become_child(request, sync_w)
        os.close(sync_w)
        try:
            os.read(sync_r, 1)  # EOF once the child has its own session (or died): its pid is a group id now
        finally:
            os.close(sync_r)
        return pid

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            ident = self.children.pop(pid, None)
            if ident is not None:
                self.send({"event": "exited", "id": ident, "pid": pid, "returncode": os.waitstatus_to_exitcode(status)})
        self.sweep()

    def sweep(self) -> None:
        """Kill every child of this process that is not a judge it forked: a process that left a child's group and
        outlived its parent was reparented here (a subreaper). Nothing of a judged candidate outlives its child;
        what is killed is reaped at the next SIGCHLD."""
        for pid in process.children_of(self.pid):
            if pid not in self.children:
                _kill_group(pid)

    def shutdown(self) -> None:
        for pid in self.children:
            _kill_group(pid)
        for pid, ident in list(self.children.items()):
            with contextlib.suppress(ChildProcessError):
                _, status = os.waitpid(pid, 0)
                self.send({"event": "exited", "id": ident, "pid": pid, "returncode": os.waitstatus_to_exitcode(status)})
        self.children.clear()
        self.sweep()

    def send(self, message: Mapping[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.reply_fd, data):]
        except OSError:  # the engine stopped listening: stop, killing the children on the way out
            self.stopping = True

    # ------------------------------------------------------------ the forked child

    def become_child(self, request: Mapping[str, Any], sync_w: int) -> NoReturn:
        """Turn this fork into a sandbox child and run the spec; never returns into the zygote's loop."""
        code = 1
        try:
            self._isolate(request, sync_w)
            assert self.child_module is not None
            code = self.child_module.run_spec_file(str(request["spec"]))
        except SystemExit as exc:  # as the interpreter would treat an uncaught one
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            with contextlib.suppress(BaseException):
                traceback.print_exc()
            code = 1
        process.exit_now(code)

    def _isolate(self, request: Mapping[str, Any], sync_w: int) -> None:
        # The request and reply pipes go first: the candidate must not be able to forge replies to the engine.
        os.close(self.reply_fd)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.setsid()
        _die_with(self.pid)  # a zygote that dies takes its unreported children with it
        _set_dumpable(True)
        os.close(sync_w)
        err = os.open(str(request["stderr"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(err, 2)
        signal.set_wakeup_fd(-1)
        for sig, handler in self.original_handlers.items():
            signal.signal(sig, handler)
        os.closerange(3, process.max_fd())  # as subprocess's close_fds: the wakeup pipe, the sync pipe, the rest
        cwd = str(request["cwd"])
        os.chdir(cwd)
        # The child's whole environment (HOME, TMPDIR, TRITON_CACHE_DIR, CUDA_VISIBLE_DEVICES...) before any
        # code reads it; os.environ also updates the C environment that CUDA and compilers see.
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
        tempfile.tempdir = None  # recomputed from the new TMPDIR
        for name, value in dict(request["limits"]).items():
            if name.startswith("RLIMIT_"):
                _lower_limit(getattr(resource, name), int(value))
        self._look_like_a_fresh_child(cwd)

    def _look_like_a_fresh_child(self, cwd: str) -> None:
        """What `python -m arcengine.guard.child.judge SPEC.json` would show after it hid its argument."""
        assert self.child_module is not None
        sys.argv = [str(self.child_module.__file__)]
        if sys.path and sys.path[0] in (self.start_dir, "", cwd):  # as PYTHONSAFEPATH leaves a fresh child's path:
            del sys.path[0]  # no folder a candidate may write, whose module would shadow one imported later
        sys.modules["__main__"] = self.child_module
        self.children.clear()
        self.buffer = b""
        numpy_random = sys.modules.get("numpy.random")
        if numpy_random is not None:  # random's own state is reseeded by os.fork; numpy's is not
            numpy_random.seed()


# ---------------------------------------------------------------- helpers


def warm_up() -> tuple[list[str], dict[str, str]]:
    """Import what every child needs and do the CUDA-free work its first compilation would repeat; returns the
    modules imported and those that failed (with why). Also used by bench/profile_child.py to profile a child
    as the zygote forks it."""
    preloaded: list[str] = []
    failed: dict[str, str] = {}
    for name in PRELOAD:
        try:
            importlib.import_module(name)
            preloaded.append(name)
        except BaseException as exc:  # a broken optional package must not stop the zygote
            failed[name] = f"{type(exc).__name__}: {exc}"
    # Triton hashes its own sources (about a second of file reads) before a process's first compilation; the
    # result is cached per process, so hashing here saves it in every child. Triton's worker pools do the same.
    triton_key = getattr(sys.modules.get("triton.runtime.cache"), "triton_key", None)
    if callable(triton_key):
        try:
            triton_key()
        except Exception as exc:
            failed["triton_key"] = f"{type(exc).__name__}: {exc}"
    # A process's first operator on torch's meta device loads its shape functions (seconds); a gated child's
    # compiler runs candidates on meta inputs (arcengine.guard.child.precompile), so load them here, once. Not for
    # the CPU, where Triton runs in its interpreter and no child is gated.
    torch = sys.modules.get("torch")
    if torch is not None and os.environ.get("TRITON_INTERPRET") != "1":
        try:
            torch.empty(1, device="meta") * 2
        except Exception as exc:
            failed["meta"] = f"{type(exc).__name__}: {exc}"
    # Before the freeze below hides them from it, the dispatcher watch notes torch's libraries (a worker's checks).
    watch = sys.modules.get("arcengine.guard.child.dispatcher_watch")
    if watch is not None:
        watch.install()
    # The imported modules' objects go to the permanent generation: a child's collections then neither skip
    # nor touch them, so they stay shared with the zygote instead of being copied page by page.
    gc.collect()
    gc.freeze()
    return preloaded, failed


def _ignore(signum: int, frame: object) -> None:
    pass


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _lower_limit(which: int, value: int) -> None:
    with contextlib.suppress(ValueError, OSError):
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # an unprivileged process may only lower its hard limit
        resource.setrlimit(which, (value, value))


def _libcuda_loaded() -> bool:
    """Whether the CUDA driver library is mapped: if not, nothing can have initialised CUDA here."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return any("libcuda.so" in line for line in maps)
    except OSError:
        return False


_CUDA_SUCCESS = 0  # what any driver call returns once cuInit has run (3, NOT_INITIALIZED, before)


def _driver_initialized() -> bool:
    """Whether cuInit has run in this process. Only that makes forking unsafe: torch builds that link the
    driver library map it at import without initialising it. The probe is a driver call that fails (and
    initialises nothing) before cuInit."""
    if not _libcuda_loaded():
        return False
    try:
        driver = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD)  # the library already mapped, never a new one
    except OSError:
        return True  # mapped under another name and not reachable: assume the worst
    count = ctypes.c_int(0)
    return int(driver.cuDeviceGetCount(ctypes.byref(count))) == _CUDA_SUCCESS


def _die_with(parent: int) -> None:
    """SIGKILL this process when its parent dies (Linux); exit now if the parent is already gone."""
    process.prctl(process.PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != parent:
        os._exit(1)


def _set_dumpable(dumpable: bool) -> None:
    process.prctl(process.PR_SET_DUMPABLE, int(dumpable))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parent = int(args[1]) if len(args) == 2 and args[0] == "--parent" else None
    if parent is not None:
        _die_with(parent)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return Zygote(parent).serve()


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
