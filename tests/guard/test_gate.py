"""arcengine/guard/gate.py check_source: the static cascade gate."""

from __future__ import annotations

import pytest

from arcengine.guard.gate import check_source

TRITON_CANDIDATE = '''\
"""A normal candidate: Triton plus torch, TUNABLES, helpers, os.environ read."""
import math
import os

import torch
import triton
import triton.language as tl

BLOCK_N = 256
TUNABLES = {"BLOCK_N": [128, 256, 512]}
DEBUG = os.environ.get("KERNEL_DEBUG", "0") == "1"


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n
    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + cols, x * 2.0, mask=mask)


def _grid(n):
    return (math.ceil(n / BLOCK_N),)


def run(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _scale_kernel[_grid(x.numel())](x, out, x.numel(), BLOCK_N=BLOCK_N)
    return out
'''

RUN = "\n\ndef run(x):\n    return x\n"


def test_accepts_a_normal_triton_candidate() -> None:
    result = check_source(TRITON_CANDIDATE)
    assert result.ok, result.reason
    assert result.reason == ""


def test_accepts_a_plain_torch_candidate() -> None:
    assert check_source("import torch\nimport torch.nn.functional as F\n\n"
                        "def run(x, w):\n    return F.layer_norm(x, x.shape[-1:], w)\n").ok


def test_accepts_run_bound_by_assignment_and_async_def() -> None:
    assert check_source("import torch\nrun = torch.neg\n").ok
    assert check_source("async def run(x):\n    return x\n").ok


def test_rejects_a_syntax_error() -> None:
    result = check_source("def run(x):\n    return x +\n")
    assert not result.ok
    assert result.reason.startswith("does not parse: line 2")


def test_rejects_a_missing_run() -> None:
    result = check_source("import torch\n\ndef forward(x):\n    return x\n")
    assert not result.ok
    assert "run" in result.reason


def test_rejects_a_nested_run_only() -> None:
    result = check_source("class K:\n    def run(self, x):\n        return x\n")
    assert not result.ok and "no module-level run" in result.reason


@pytest.mark.parametrize(
    ("snippet", "names"),
    [
        ("import ctypes", ["ctypes"]),
        ("from ctypes import CDLL", ["CDLL", "ctypes"]),
        ("import ctypes.util", ["ctypes"]),
        ("import subprocess", ["subprocess"]),
        ("import subprocess as sp", ["subprocess"]),
        ("from subprocess import run as _run", ["subprocess"]),
        ("import os\nos.system('true')", ["os.system"]),
        ("import os\nos.popen('true')", ["os.popen"]),
        ("import os\nos._exit(0)", ["os._exit"]),
        ("import os\nos.fork()", ["os.fork"]),
        ("import os\nos.execv('/bin/true', ['true'])", ["os.execv"]),
        ("import os\nf = os.system", ["os.system"]),
        ("exec('x = 1')", ["exec"]),
        ("eval('1 + 1')", ["eval"]),
        ("compile('1', 'f', 'eval')", ["compile"]),
        ("__import__('os')", ["__import__"]),
        ("import importlib", ["importlib"]),
        ("import importlib.util", ["importlib"]),
        ("from importlib import import_module", ["importlib"]),
        ("from torch.utils.cpp_extension import load_inline", ["load_inline", "torch.utils.cpp_extension"]),
        ("from torch.utils import cpp_extension", ["cpp_extension"]),
        ("import torch.utils.cpp_extension", ["torch.utils.cpp_extension"]),
        ("import torch\ntorch.utils.cpp_extension.load_inline('m', '')", ["torch.utils.cpp_extension"]),
        ("import multiprocessing", ["multiprocessing"]),
        ("from multiprocessing import Process", ["multiprocessing"]),
        ("import cffi", ["cffi"]),
        ("import socket", ["socket"]),
        ("import torch\nx = torch.__builtins__", ["__builtins__"]),
    ],
)
def test_rejects_forbidden_constructs_naming_them(snippet: str, names: list[str]) -> None:
    result = check_source(snippet + RUN)
    assert not result.ok, snippet
    assert result.reason.startswith("forbidden:")
    for name in names:
        assert name in result.reason, (snippet, result.reason)
    assert "line " in result.reason


