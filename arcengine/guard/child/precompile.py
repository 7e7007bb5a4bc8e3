"""Compile a candidate's Triton kernels before its turn on the GPU, with nothing run there.

A gated child (see arcengine.guard.turns) forks a compiler before it touches CUDA. The compiler imports the
modules and calls them on shape-only inputs (torch's meta device) with every Triton launch turned into a
compilation: kernels land in the Triton cache that the child shares, so its first real call loads them instead
of compiling while it holds the GPU. Running in a fork of its own, the compiler's calls leave no state behind
in the modules the child judges (a buffer cached on the meta device, an autotuner's choice made without
timing). It is best effort: a call that needs real values (``.item()``, data-dependent shapes) stops at that
point, and what it did not reach compiles at the first real call, as without a compiler.

Imports are limited to the standard library, torch and triton, as for the child.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

COMPILE_LIMIT_S = 120.0  # the child stops waiting for its compiler after this and goes on without it


@contextlib.contextmanager
def compile_only(counts: dict[str, float] | None = None) -> Iterator[None]:
    """Triton launches compile and return without running: a plain kernel for its arguments, an autotuned one
    for every config it would try (without timing any, so no choice is made). ``counts`` gets the launches
    and the seconds they took."""
    try:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction
    except ImportError:  # no triton: nothing to compile
        yield
        return
    launch, tune = JITFunction.run, Autotuner.run
    counts = counts if counts is not None else {}

    def compile_kernel(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return launch(self, *args, grid=grid, warmup=True, **kwargs)
        finally:
            counts["launches"] = counts.get("launches", 0) + 1
            counts["launch_s"] = counts.get("launch_s", 0.0) + time.monotonic() - started

    def compile_configs(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("warmup", None)  # Autotuner.warmup passes its own
        return self.warmup(*args, **kwargs)

    JITFunction.run, Autotuner.run = compile_kernel, compile_configs
    try:
        yield
    finally:
        JITFunction.run, Autotuner.run = launch, tune


class Compiler:
    """The forked compiler, seen from the child. ``compile_all`` returns where its time went (seconds by step);
    the compiler sends that back as it finishes, before its exit: a process's CUDA teardown can take a while,
    and the child has no need to wait for it."""

    def __init__(self, compile_all: Callable[[], dict[str, float]]) -> None:
        self.started = time.monotonic()
        report_r, report_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the compiler: never returns into the child's code
            try:
                os.close(report_r)
                os.write(report_w, json.dumps(compile_all()).encode())
            finally:
                os._exit(0)
        os.close(report_w)
        self._report = report_r

    def wait(self, limit_s: float = COMPILE_LIMIT_S) -> tuple[float, dict[str, float]]:
        """Wait for the compiler's report (killing it once ``limit_s`` have passed since it started); the
        seconds waited and the report ({} if it died or was killed)."""
        waited = time.monotonic()
        remaining = max(0.0, limit_s - (waited - self.started))
        report: dict[str, float] = {}
        try:
            if select.select([self._report], [], [], remaining)[0]:
                with contextlib.suppress(ValueError):  # empty: it died before reporting
                    report = json.loads(os.read(self._report, 1 << 16) or b"{}")
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
        finally:
            os.close(self._report)
        return time.monotonic() - waited, report

    def reap(self) -> float:
        """Wait for the compiler's exit; the seconds waited. It is killed first: once its report is in (or its time
        is up) it has nothing left to do, and its code could have written that report and gone on."""
        waited = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        return time.monotonic() - waited
