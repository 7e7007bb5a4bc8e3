"""arcengine/guard/gate.py check_source: the static cascade gate."""

from __future__ import annotations

from pathlib import Path

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
        ("import gc\nobjects = gc.get_objects()", "gc.get_objects"),  # gc.collect() alone is allowed
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
        # C++/CUDA from source, the KernelBench route: allowed, said to be native code however it is reached
        ("from torch.utils.cpp_extension import load_inline", "compiles native code"),
        ("from torch.utils import cpp_extension", "compiles native code"),
        ("import torch.utils.cpp_extension", "compiles native code"),
        ("import torch\nm = torch.utils.cpp_extension.load_inline('m', '')", "compiles native code"),
        ("import torch\ncpp = getattr(torch.utils, 'cpp_extension')", "compiles native code"),
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
    result = check_source("from arcengine.guard.child import correctness" + RUN)
    assert not result.ok and "arcengine" in result.reason


@pytest.mark.parametrize(("snippet", "needle"), [
    ("from cupti import cupti\n", "cupti"),  # flushing or disabling the records the guard times with
    ("import cupti.cupti as c\n", "cupti"),
    ("import pynvml\n", "pynvml"),  # clocks and power limits, lowered for whoever runs next
    ("from cuda.bindings import nvml\n", "nvml"),
])
def test_rejects_the_timers_records_and_the_gpus_clocks(snippet: str, needle: str) -> None:
    result = check_source(snippet + RUN)
    assert not result.ok and needle in result.reason, result


def test_nvrtc_and_the_driver_through_cuda_bindings_stay_allowed() -> None:
    assert check_source("from cuda.bindings import driver, nvrtc\n" + RUN).ok


# ---------------------------------------------------------------- second pass: dynamic spellings
# Each class of cheat in several spellings; the needle is what the reason must name.


def _rejected(snippet: str, needle: str) -> None:
    result = check_source(snippet + RUN)
    assert not result.ok, f"accepted: {snippet!r}"
    assert needle in result.reason, (snippet, result.reason)


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import sys\nf = getattr(sys, '_getframe')(1)", "sys._getframe"),
        ("import sys\nm = getattr(sys, 'modules')", "sys.modules"),
        ("import sys\nm = vars(sys)['modules']", "vars"),
        ("import sys\nf = sys.__dict__['_getframe']", "sys.__dict__"),
        ("import sys\nname = 'mod' + 'ules'\nm = getattr(sys, name)", "computed attribute name"),
        ("from sys import _getframe", "_getframe"),
        ("import sys as s\nf = s._getframe(0)", "sys._getframe"),
        ("import sys\nModule = type(sys)", "sys as a value"),
        ("import sys\nalias = sys\nm = alias.modules", "sys as a value"),
        ("import os\nm = os.sys.modules", "sys.modules"),
        ("import torch\nm = torch.sys.modules", "sys.modules"),
        ("import random\nm = random._sys.modules", "sys.modules"),
        ("from os import sys as s\nm = s.modules", "sys.modules"),
        ("import sys\nframes = sys._current_frames()", "sys._current_frames"),
        ("import sys\nframe = sys.exc_info()[2].tb_frame", "tb_frame"),
        ("import sys\ninfo = sys.exc_info()", "sys.exc_info"),
        ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    tb = e.__traceback__", "__traceback__"),
        ("def g():\n    yield 1\nframe = g().gi_frame", "gi_frame"),
        ("async def c():\n    pass\nframe = c().cr_frame", "cr_frame"),
        ("async def a():\n    yield 1\nframe = a().ag_frame", "ag_frame"),
        ("def f(frame):\n    return frame.f_back", "f_back"),
        ("def f(tb):\n    return tb.tb_next", "tb_next"),
        ("code = (lambda: 0).__code__", "__code__"),
        ("def f(code):\n    return code.co_consts", "co_consts"),
        ("b = globals()['__built' + 'ins__']", "globals"),
        ("names = locals()", "locals"),
        ("import torch\nnamespace = torch.__dict__", "__dict__"),
        ("import torch\nnamespace = vars(torch)", "vars"),
        ("import functools\nimport sys\nm = functools.reduce(getattr, ['modules'], sys)", "getattr other than"),
        ("import operator\nget = operator.attrgetter('f_back')", "operator.attrgetter"),
        ("from operator import attrgetter", "attrgetter"),
        ("import string\nf = string.Formatter().get_field('0.f_back', (None,), {})", "string.Formatter"),
        ("def f(e):\n    match e:\n        case BaseException(__traceback__=tb):\n            return tb", "match"),
        ("def f(x):\n    return object.__getattribute__(x, 'f_back')", "__getattribute__"),
        ("base = ().__class__.__base__", "__base__"),
        ("import builtins", "builtins"),
        ("b = len.__self__", "__self__"),
        ("loader = __loader__", "__loader__"),
        ("name = 'f_' + 'back'\nkey = 'f_locals'", "f_locals"),
        ("from sys import *", "imports *"),
    ],
)
def test_rejects_reaching_frames_and_sys_dynamically(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\nlib = torch.library.Library('aten', 'IMPL')", "torch.library.Library"),
        ("from torch.library import Library\nlib = Library('aten', 'FRAGMENT')", "imports Library"),
        ("import torch\nlib = getattr(torch.library, 'Library')('aten', 'IMPL')", "torch.library.Library"),
        ("import torch\n@torch.library.impl('aten::mul.Tensor', 'CPU')\ndef f(a, b):\n    return a",
         "registers aten::mul.Tensor"),
        ("import torch.library as L\nL.impl('aten::mul.Tensor', 'CPU', print)", "registers aten::mul.Tensor"),
        ("import torch\ntorch.library.register_kernel('aten::mul.Tensor', 'cpu', print)", "registers aten::mul"),
        ("from torch.library import register_fake\nregister_fake('aten::mul.Tensor')(print)", "registers aten::mul"),
        ("import torch\nop = 'aten::mul.Tensor'\ntorch.library.register_kernel(op, 'cpu', print)",
         "not named by a constant"),
        ("import torch\ntorch.library.register_fake(torch.ops.aten.mul.Tensor, print)", "not named by a constant"),
        ("import torch\nreg = torch.library.register_kernel\nreg('mylib::x', 'cpu', print)",
         "other than by calling it"),
        ("import torch\nimpl = getattr(torch.library, 'impl')", "other than by calling it"),
        ("import torch\ntorch.library.define('aten::spin(Tensor x) -> Tensor')", "torch's aten namespace"),
        ("import torch\n@torch.library.custom_op('aten::fast_mul', mutates_args=())\ndef f(x):\n    return x",
         "torch's aten namespace"),
        ("import torch\n@torch.library.custom_op('prims::mine', mutates_args=())\ndef f(x):\n    return x",
         "torch's prims namespace"),
        ("import torch\ntorch._C._dispatch_reset_python_kernel_registrations()", "torch._C"),
        ("from torch import _C", "_C"),
        ("import torch._C", "torch._C"),
        ("import torch\nc = getattr(torch, '_C')", "torch._C"),
        ("import torch\nop = torch.ops.aten.mul.Tensor\nop.py_impl(torch._C.DispatchKey.CPU)", "py_impl"),
        ("import torch\nop = getattr(torch.ops.aten, 'mul')\nop.Tensor.py_impl(0)(print)", "py_impl"),
        ("import torch\ntorch.ops.aten.mul.Tensor.py_kernels[0] = print", "py_kernels"),
        ("import torch\ntorch.ops.load_library('/tmp/evil.so')", "load_library"),
        ("import torch\nfrom torch._ops import HigherOrderOperator", "torch._ops"),
        ("import torch\ntorch._library.custom_ops._maybe_get_opdef('aten::mul')", "torch._library"),
    ],
)
def test_rejects_registering_for_existing_operators(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\nfut = torch.jit.fork(torch.neg, torch.ones(1))", "torch.jit.fork"),
        ("import torch\nj = torch.jit\nfut = j._fork(torch.neg, torch.ones(1))", "torch.jit._fork"),
        ("from torch.jit import fork", "torch.jit"),
        ("import torch\n@torch.jit.script\ndef f(n: int) -> torch.jit.Future[int]:\n    return n", "torch.jit.Future"),
        ("from torch.futures import Future", "torch.futures"),
        ("import torch\nf = torch.futures.collect_all([])", "torch.futures"),
        ("from cuda.bindings import driver\ndriver.cuLaunchHostFunc(0, print, None)", "cuLaunchHostFunc"),
        ("from cuda.bindings import runtime\nruntime.cudaStreamAddCallback(0, print, None, 0)",
         "cudaStreamAddCallback"),
        ("import cupy\ncupy.cuda.get_current_stream().launch_host_func(print, None)", "launch_host_func"),
    ],
)
def test_rejects_callbacks_on_a_librarys_threads(snippet: str, needle: str) -> None:
    """TorchScript's tasks and futures, and CUDA host functions, run on threads a library started before the call:
    no count of threads sees them (guard/child/threads.py checks their frames at run time too)."""
    _rejected(snippet, needle)


