"""The load_inline build cache (arcengine.guard.child.native_build): keys, compiler errors, the time limit, and real
C++ builds in fresh processes (g++ builds on the CPU; skipped where no C++ compiler is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from arcengine.guard.child import native_build

TWICE = "#include <torch/extension.h>\ntorch::Tensor twice(torch::Tensor x) { return x * 2; }\n"
# The cache's own tests build with pybind11 alone (no_implicit_headers, their own module definition): a few seconds
# where torch's headers take twenty on two cores, and the cache treats every source alike.
LIGHT = ("#include <pybind11/pybind11.h>\nint twice(int x) { return x * 2; }\n"
         "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"twice\", &twice); }\n")
BROKEN = "#include <pybind11/pybind11.h>\nint twice(int x) { return x * 2 + missing_name; }\n"
needs_compiler = pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")


def _key(**changes: object) -> str:
    arguments = {"name": "twice", "cpp_sources": TWICE, "cuda_sources": None, "extra_cflags": ["-O3"], **changes}
    return native_build.build_key(arguments, cuda=False)


def test_the_key_follows_what_the_binary_depends_on(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _key() == _key()
    assert _key(cpp_sources=TWICE + "// another line\n") != _key()
    assert _key(extra_cflags=["-O2"]) != _key()
    assert _key(name="thrice") != _key()
    before = _key()
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    assert _key() != before


def test_compiler_errors_keep_the_first_error_lines_without_the_build_folder(tmp_path: Path) -> None:
    output = "\n".join([
        "Error building extension 'twice': [1/2] c++ -MMD -MF main.o.d -c main.cpp -o main.o",
        "FAILED: main.o",
        f"{tmp_path}/main.cpp:2:52: error: 'missing_name' was not declared in this scope",
        "ninja: build stopped: subcommand failed.",
    ])
    expected = "main.cpp:2:52: error: 'missing_name' was not declared in this scope"
    assert native_build.compiler_errors(output, tmp_path) == expected


def _build(cache: Path, source: str, *, limit_s: float = 600.0) -> subprocess.CompletedProcess[str]:
    """One load_inline of ``source`` through the cache, in a fresh process as a worker would run it (a loaded
    2-core machine can take minutes for a build that takes 20 s alone)."""
    script = textwrap.dedent(f"""
        import sys
        from arcengine.guard.child import native_build
        native_build.install({limit_s!r})
        import torch
        from torch.utils.cpp_extension import load_inline
        try:
            light = "pybind11/pybind11.h" in {source!r}
            module = load_inline("twice", cpp_sources=[{source!r}], functions=None if light else ["twice"],
                                 no_implicit_headers=light)
        except native_build.NativeBuildError as exc:
            print("ERROR", exc)
            sys.exit(1)
        print("OK", module.twice(3) if light else module.twice(torch.ones(2)).tolist())
    """)
    env = {**os.environ, native_build.CACHE_ENV: str(cache)}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900,
                          check=False)


def _binaries(cache: Path) -> dict[Path, int]:
    return {path: path.stat().st_mtime_ns for path in cache.glob("*/*.so")}


@needs_compiler
def test_a_second_identical_build_loads_without_compiling(tmp_path: Path) -> None:
    first = _build(tmp_path, LIGHT)
    assert first.stdout.strip() == "OK 6", first.stderr[-2000:]
    built = _binaries(tmp_path)
    assert len(built) == 1
    second = _build(tmp_path, LIGHT)
    assert second.stdout.strip() == "OK 6", second.stderr[-2000:]
    assert _binaries(tmp_path) == built  # the same binary, not rewritten
    assert not list(tmp_path.glob("*/lock"))


@needs_compiler
def test_a_compile_error_names_the_compilers_line_and_is_not_compiled_twice(tmp_path: Path) -> None:
    first = _build(tmp_path, BROKEN)
    assert first.returncode == 1, first.stderr[-2000:]
    assert "native build of 'twice' failed: main.cpp:" in first.stdout and "error:" in first.stdout
    assert "missing_name" in first.stdout and str(tmp_path) not in first.stdout
    (recorded,) = tmp_path.glob(f"*/{native_build.FAILED}")
    objects = list(recorded.parent.glob("*.o"))
    second = _build(tmp_path, BROKEN)
    assert second.returncode == 1
    assert "missing_name" in second.stdout and "(the same build failed before)" in second.stdout
    assert list(recorded.parent.glob("*.o")) == objects  # nothing compiled the second time


@needs_compiler
def test_a_build_past_its_limit_fails_and_leaves_no_compiler_running(tmp_path: Path) -> None:
    slow = _build(tmp_path, TWICE, limit_s=0.5)  # torch's headers alone take seconds to compile
    assert slow.returncode == 1, slow.stderr[-2000:]
    assert "native build of 'twice' took more than 0 s" in slow.stdout
    compilers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False)
    assert compilers.stdout.strip() == ""