def test_forbidden_call_inside_run_reports_its_line() -> None:
    source = "import os\n\n\ndef run(x):\n    os.system('nvidia-smi')\n    return x\n"
    result = check_source(source)
    assert not result.ok
    assert "os.system" in result.reason and "(line 5)" in result.reason


def test_similar_but_allowed_names_pass() -> None:
    source = ("import os\nimport torch\n\npath = os.path.join('a', 'b')\nn = os.cpu_count()\n"
              "evaluate = 1\nexecutor = None\nsubprocess_count = 0\n" + RUN)
    result = check_source(source)
    assert result.ok, result.reason


def test_rejects_os_system_imported_by_name() -> None:
    assert not check_source("from os import system\n\ndef run(x):\n    system('true')\n    return x\n").ok


def test_rejects_os_system_through_an_alias() -> None:
    assert not check_source("import os as o\n\ndef run(x):\n    o.system('true')\n    return x\n").ok


@pytest.mark.parametrize("snippet", ["import builtins\nbuiltins.exec('x = 1')",
                                     "from builtins import exec as e\ne('x = 1')"])
def test_rejects_exec_through_builtins(snippet: str) -> None:
    assert not check_source(snippet + RUN).ok


RUN = "\n\ndef run(x):\n    return x\n"


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\ntorch.allclose = lambda *a, **k: True", "monkey-patches torch.allclose"),
        ("import time\ntime.perf_counter_ns = lambda: 0", "monkey-patches time.perf_counter_ns"),
        ("import torch as t\nt.cuda.synchronize = print", "monkey-patches torch.cuda.synchronize"),
        ("import torch\nsetattr(torch.cuda, 'synchronize', print)", "monkey-patches torch.cuda"),
        ("import threading", "imports threading"),
        ("from concurrent.futures import ThreadPoolExecutor", "concurrent"),
        ("import gc", "imports gc"),
        ("import sys\nframe = sys._getframe(1)", "sys._getframe"),
        ("def f():\n    return f.__globals__", "__globals__"),
        ("x = ().__class__.__mro__", "__mro__"),
        ("import sys\nsys.exit(0)", "sys.exit"),
    ],
)
def test_rejects_patching_threads_and_frame_walking(snippet: str, needle: str) -> None:
    result = check_source(snippet + RUN)
    assert not result.ok and needle in result.reason


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\ns = torch.cuda.Stream()", "CUDA stream"),
        ("import os\nkey = os.environ.get('X')", "environment"),
        ("f = open('out.txt', 'w')", "writes a file"),
        ("import torch\ntry:\n    y = 1\nexcept Exception:\n    y = torch.softmax(torch.ones(1), 0)",
         "falls back to PyTorch"),
    ],
)
def test_warns_on_suspicious_but_allowed_code(snippet: str, needle: str) -> None:
    result = check_source(snippet + RUN)
    assert result.ok
    assert any(needle in w for w in result.warnings), result.warnings


def test_plain_attribute_assignment_on_own_objects_is_fine() -> None:
    source = "import torch\n\nclass Box:\n    pass\n\nbox = Box()\nbox.value = 3\n" + RUN
    assert check_source(source).ok and not check_source(source).warnings


@pytest.mark.parametrize("snippet", ["import torch\nf = torch.compile(lambda x: x)", "import re\np = re.compile('a')"])
def test_compile_methods_of_libraries_are_allowed(snippet: str) -> None:
    assert check_source(snippet + RUN).ok


def test_rejects_reaching_the_guard_itself() -> None:
    result = check_source("from arcengine.guard import correctness" + RUN)
    assert not result.ok and "arcengine" in result.reason