def test_torchscript_without_tasks_passes() -> None:
    source = "import torch\n@torch.jit.script\ndef f(x: torch.Tensor) -> torch.Tensor:\n    return x * 2 + 1\n"
    assert check_source(source + "def run(x):\n    return f(x)\n").ok


TORCH_FUNCTION = "    @classmethod\n    def __torch_function__(cls, func, types, args=(), kw=None):\n        return 1"


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("from torch.overrides import TorchFunctionMode", "torch.overrides"),
        ("import torch\nclass M(torch.overrides.TorchFunctionMode):\n    pass", "torch.overrides"),
        ("import torch\nM = getattr(torch.overrides, 'TorchFunctionMode')", "torch.overrides"),
        ("from torch.utils._python_dispatch import TorchDispatchMode", "torch.utils._python_dispatch"),
        ("import torch.utils._python_dispatch as d", "torch.utils._python_dispatch"),
        ("from torch.fx.experimental.proxy_tensor import TorchDispatchMode", "TorchDispatchMode"),
        ("import torch\nclass T(torch.Tensor):\n" + TORCH_FUNCTION, "__torch_function__"),
        ("import torch\nclass T(torch.Tensor):\n    __torch_dispatch__ = print", "__torch_dispatch__"),
        ("import torch\nclass T(torch.Tensor):\n    pass\nT.__torch_dispatch__ = classmethod(print)",
         "__torch_dispatch__"),
        ("import torch\nT = type('T', (torch.Tensor,), {'__torch_function__': print})", "type()"),
        ("import torch\nclass T(torch.Tensor):\n    pass\nsetattr(T, '__torch_function__', print)",
         "__torch_function__"),
        ("import torch\nns = dict(__torch_function__=print)", "__torch_function__"),
        ("import torch\ntorch._C._push_on_torch_function_stack(None)", "torch._C"),
        ("import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode", "torch._subclasses"),
    ],
)
def test_rejects_intercepting_operators(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\nsetattr(torch, 'allclose', print)", "monkey-patches torch.allclose"),
        ("import torch\nname = 'allclose'\nsetattr(torch, name, print)", "monkey-patches torch.allclose"),
        ("import torch\ndef f(name):\n    setattr(torch, name, print)", "computed attribute name"),
        ("import torch\ndelattr(torch, 'allclose')", "monkey-patches torch.allclose"),
        ("import torch\ndel torch.allclose", "monkey-patches torch.allclose"),
        ("import torch\ntorch.Tensor.add = print", "monkey-patches torch.Tensor.add"),
        ("import torch\nT = torch.Tensor\nT.add = print", "monkey-patches torch.Tensor.add"),
        ("import torch\ntorch.allclose, y = print, 1", "monkey-patches torch.allclose"),
        ("import torch\nfor torch.allclose in [print]:\n    pass", "monkey-patches torch.allclose"),
        ("import torch\nobject.__setattr__(torch.Tensor, 'add', print)", "__setattr__"),
        ("import torch\ntype.__setattr__(torch.Tensor, 'add', print)", "__setattr__"),
        ("def f(x, fake):\n    x.__class__ = fake", "assigns __class__"),
        ("import torch\nclass Fake:\n    __class__ = torch.Tensor", "binds __class__"),
        ("class A:\n    __annotations__ = {'x': '__import__(\"os\")'}", "binds __annotations__"),
        ("def f(x):\n    type(x).add = print", "patches a class through type(x)"),
        ("def f(x):\n    x.__class__.add = print", "patches a class through x.__class__"),
        ("def f(x):\n    setattr(type(x), 'add', print)", "patches a class through type(x)"),
        ("import time\ntime.perf_counter += 0", "monkey-patches time.perf_counter"),
        ("import sys\nsys.stdout = None", "monkey-patches sys.stdout"),
        ("import torch\npatch = lambda m: None\npatch(torch)", "torch as a value"),
        ("def f(x):\n    T = type(x)\n    T.add = print", "patches a class through T"),
        ("import os\nos.environ['TRITON_PTXAS_PATH'] = '/tmp/evil.sh'", "writes the environment"),
        ("import os\nkey = 'TORCH_CUDA_ARCH_LIST'\nos.environ[key] = '9.0'", "writes the environment"),
        ("import os\ndel os.environ['TORCH_CUDA_ARCH_LIST']", "writes the environment"),
        ("from os import environ\nenviron.update(LD_PRELOAD='/tmp/evil.so')", "os.environ.update"),
        ("import os\nos.putenv('LD_PRELOAD', '/tmp/evil.so')", "os.putenv"),
        ("import os\nos.environ.setdefault('TRITON_PTXAS_PATH', '/tmp/evil.sh')", "os.environ.setdefault"),
        ("import os\nset_ = os.environ.setdefault\nset_('TORCH_CUDA_ARCH_LIST', '9.0')", "os.environ.setdefault"),
        ("import os\nk = 'TRITON_PTXAS_PATH'\nos.environ.setdefault(k, '/tmp/evil.sh')", "os.environ.setdefault"),
        ("import os\nenv = os.environ\nenv['PATH'] = '/tmp'", "os.environ as a value"),
    ],
)
def test_rejects_mutating_what_the_harness_uses(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\nmp = torch.multiprocessing", "multiprocessing"),
        ("import numpy\nnumpy.ctypeslib.load_library('evil', '.')", "numpy.ctypeslib"),
        ("import numpy as np\nlib = np.ctypeslib", "numpy.ctypeslib"),
        ("import logging\nThread = logging.threading.Thread", "threading"),
        ("import logging\nThread = logging.threading.Thread", "threading"),
        ("import tempfile\nstart = tempfile._thread.start_new_thread", "_thread"),
        ("import torch\nstack = torch.library.inspect.stack()", "inspect"),
        ("import torch.library\nsys_ = torch.library.sys.modules", "sys.modules"),
        ("import timeit\ngc = timeit.gc", "timeit"),
        ("import random\ns = random._sha512", "random._sha512"),
        ("import random\nrandom._os.system('true')", "os.system"),
        ("import os\npython = os.path.os.execv", "os.execv"),
        ("import torch\nx = torch.load('payload.pt', weights_only=False)", "torch.load"),
        ("import types\nf = types.FunctionType", "types.FunctionType"),
        ("import torch\nfrom torch.utils.benchmark import Timer", "torch.utils.benchmark"),
        ("import runpy", "runpy"),
        ("import pkgutil", "pkgutil"),
    ],
)
def test_rejects_forbidden_modules_by_any_path(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import os\nos.write(1, b'{}')", "os.write"),
        ("import os\nos.dup2(3, 1)", "os.dup2"),
        ("import os\nf = os.fdopen(3, 'w')", "os.fdopen"),
        ("import os\nfd = os.open('/tmp/x', os.O_WRONLY)", "os.open"),
        ("import os\nr, w = os.pipe()", "os.pipe"),
        ("import os\nos.kill(os.getppid(), 9)", "os.kill"),
        ("import os\nos.killpg(0, 9)", "os.killpg"),
        ("import os\npid = os.fork()", "os.fork"),
        ("import os\nos.posix_spawn('/bin/sh', ['sh'], {})", "os.posix_spawn"),
        ("from os import write", "write"),
        ("import os\nw = getattr(os, 'write')", "os.write"),
        ("import posix\nposix.write(1, b'{}')", "os.write"),
        ("import os as o\no.dup2(3, 1)", "os.dup2"),
        ("f = open(3, 'w')", "file descriptor"),
        ("f = open(file=1, mode='w')", "file descriptor"),
        ("f = open('out.txt', 'w', closefd=False)", "file descriptor"),
        ("f = open('/proc/self/fd/3', 'w')", "/proc/self/fd/3"),
        ("pid = 1\nf = open(f'/proc/{pid}/fd/3', 'w')", "/proc/*/fd/3"),
        ("f = open('/proc/self/mem', 'r+b')", "/proc/self/mem"),
        ("f = open('/dev/fd/1', 'w')", "/dev/fd/1"),
        ("import io\nf = io.FileIO(3, 'w')", "io.FileIO"),
        ("from io import FileIO", "FileIO"),
        ("import _io\nf = _io.FileIO(1, 'w')", "io.FileIO"),
        ("import io\nf = io.open(3, 'w')", "io.open"),
        ("import sys\nfd = sys.stdout.fileno()", "fileno"),
        ("import pty", "pty"),
        ("import fcntl", "fcntl"),
        ("import mmap", "mmap"),
    ],
)
def test_rejects_writing_to_inherited_descriptors_and_process_control(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


HONEST_CUSTOM_OP = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 1.0, mask=mask)


