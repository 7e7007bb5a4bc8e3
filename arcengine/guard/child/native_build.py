"""C++/CUDA that a module compiles with ``torch.utils.cpp_extension.load_inline``: built once per content.

A worker installs ``cached_load_inline`` in place of torch's ``load_inline`` before any module of a role is
imported, so a candidate that calls it (the KernelBench route) builds in a folder named by what determines the
binary: its sources, functions and flags, the compilers' versions, torch, Python and the GPU architecture. A
second identical build, in this child or a later one of the campaign (the incumbent's, a KEEP's confirmation),
finds ninja's outputs up to date and only loads them. A build has a time limit of its own, and a failed build
fails with the compiler's first error lines, recorded in its folder so that the same source fails at once the
next time instead of compiling again.

The folder is shared like the Triton cache: any process of the user's can write there (see docs/guard.md).
Imports are limited to the standard library and torch, as for the child.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arcengine.guard.child import process

# A build's own limit, under what the judge waits for (a compiler fork: 120 s; a worker's import without one:
# 180 s), so a slow build fails with its own reason rather than as a killed process.
BUILD_LIMIT_S = {"compiler": 100.0, "import": 150.0}
CACHE_ENV = "ARCENGINE_NATIVE_CACHE"  # the campaign's shared build folder; a child's private one without it
FAILED = "arcengine-build-failed.txt"  # a failed build's reason, kept beside its sources
_ERROR_LINES = 6
_LINE_CHARS = 160
_ERROR = re.compile(r"\berror\b|\bError\b|undefined reference|fatal", re.IGNORECASE)
_NOT_COMPILER = ("Error building extension", "[", "FAILED:", "ninja:", "subprocess.CalledProcessError")
# Arguments that change nothing in the binary: left out of the key.
_UNKEYED = {"build_directory", "verbose", "keep_intermediates"}


class NativeBuildError(RuntimeError):
    """A build that failed or ran out of time; the message is the reason an author reads."""


def install(limit_s: float) -> None:
    """Route ``torch.utils.cpp_extension.load_inline`` (wherever a module imports it from) through the cache, each
    build limited to ``limit_s``."""
    import torch.utils.cpp_extension as cpp_extension

    original = getattr(cpp_extension.load_inline, "__wrapped__", cpp_extension.load_inline)
    cached = functools.partial(cached_load_inline, original, limit_s)
    cpp_extension.load_inline = functools.update_wrapper(cached, original)


def cached_load_inline(load_inline: Any, limit_s: float, name: str, cpp_sources: Any, cuda_sources: Any = None,
                       **options: Any) -> Any:
    """``load_inline`` built in the folder its content names, under a lock, with a time limit."""
    keyed = {"name": name, "cpp_sources": cpp_sources, "cuda_sources": cuda_sources,
             **{k: v for k, v in options.items() if k not in _UNKEYED}}
    folder = cache_root() / f"{name}-{build_key(keyed, bool(cuda_sources))[:20]}"
    folder.mkdir(parents=True, exist_ok=True)
    options = {**options, "build_directory": str(folder), "verbose": False}
    with _exclusive(folder):
        failed = folder / FAILED
        if failed.exists():
            raise NativeBuildError(f"{failed.read_text()} (the same build failed before)")
        # torch's own lock file, left by a build that was killed: this lock says nobody else is building.
        (folder / "lock").unlink(missing_ok=True)
        try:
            with _time_limit(limit_s):
                return load_inline(name, cpp_sources, cuda_sources, **options)
        except _OutOfTime:
            reason = f"native build of '{name}' took more than {limit_s:.0f} s"
        except (RuntimeError, subprocess.SubprocessError) as exc:
            if "Error building extension" not in str(exc):
                raise  # not the compiler: an error of the module's own (importing, or its arguments)
            reason = f"native build of '{name}' failed: {compiler_errors(str(exc), folder)}"
        failed.write_text(reason)
        raise NativeBuildError(reason)


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "arcengine-native")


def build_key(arguments: dict[str, Any], cuda: bool) -> str:
    """What the binary depends on, hashed: the call's arguments and the tools that turn them into code."""
    tools = {"python": sys.version, "torch": _torch_versions(), "cxx": _tool_version(os.environ.get("CXX", "c++")),
             "arch": os.environ.get("TORCH_CUDA_ARCH_LIST", ""), "cflags": os.environ.get("CFLAGS", "")}
    if cuda:
        tools["nvcc"] = _tool_version(_nvcc())
    text = json.dumps({"arguments": arguments, "tools": tools}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def compiler_errors(output: str, folder: Path) -> str:
    """The compiler's first error lines, without the build folder's path, each clipped: what an author needs."""
    prefix = str(folder) + os.sep
    lines = [line.strip().replace(prefix, "") for line in output.splitlines()]
    # Not torch's own summary, ninja's progress lines (the commands it ran) or its exit notes.
    errors = [line for line in lines if _ERROR.search(line) and not line.startswith(_NOT_COMPILER)]
    chosen = errors[:_ERROR_LINES] or [line for line in lines if line][-_ERROR_LINES:]
    return " | ".join(line[:_LINE_CHARS] for line in chosen)


@functools.cache
def _torch_versions() -> str:
    import torch

    return f"{torch.__version__} cuda {torch.version.cuda} hip {torch.version.hip}"


@functools.cache
def _tool_version(tool: str) -> str:
    """The compiler's own version line (its path alone would not change when it is upgraded in place)."""
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return f"{tool}: not runnable"
    return f"{tool}: {done.stdout.strip()}"


def _nvcc() -> str:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    return str(Path(home) / "bin" / "nvcc") if home else "nvcc"


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """One build of a folder at a time, across processes; the kernel drops the lock of a process that dies."""
    with open(folder.parent / f"{folder.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


class _OutOfTime(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Kill what the build started and raise _OutOfTime in it after ``seconds`` (in the main thread only, where
    signals are delivered). ``subprocess.run`` would kill ninja as the exception passes, but not ninja's compilers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire() -> None:
        # Now, while the compilers are still ours: orphaned once ninja dies, they would build on.
        for child in process.children_of(os.getpid()):
            process.kill_tree(child)
        raise _OutOfTime

    with process.alarm(seconds, expire):
        yield
