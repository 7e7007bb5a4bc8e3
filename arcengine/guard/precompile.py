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
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

COMPILE_LIMIT_S = 120.0  # the child stops waiting for its compiler after this and goes on without it


@contextlib.contextmanager
def compile_only() -> Iterator[None]:
    """Triton launches compile and return without running: a plain kernel for its arguments, an autotuned one
    for every config it would try (without timing any, so no choice is made)."""
    try:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction
    except ImportError:  # no triton: nothing to compile
        yield
        return
    launch, tune = JITFunction.run, Autotuner.run

    def compile_kernel(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return launch(self, *args, grid=grid, warmup=True, **kwargs)

    def compile_configs(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("warmup", None)  # Autotuner.warmup passes its own
        return self.warmup(*args, **kwargs)

    JITFunction.run, Autotuner.run = compile_kernel, compile_configs
    try:
        yield
    finally:
        JITFunction.run, Autotuner.run = launch, tune


class Compiler:
    """The forked compiler, seen from the child."""

    def __init__(self, compile_all: Callable[[], None]) -> None:
        self.started = time.monotonic()
        self.pid = os.fork()
        if self.pid == 0:  # the compiler: never returns into the child's code
            try:
                compile_all()
            finally:
                os._exit(0)

    def wait(self, limit_s: float = COMPILE_LIMIT_S) -> float:
        """Wait for the compiler to finish (killing it once ``limit_s`` have passed since it started); the
        seconds waited."""
        waited = time.monotonic()
        remaining = max(0.0, limit_s - (waited - self.started))
        pidfd = os.pidfd_open(self.pid)  # readable once the compiler has exited
        try:
            if not select.select([pidfd], [], [], remaining)[0]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
        finally:
            os.close(pidfd)
        os.waitpid(self.pid, 0)
        return time.monotonic() - waited