@torch.library.custom_op("mylib::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _scale[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


@scale.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.triton_op("mylib::scale2", mutates_args=())
def scale2(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    torch.library.wrap_triton(_scale)[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


torch.library.register_fake("mylib::scale2")(lambda x: torch.empty_like(x))
scale2.register_kernel("cpu")(lambda x: x * 2 + 1)
compiled = torch.compile(scale, mode="max-autotune")


def run(x):
    return torch.ops.mylib.scale(x)
'''

CUDA_CORE = '''\
import torch
from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch

SOURCE = 'extern "C" __global__ void scale(const float* x, float* y, int n) {}'
_device = Device()
_device.set_current()
_program = Program(SOURCE, code_type="c++", options=ProgramOptions(arch=f"sm_{_device.arch}"))
_kernel = _program.compile("cubin").get_kernel("scale")


def run(x):
    out = torch.empty_like(x)
    stream = _device.create_stream(torch.cuda.current_stream())
    launch(stream, LaunchConfig(grid=(x.numel() + 255) // 256, block=256), _kernel, x.data_ptr(), out.data_ptr(),
           x.numel())
    return out
'''


@pytest.mark.parametrize(
    "source",
    [
        HONEST_CUSTOM_OP,
        CUDA_CORE,
        "import torch\nfn = torch.compile(lambda x: x * 2 + 1)" + RUN,
        "import torch\n\n@torch.compile(mode='max-autotune', fullgraph=True)\ndef run(x):\n    return x * 2 + 1\n",
        "import torch\nimport torch.nn.functional as F\nG = torch.nn.functional" + RUN,
        "import torch\nFP8 = getattr(torch, 'float8_e4m3fn', None)\nHAS = hasattr(torch, 'float8_e5m2')" + RUN,
        "import triton.language as tl\nFP8 = getattr(tl, 'fp8e4nv')\nOK = hasattr(tl, 'fp8e4nv')" + RUN,
        "def f(fn):\n    return getattr(fn, '__name__', '')" + RUN,
        "try:\n    import triton\nexcept ImportError:\n    triton = None\nHAS_TRITON = triton is not None" + RUN,
        "import sys\nimport os\nprint(sys.version_info, os.cpu_count(), os.path.join('a', 'b'), file=sys.stderr)"
        + RUN,
        "import torch\nf = torch._scaled_mm\ng = torch.ops.aten.mm\nh = torch.ops.aten._scaled_mm.default" + RUN,
        "import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.name = self.__class__.__name__\n" + RUN,
        "import torch\ntorch.library.define('mylib::spin(Tensor x) -> Tensor')\n"
        "torch.library.impl('mylib::spin', 'cpu')(lambda x: x)" + RUN,
        "import faulthandler\nimport io\nbuf = io.BytesIO()\nif __name__ == '__main__':\n    pass" + RUN,
        "import triton\nprops = triton.runtime.driver.active.utils.get_device_properties(0)" + RUN,
        "def f(frame_count, f_scale):\n    return frame_count * f_scale" + RUN,
        "def f(code, profile, trace, signal):\n    return code.co_filename, profile.x, trace.y, signal.z" + RUN,
        "class V:\n    __slots__ = ('x',)\n    __hash__ = None\n    def __add__(self, o):\n        return o\n"
        "    __radd__ = __add__\n__all__ = ['run']\n__version__ = '1'" + RUN,
        # The build settings of its own C++/CUDA (sm_90a for wgmma), by name
        "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0a'\nos.environ['MAX_JOBS'] = '8'" + RUN,
        "from os import environ\nenviron['TORCH_CUDA_ARCH_LIST'] = '9.0a'" + RUN,
        "import os\nos.environ.setdefault('TORCH_CUDA_ARCH_LIST', '9.0a')" + RUN,
    ],
)
def test_accepts_honest_spellings(source: str) -> None:
    result = check_source(source)
    assert result.ok, result.reason


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import os\ndebug = os.environ.get('KERNEL_DEBUG')", "environment"),
        ("import os\ndebug = os.environ['KERNEL_DEBUG'] if 'KERNEL_DEBUG' in os.environ else ''", "environment"),
        ("import torch\ns = torch.cuda.Stream()", "CUDA stream"),
    ],
)
def test_honest_but_suspicious_spellings_still_only_warn(snippet: str, needle: str) -> None:
    result = check_source(snippet + RUN)
    assert result.ok and any(needle in w for w in result.warnings), (result.reason, result.warnings)


def test_every_shipped_seed_passes() -> None:
    root = Path(__file__).resolve().parents[2]
    seeds = sorted(root.glob("problems/*/seed.py")) + sorted(root.glob("tests/fixtures/*/seed.py"))
    assert len(seeds) >= 9
    for seed in seeds:
        result = check_source(seed.read_text())
        assert result.ok, (seed, result.reason)


@pytest.mark.parametrize(
    "snippet",
    [
        "import torch\ntorch.backends.cudnn.benchmark = True",
        "import torch\ntorch._dynamo.config.cache_size_limit = 64",
        "import torch._inductor.config as inductor_config\ninductor_config.max_autotune = True",
        "import torch\ntorch._inductor.config.triton.cudagraphs = False",
        "import torch\nsetattr(torch._inductor.config, 'coordinate_descent_tuning', True)",
        # Settings that take a string, set to one of torch's own choices, however spelled.
        "import torch\ntorch._inductor.config.max_autotune_gemm_backends = 'ATEN,TRITON'",
        "import torch\nB = 'TRITON'\ntorch._inductor.config.max_autotune_gemm_backends = B",
        "import torch\nf = torch.compile(abs, mode='max-autotune', options={'triton.descriptive_names': 'torch',"
        " 'epilogue_fusion': False})",
        "import torch\nOPTIONS = {'max_autotune': True, 'max_autotune_gemm_search_space': 'EXHAUSTIVE'}\n"
        "f = torch.compile(abs, options=OPTIONS)",
        "import torch\nwith torch._inductor.config.patch(max_autotune_gemm_backends='ATEN', max_autotune=True):\n"
        "    pass",
        "import torch\nwith torch._inductor.config.patch({'cpp.simdlen': 8}):\n    pass",
        "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0a;8.0+PTX'\nos.environ['MAX_JOBS'] = '8'",
    ],
)
def test_the_knobs_honest_kernels_set_for_their_own_process_are_not_patches(snippet: str) -> None:
    result = check_source(snippet + RUN)
    assert result.ok, result.reason


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True", "allow_tf32"),  # what the problem computes
        ("import torch\ndel torch._dynamo.config.cache_size_limit", "cache_size_limit"),  # set, never deleted
        ("import torch\ntorch._dynamo.eval_frame = None", "eval_frame"),  # beside the config: still a patch
        ("import torch\ntorch.backends.cudnn.benchmark.real = 1", "benchmark.real"),
    ],
)
def test_only_those_knobs(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


# Inductor puts some settings on the C++ compiler's command line: `cpp.march = "native -wrapper '/bin/sh,-c,...'"`
# ran a shell that built a constructor into the kernel's library, which rewrote the worker's clock (red team round
# 7). A setting's string is one of torch's own choices or nothing, however the setting is reached.
@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\ntorch._inductor.config.cpp.march = 'native -wrapper x'", "cpp.march to the string"),
        ("import torch\ntorch._inductor.config.cpp.march = 'native'", "cpp.march to the string"),
        ("import torch\nM = 'native -x'\ntorch._inductor.config.cpp.march = M", "cpp.march to the string"),
        ("import torch\nsetattr(torch._inductor.config.cpp, 'march', 'a -b')", "cpp.march to the string"),
        ("import torch\ntorch._inductor.config.cpp.cxx = ('sh',)", "cpp.cxx to the string"),
        ("import torch\nf = torch.compile(abs, options={'cpp.enable_floating_point_contract_flag': 'off -x'})",
         "enable_floating_point_contract_flag to the string"),
        ("import torch\nO = {'cpp.march': 'x'}\nf = torch.compile(abs, options=O)", "cpp.march to the string"),
        ("import torch\nwith torch._inductor.config.patch({'cpp.cxx': ('sh',)}):\n    pass", "cpp.cxx"),
        ("import torch\nwith torch._inductor.config.patch('cpp.march', 'x y'):\n    pass", "cpp.march"),
        ("import torch\nwith torch._inductor.config.patch(max_autotune_gemm_backends='A -b'):\n    pass",
         "only [A-Z]+"),
        ("import torch\ntorch._inductor.config.max_autotune_gemm_backends = b'TRITON'", "to the string"),
        ("import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0 -Xcompiler'", "writes the environment"),
        ("import os\nos.environ.setdefault('MAX_JOBS', '8 -x')", "os.environ.setdefault"),
        # Inductor's C++ wrapper pastes the graph's values (a custom op's string argument) into C++ unescaped
        # (red team round 8): the settings that turn it on are refused whatever their value.
        ("import torch\ntorch._inductor.config.cpp_wrapper = True", "sets cpp_wrapper"),
        ("import torch\nf = torch.compile(abs, options={'cpp_wrapper': True})", "sets cpp_wrapper"),
        ("import torch\nwith torch._inductor.config.patch(cpp_wrapper=True):\n    pass", "sets cpp_wrapper"),
        ("import torch\ntorch._inductor.config.aot_inductor.package = True", "sets aot_inductor.package"),
        # A Triton kernel's source other than the one the gate read (Inductor pastes a user kernel's source).
        ("import triton\n@triton.jit\ndef k(x):\n    pass\nk._unsafe_update_src('pass')", "_unsafe_update_src"),
        ("import triton\n@triton.jit\ndef k(x):\n    pass\nk._src = 'pass'", "_src"),
        # Round 10: the same settings by spellings the checks could not read.
        ("import torch\nf = torch.compile(abs, options={'cpp_' + 'wrapper': True})", "computed key"),
        ("import torch\nK = 'cpp_wrapper'\nf = torch.compile(abs, options={K: True})", "sets cpp_wrapper"),
        ("import torch\nK = 'cpp_wrapper'\nwith torch._inductor.config.patch(**{K: True}):\n    pass",
         "computed values or keys"),
        ("import torch\nK = 'cpp_wrapper'\nwith torch._inductor.config.patch(K, True):\n    pass", "sets cpp_wrapper"),
        ("import torch\nimport functools\nc = functools.partial(torch.compile, options={'cpp_wrapper': True})",
         "other than by calling it"),
        ("import torch\nA = 'native -w'\nB = 'rapper x'\ntorch._inductor.config.cpp.march = A + B", "arithmetic"),
        ("import torch\nA = 'native -x'\nf = torch.compile(abs, options={'cpp.march': (A,)})", "cpp.march to the"),
        ("import torch\nf = torch.compiler.compile(abs, options={'cpp_wrapper': True})", "sets cpp_wrapper"),
        ("import torch\nf = torch.compiler.load_compiled_function", "load_compiled_function"),
        # A configuration's own machinery sets a knob past the checks on assignments, options and patches.
        ("import torch\ntorch._inductor.config._config['cpp_wrapper'].user_override = True", "private member"),
        ("import torch\ntorch._inductor.config._set_alias_val('cpp_wrapper', True)", "private member"),
    ],
)
def test_a_setting_s_text_never_reaches_a_compiler(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


# A str.format template reads attributes by name: "{0.f_back.f_globals}".format(logging.currentframe()) read the
# harness's frames (red team round 9). Its fields are judged as attributes, and sys._getframe's aliases by name.
@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("def f(x):\n    return '{0.f_back.f_code.co_name}'.format(x)", "f_back in a format string"),
        ("def f(x):\n    return '{0:{1.f_globals}}'.format(x, x)", "f_globals in a format string"),
        ("def f(x):\n    return '{x.gi_frame}'.format_map({'x': x})", "gi_frame in a format string"),
        ("import logging\nframe = logging.currentframe()", "currentframe"),
        # Round 10: a template built at run time, which no reading of literals could check.
        ("def f(x):\n    return ('{0.f_' + 'back}').format(x)", "template built at run time"),
        ("T = '{0.f_' + 'back}'\ndef f(x):\n    return T.format(x)", "template built at run time"),
        ("import string\ndef f(t, x):\n    return string.Formatter().vformat(t, (x,), {})", "built at run time"),
    ],
)
def test_format_templates_and_frame_getters_are_read_as_attributes(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


# numpy builds an array at whatever address an array interface names: the process's memory, from Python.
@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("class R:\n    __array_interface__ = {'data': (8, False)}", "__array_interface__"),
        ("class R:\n    @property\n    def __array_interface__(self):\n        return {}", "__array_interface__"),
        ("import types\nr = types.SimpleNamespace(__array_interface__={})", "__array_interface__"),
        ("import abc\nR = abc.ABCMeta('R', (), {'__array_interface__': 1})", "__array_interface__"),
        ("import numpy as np\np = np.zeros(1).__array_interface__['data'][0]", "__array_interface__"),
        ("class R:\n    def __array_struct__(self):\n        return 0", "__array_struct__"),
        ("import numpy as np\nw = np.lib.stride_tricks.as_strided(np.zeros(1), (64,), (1,))", "stride_tricks"),
        ("from numpy.lib.stride_tricks import as_strided", "stride_tricks"),
        ("import numpy as np\nw = np.lib._stride_tricks_impl.as_strided(np.zeros(1), (64,))", "stride_tricks"),
    ],
)
def test_rejects_numpy_views_of_any_address(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


def test_the_cuda_array_interface_stays_allowed() -> None:
    # How a buffer of one GPU library is handed to another; a Triton kernel can cast an int to a pointer anyway.
    snippet = "class B:\n    @property\n    def __cuda_array_interface__(self):\n        return {}\n"
    assert check_source(snippet + RUN).ok


# Private submodules of torch, numpy and triton hold helpers that import whatever a computed string names.
@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import torch\nm = torch._utils._import_dotted_name('g' + 'c')", "torch._utils"),
        ("from torch import _utils as u", "_utils"),
        ("import torch._dynamo.trace_rules as rules", "torch._dynamo.trace_rules"),
        ("import torch\nf = torch.utils._pytree.tree_map", "torch.utils._pytree"),
        ("import torch._inductor.utils", "torch._inductor.utils"),
        ("import numpy as np\nm = np._core.multiarray", "numpy._core"),
    ],
)
def test_rejects_private_submodules_of_the_libraries(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


def test_private_functions_and_torch_compiles_configuration_stay_allowed() -> None:
    snippet = ("import torch\nimport torch._dynamo\nf = torch._scaled_mm\ntorch._dynamo.reset()\n"
               "torch._dynamo.mark_dynamic\ntorch._dynamo.config.cache_size_limit = 64\n"
               "torch._inductor.config.coordinate_descent_tuning = True\n"
               "torch._functorch.config.donated_buffer = False\n"
               "from torch._inductor.runtime import triton_helpers\n"
               "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\n"
               "from torch._inductor.runtime.hints import ReductionHint\n"
               "from torch.utils._triton import has_triton\n")
    assert check_source(snippet + RUN).ok


# Honest spellings that once tripped the gate (red team of honest kernels, 2026-12-06).
@pytest.mark.parametrize("snippet", [
    "import torch\nm = torch.nn.Linear(2, 2).eval()",  # nn.Module.eval, not the builtin
    "import torch\ndef make(compile: bool = True):\n    return torch.compile(make) if compile else make",
    "from torch import compile\nf = compile(lambda x: x)",
    "from typing import Literal\ndef f(impl: Literal['eager', 'compile', 'exec'] = 'eager') -> None:\n    pass",
    "import sys\nif __name__ == '__main__':\n    import timeit, gc\n    sys.exit(0)",
    "import gc\ngc.collect()",
    "import enum\nclass Mode(enum.Enum):\n    A = 1\nnames = list(Mode.__members__)",
    "import torch\nclass M(torch.nn.Module):\n    __constants__ = ['n']",
    "__author__ = 'me'",
    "import torch\ntorch.compiler.config.cache_key_tag = 'k'",
    "from torch.library import capture_triton",
    # a fallback that prints why it fell back (red team of session 21)
    "import traceback\ndef f():\n    try:\n        return 1\n    except Exception:\n        traceback.print_exc()",
    "from traceback import format_exc\nmessage = format_exc()",
])
def test_accepts_honest_spellings_that_once_tripped_it(snippet: str) -> None:
    result = check_source(snippet + RUN)
    assert result.ok, result.reason


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        # the builtin still, wherever a binding may not have run or was undone
        ("def f(compile=None):\n    class C:\n        if 0:\n            compile = 1\n"
         "        c = compile('1', '', 'eval')", "compile"),
        ("if 0:\n    from torch import compile\nc = compile('1', '', 'eval')", "compile"),
        ("from torch import compile\ndel compile\nc = compile('1', '', 'eval')", "compile"),
        ("def g():\n    return compile('1', '', 'eval')\ndef f(compile=None):\n    return compile", "compile"),
        ("def f(x):\n    return [compile(s, '', 'eval') for compile in x]", "compile"),
        ("__name__ = '__main__'", "__name__"),  # would run the unjudged __main__ block
        ("import sys\nif __name__ == '__main__':\n    pass\nelse:\n    import gc\n    o = gc.get_objects()", "gc"),
        ("import __main__", "__main__"),  # the harness's entry module
        ("import sympy\ng = sympy.sympify('1')", "sympy"),  # evaluates strings as Python
        ("import jinja2", "jinja2"),
        ("import yaml", "yaml"),
    ],
)
def test_rejects_the_builtin_behind_a_binding_that_may_not_hold(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


# Annotations are evaluated by whoever reads them (singledispatch, pydantic): only type syntax, nothing computed.
@pytest.mark.parametrize("snippet", [
    "def f(x: 'int' + ''):\n    pass",
    "def f(x: __import__('os')):\n    pass",
    "def f(x: int if 1 else str):\n    pass",
    "def f(x: f'{1}'):\n    pass",
    "def f() -> (lambda: int)():\n    pass",
    "x: 'int' + '' = 1",
])
def test_rejects_computed_annotations(snippet: str) -> None:
    result = check_source(snippet + RUN)
    assert not result.ok, snippet
    assert "annotation" in result.reason or "__import__" in result.reason, result


def test_type_syntax_in_annotations_passes() -> None:
    snippet = ("from __future__ import annotations\nimport torch\nfrom typing import Callable, Literal, Optional\n"
               "def f(x: torch.Tensor | None, *a: int, c: Callable[[int], torch.Tensor] = None,\n"
               "      m: Literal['a', -1] = 'a', s: 'torch.Tensor' = None,\n"
               "      t: tuple[int, ...] = ()) -> dict[str, int]:\n"
               "    y: Optional[list[int]] = None\n    return {}\n")
    assert check_source(snippet + RUN).ok



@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("import fsspec", "fsspec"),  # installed beside torch, imports a class named by a string
        ("import execnet", "execnet"),  # runs source in a new interpreter
        ("import torch.fx", "torch.fx"),  # generated code with repr() of graph constants pasted in
        ("import torch\ng = torch.export", "torch.export"),
        ("import torch\ndef be(gm, ex):\n    return gm\nf = torch.compile(lambda x: x, backend=be)", "backend"),
        ("import torch\nf = torch.compile(lambda x: x, options={'post_grad_custom_post_pass': print})", "options"),
        ("import torch\ntorch._inductor.config.post_grad_custom_post_pass = print", "computed value"),
        ("import torch\nwith torch._inductor.config.patch(joint_custom_pre_pass=print):\n    pass", "computed"),
        ("import torch\nb = torch._dynamo.register_backend", "register_backend"),
        ("import torch\ntorch.save({}, '/x')", "torch.save"),
        ("import functools\nfunctools.update_wrapper(print, len, assigned=('__annotations__',))", "update_wrapper"),
    ],
)
def test_rejects_other_packages_and_code_generated_from_the_candidates_graphs(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


def test_torch_compile_with_literal_settings_passes() -> None:
    snippet = ("import torch\nimport einops\nf = torch.compile(lambda x: x, backend='inductor', mode='max-autotune',"
               " options={'triton.cudagraphs': False})\ntorch._inductor.config.coordinate_descent_tuning = True\n"
               "with torch._inductor.config.patch(max_autotune=True):\n    pass\n")
    assert check_source(snippet + RUN).ok


# ---------------------------------------------------------------- third red-team round: libraries that run strings


@pytest.mark.parametrize(("snippet", "needle"), [
    ("import site\nsite.addsitedir('/tmp')", "imports site"),  # runs a .pth file's import lines
    ("import rlcompleter", "imports rlcompleter"),  # evaluates in a namespace it fills with the builtins
    ("import optparse", "imports optparse"),  # Values.read_module imports a module named by a string
    ("import xml.sax", "imports xml.sax"),  # make_parser imports a parser class by name
    ("import uuid", "imports uuid"),  # getnode() runs a command
    ("import enum\ng = enum.bltns.getattr", "builtins.getattr"),  # enum's alias of builtins
    ("import logging\nwalk = logging.traceback.walk_stack", "traceback.walk_stack"),  # frames, re-exported
    ("import traceback\nframes = traceback.walk_stack(None)", "traceback.walk_stack"),  # the rest of traceback
    ("from traceback import extract_stack", "extract_stack from traceback"),
    ("import traceback\nt = traceback.TracebackException", "traceback.TracebackException"),  # capture_locals
    ("import traceback as t\nm = t", "as a value"),
    ("import torch\nexplain = torch._dynamo.explain", "torch._dynamo.explain"),  # hands back generated graph code
    ("import torch\nrun_ = torch._dynamo.run", "torch._dynamo.run"),
    ("import torch.utils.collect_env", "torch.utils.collect_env"),  # run() starts a shell
    ("import torch\nparse = torch.jit.annotations.parse_type_line", "torch.jit.annotations"),  # evaluates
    ("import torch\nexport = torch.onnx.export", "torch.onnx"),
    ("import logging.handlers", "logging.handlers"),  # sockets, SMTP, HTTP, a listener thread
    ("import torch\ng = torch._C._dynamo.guards.GuardManager", "torch._C._dynamo.guards.GuardManager"),
    ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True", "only off is allowed"),
    ("import torch\ntorch.backends.cuda.matmul.fp32_precision = 'tf32'", "only exact float32 is allowed"),
    ("import torch\ntorch.backends.cudnn.conv.fp32_precision = 'tf32'", "only exact float32 is allowed"),
    ("import sys\nm = sys or 1", "sys as a value"),  # the value of `or` is its operand
])
def test_rejects_string_runners_of_the_standard_library_and_torch(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


@pytest.mark.parametrize("snippet", [
    "from torch._C import _cuda_getCurrentRawStream as get_raw_stream",  # torch.compile's output code
    "import torch\nempty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda",
    "import torch\nreinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor",
    "from torch._inductor.select_algorithm import extern_kernels\nmm = extern_kernels.mm",
    "from torch._inductor.runtime.runtime_utils import next_power_of_2",
    "import torch\ntorch._dynamo.reset()\ntorch._dynamo.config.cache_size_limit = 2 ** 8",
    "import torch\nMAX_AUTOTUNE = False\nf = torch.compile(abs, options={'max_autotune': MAX_AUTOTUNE})",
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\ntorch.backends.cudnn.allow_tf32 = False",
    # torch 2.9's spelling of the same (an honest kernel that once tripped the gate: red team of honest kernels 16)
    "import torch\ntorch.backends.cuda.matmul.fp32_precision = 'ieee'\n"
    "torch.backends.cudnn.conv.fp32_precision = 'ieee'",
    "try:\n    import triton\nexcept ImportError:\n    triton = None\nassert not triton or triton and True",
    "from typing import Annotated\nimport torch\ndef f(x: Annotated[torch.Tensor, '(T, 2*D)']) -> None: ...",
    "import tilelang.language as T\ndef k(A: T.Tensor((M, K // 2), 'float16')) -> None: ...",
    "import atexit\nimport dataclasses\n@dataclasses.dataclass\nclass C:\n    def __post_init__(self): ...",
    "from torch.library import infer_schema",
])
def test_accepts_what_honest_kernels_write(snippet: str) -> None:
    result = check_source(snippet + RUN)
    assert result.ok, result.reason


@pytest.mark.parametrize("snippet", [
    "def f():\n    return 'x'\ndef g(x: f()): ...",  # a call of the module's own in an annotation
    "import numpy\ndef g(x: numpy.str_('a')): ...",  # a library's call that makes a string
    "from typing import Annotated\ndef g(x: Annotated['__import__(\"gc\")', 1]): ...",  # the type is still code
])
def test_annotations_still_refuse_computed_types(snippet: str) -> None:
    _rejected(snippet, "computes an annotation")


# Red team round 5: a module reached by an attribute path (or a module's name on any object), and the standard
# library's attribute setters, handed the harness's modules to code that wrote them where no path showed it.
@pytest.mark.parametrize(("snippet", "needle"), [
    ("import torch\ndef reach(m):\n    return m.sys\nS = reach(torch.nn.functional.torch)", "as a value"),
    ("import torch\nM = [torch.nn.functional]", "torch.nn.functional as a value"),
    ("from torch.nn import functional\nM = [functional]", "torch.nn.functional as a value"),
    ("def reach(m):\n    return m.sys.modules", "sys.modules"),
    ("def reach(m):\n    return m.gc", "gc"),
    ("def plant(m, f):\n    m.os.system = f", "os.system"),
    ("import torch\nt = torch.nn.functional.torch.load", "torch.load"),
    ("import torch\nm = torch.nn.functional.math\nx = [m]", "as a value"),
    ("import functools\nfunctools.update_wrapper(print, len)", "update_wrapper"),
    ("from functools import wraps\ndef f():\n    pass\ng = wraps(f)(print)", "decorator"),
    ("import argparse\np = argparse.ArgumentParser()\nns = p.parse_args([], namespace=print)", "namespace"),
    ("import argparse\np = argparse.ArgumentParser()\nns = p.parse_known_args([], print)", "namespace"),
    # round 6: unpicklers behind allowed members, modules bound by a from-import or inside a compiled binding
    ("import torch\ntorch._dynamo.config.load_config(b'x')", "load_config"),
    ("import numpy\nimport io\nnumpy.lib.format.read_array(io.BytesIO(b''), allow_pickle=True)", "read_array"),
    ("import numpy\nx = numpy.lib.npyio.load('f.npy', allow_pickle=True)", "allow_pickle"),
    ("import torch\nC = torch.cuda.memory._C", "torch._C"),
    ("import torch\nf = torch.nn.functional._VF", "torch._VF"),
    ("import cuda.core.graph\nct = cuda.core.graph._host_callback.ct", "_host_callback"),
    ("from nvmath.bindings import _internal", "_internal"),
])
def test_rejects_modules_reached_as_values_and_setters_by_name(snippet: str, needle: str) -> None:
    _rejected(snippet, needle)


@pytest.mark.parametrize("snippet", [
    "import torch\nF = torch.nn.functional\ny = F.relu",  # a module bound to a name, used through it
    "import torch\ncpp = getattr(torch.utils, 'cpp_extension')",
    "import functools\ndef deco(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n"
    "    return inner",
    "import argparse\np = argparse.ArgumentParser()\nargs = p.parse_args([])",
    "import torch\ntorch._inductor.config.triton.cudagraphs = False",  # a class named triton, not the module
    "import numpy as np\nf = np.array\ng = np.copy",  # functions named like standard modules
    "import torch\ny = torch.ops.aten.copy.default",
    "import triton.language as tl\nx = tl.math.exp",
    "class C:\n    def __init__(self):\n        self.cache = {}\n    def copy(self):\n        return self.cache.copy()",
])
def test_modules_bound_to_names_and_members_named_like_modules_pass(snippet: str) -> None:
    result = check_source(snippet + RUN)
    assert result.ok, result.reason


HONEST = Path(__file__).resolve().parents[1] / "fixtures" / "honest"


@pytest.mark.parametrize("path", sorted(HONEST.glob("*.py")), ids=lambda path: path.stem)
def test_honest_kernels_in_the_styles_people_write_pass(path: Path) -> None:
    # Written by the twelfth session's second red team as a user would write them (Triton tutorials and autotune,
    # torch.compile's modes and knobs, KernelBench's ModelNew with load_inline, Inductor-style output, NVRTC,
    # nvmath, CuPy, custom ops, CUDA graphs): every rule added to the gate must leave them passing.
    source = path.read_text(encoding="utf-8")
    result = check_source(source, "ModelNew" if "class ModelNew" in source else "run")
    assert result.ok, result.reason


@pytest.mark.parametrize(("snippet", "needle"), [
    # A module constant names an attribute as its literal does, and is judged as that literal
    ("import sys\nKEY = 'modules'\nm = getattr(sys, KEY)", "sys.modules"),
    ("import torch\nK = 'compile'\nc = getattr(torch, K)", "torch.compile other than by calling it"),
    # ...but not where a parameter of that name shadows it, nor for a str.format template
    ("import sys\nKEY = 'version'\ndef f(KEY):\n    return getattr(sys, KEY)", "computed attribute name"),
    ("T = '{}'\ndef f(T, frame):\n    return T.format(frame)", "template built at run time"),
    # hasattr judges what the path is
    ("import sys\nok = hasattr(sys, '_getframe')", "sys._getframe"),
    ("import sys\nx = sys.platform.__dict__", "__dict__"),
    # torch.compile's arguments spread with **, or a .compile method given a computed backend (nn.Module.compile)
    ("import torch\nKW = {'backend': 'eager'}\nf = torch.compile(lambda x: x, **KW)", "spreads torch.compile's"),
    ("import torch\nb = lambda g, i: g\nm = torch.nn.Linear(2, 2)\nm.compile(backend=b)",
     "calls a .compile method with a computed backend"),
    ("import torch\nb = lambda g, i: g\nm = torch.nn.Linear(2, 2)\ntorch.nn.Module.compile(m, backend=b)",
     "computed backend"),
    # options=dict(...) is read as the literal it makes, and only where dict is the builtin
    ("import torch\nf = torch.compile(lambda x: x, options=dict(cpp_wrapper=True))", "sets cpp_wrapper"),
    ("import torch\ndef dict(**k):\n    return k\nf = torch.compile(lambda x: x, options=dict(max_autotune=True))",
     "computed backend or options"),
    ("import nt\nx = nt.system", "imports nt"),
    # red team round 15: a constant rebound where no syntax shows it, and a backend for every torch.compile
    ("import enum\nK = 'platform'\nenum.global_enum(enum.StrEnum('E', {'K': 'modules'}))", "enum.global_enum"),
    ("import torch\ntorch.compiler.set_default_backend(print)", "torch.compiler.set_default_backend"),
    ("import torch\nb = print\nm = torch.nn.Linear(2, 2)\ngetattr(m, 'compile')(backend=b)", "computed backend"),
    ("import torch\nb = print\nm = torch.nn.Linear(2, 2)\ntorch.nn.ReLU.compile(m, backend=b)",
     "torch.nn.ReLU.compile with a computed backend"),
    ("import torch\nw = torch._TorchCompileInductorWrapper('default', {}, False)", "_TorchCompileInductorWrapper"),
])
def test_constant_names_hasattr_and_compile_arguments(snippet: str, needle: str) -> None:
    result = check_source(snippet + RUN)
    assert not result.ok and needle in result.reason, result.reason
