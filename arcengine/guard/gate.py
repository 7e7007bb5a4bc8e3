"""The cascade gate: cheap static checks in the engine, before any process starts.

Candidate code is written to score well, so the gate judges what a name *is*, not how it is spelled. Before a rule
is applied, names are resolved: import aliases (``import sys as s``), plain names bound to an imported path
(``T = torch.Tensor``), module re-exports (``os.sys`` is sys, ``torch.os`` is os, ``queue.threading`` is threading,
``posix`` is os), and ``getattr``/``hasattr``/``setattr``/``delattr`` with a constant name, which are judged as the
attribute access they spell (``getattr(sys, "modules")`` is ``sys.modules``). Then it REJECTs:

1. Forbidden modules, by any path: native code loaded or called from Python (ctypes, cffi, numpy.ctypeslib,
   triton.runtime.build), processes and signals (subprocess, multiprocessing, pty, signal, torch.utils.data,
   torch.distributed, ...), threads (and TorchScript's tasks, torch.jit.fork and torch.futures, and CUDA host
   functions: callbacks on a library's thread), dynamic import and code (importlib, runpy, code, timeit, pkgutil,
   torch.utils.benchmark, ...), introspection (gc, inspect), serialisation
   (pickle, marshal, shelve, torch.load), views of memory at any address (numpy's stride_tricks), the guard
   itself (arcengine*); imported, or reached as an attribute of another module (``torch.multiprocessing``,
   ``tempfile._thread``). Star and relative imports are refused too. Of the standard library only the modules
   kernels use may be imported (STDLIB_ALLOWED), and beyond it only the packages kernels are written with
   (THIRD_PARTY_MODULES: torch, triton, numpy, cuda, nvmath, cupy, ...); within torch, torch.fx and torch.export
   (Python generated from a graph, repr() of its constants pasted in), and torch._dynamo but for its members in
   PRIVATE_MEMBERS (explain() hands back such a graph).
2. Dynamic code: exec, eval, compile, __import__, breakpoint (but a function's own variable of that name, and an
   unconditional ``from torch import compile``), types.CodeType/FunctionType, type() with three arguments,
   loaders of native code wherever re-exported (load_library, load_inline, compile_module_from_src), and
   evaluators of strings (typing.get_type_hints, typing.ForwardRef, ``_evaluate``; sympy, jinja2, pandas, yaml
   and the unpicklers, as modules). Strings inside annotations are judged as the code they spell:
   torch.library.custom_op and get_type_hints evaluate them (but Literal's arguments, which are values). A
   module's ``if __name__ == "__main__":`` block (without an else) is not judged: the guard never runs it, and
   ``__name__`` cannot be rebound.
3. Dynamic attribute access: getattr/hasattr/setattr/delattr with a name that is not a string constant, or used
   other than by calling them; vars, globals, locals; operator.attrgetter/methodcaller, string.Formatter.
4. Introspection: frame, generator, coroutine, traceback, code-object and cell attributes (f_back, gi_frame,
   tb_next, co_consts, cell_contents, ...) and every dunder attribute but the ordinary protocol ones in
   ALLOWED_DUNDERS (``__dict__``, ``__globals__``, ``__self__``, ``__subclasses__``, ``__getattribute__``,
   ``__setattr__``, ``__loader__`` ... are refused); these names are also refused as match-pattern attributes,
   keyword names and string constants, so reflective APIs cannot take them either. So is numpy's array interface
   (``__array_interface__``, ``__array_struct__``), defined, bound or named: numpy makes an array at whatever
   address it names, the process's own memory read and written from Python.
5. Modules used as values: a module bound by ``import``, and sys, os, io, os.environ and torch.library however
   reached, may only be used through their attributes (``type(sys)``, ``m = sys``, ``f(torch)`` are refused).
6. sys, os, io and traceback by allowlist (ALLOWED_MEMBERS): versions and limits, stdout/stderr, the environment,
   paths and process information, an exception printed or formatted (never a stack or a frame). Everything else
   is refused: sys.modules, sys._getframe, sys.exc_info, traceback.walk_stack, ...; the os
   functions that spawn, signal, replace or end processes or work on raw file descriptors (os.write, os.dup2,
   os.fdopen, os.open, os.pipe, os.kill, os.fork, os.posix_spawn, ...); io.FileIO and io.open; writing the
   environment (compilers the harness runs read it: TRITON_PTXAS_PATH runs any program). ``open()`` of an int or
   with opener/closefd, ``.fileno()``, and paths naming descriptors or process memory (/proc/<pid>/fd,
   /proc/<pid>/mem, /dev/fd) are refused as well; at run time the untrusted workers refuse every Python-level open
   of such a path or of their socket, however computed (guard/child/opens.py). Private members of standard-library
   modules are refused (``uuid._get_command_stdout`` runs a command), but faulthandler's (they only crash: a fail).
   So are the private submodules of torch, numpy and triton (``torch._utils``, ``torch.utils._pytree``,
   ``torch._dynamo.trace_rules``), which hold helpers that import a module named by a computed string, but for
   ALLOWED_PRIVATE_MODULES (torch._dynamo and torch.compile's configuration); their private functions stay allowed.
7. Intercepting PyTorch operators: torch._C and torch's private operator machinery (torch._ops, torch._library,
   torch._subclasses, ...); torch.overrides and torch.utils._python_dispatch (function and dispatch modes, and the
   mode classes by name wherever they are re-exported); ``__torch_function__``/``__torch_dispatch__`` defined,
   assigned or named; torch.ops hooks (py_impl, py_kernels, load_library). torch.library is refused but for:
   ``custom_op`` and ``triton_op`` (and ``define``) creating an operator whose constant "ns::name" is outside
   torch's own namespaces (TORCH_NAMESPACES: aten, prims, ...), which makes ns one of the candidate's own;
   ``register_fake``/``register_kernel``/``register_autograd``/``impl``/... called with a constant "ns::name" in
   one of the candidate's own namespaces; ``wrap_triton``, ``get_ctx``, ``opcheck``. Methods of
   the op object a custom_op returns (``@op.register_fake``) are the candidate's own and free.
8. Mutating what the harness uses: assigning, augmenting or deleting (by statement, loop target, setattr or
   delattr) an attribute of an imported module or of anything reached through one (``torch.Tensor.add = ...``),
   an attribute of ``type(x)``, of a name bound to it, or of ``x.__class__``, or any dunder attribute
   (``x.__class__ = ...``); but for setting the knobs in SETTINGS and SETTING_NAMESPACES to literal values (cuDNN's
   autotuner, torch.compile's configuration), which honest kernels set for their own process. A callable there, or
   as torch.compile's backend or in its options, would be handed the graphs torch.compile builds: refused.

It warns on what is only suspicious (side streams, environment reads, file writes, try/except fallbacks to
PyTorch), and on C++/CUDA compiled from source with torch.utils.cpp_extension (load_inline): allowed, since people
write kernels that way, but native code can do anything in its process, so the gate's rules hold for it only as far
as the process: its worker's own timer and checks are not sealed against it (see docs/guard.md).
What no static reading can see (values computed at run time, objects smuggled through containers or
parameters) is left to the sandbox and the runtime checks.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import string
import sys
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arcengine.guard.child.settings_watch import CODEGEN_SETTINGS, STRING_SETTINGS
from arcengine.guard.shadowing import shadowed_uses

# Modules refused by any path (a name here refuses its submodules too).
FORBIDDEN_MODULES = {
    "ctypes", "_ctypes", "cffi", "numpy.ctypeslib", "numpy.f2py", "triton.runtime.build",
    "subprocess", "_posixsubprocess", "multiprocessing", "_multiprocessing", "pty", "socket", "_socket", "signal",
    "_signal", "resource", "fcntl", "mmap", "threading", "_thread", "concurrent", "asyncio", "builtins",
    "importlib", "runpy", "code", "codeop", "timeit", "doctest", "pdb", "bdb", "trace", "cProfile", "profile",
    "pydoc", "pkgutil", "zipimport", "unittest", "logging.config", "webbrowser", "inspect", "pickle",
    "_pickle", "marshal", "shelve", "dbm", "copyreg", "shutil", "arcengine",
    "cupti",  # the activity records the guard times calls with: disabling or flushing them would blind it
    # NVML sets the GPU's clocks and power limit (as root): lowered after its own call, the next role runs slow
    "pynvml", "cuda.bindings.nvml",
    # torch's operator machinery and code loaders: nothing an honest kernel calls
    "torch._C", "torch._ops", "torch._library", "torch._custom_op", "torch._custom_ops", "torch._subclasses",
    "torch._decomp", "torch._prims", "torch._refs", "torch._python_dispatcher", "torch._dispatch",
    "torch._higher_order_ops", "torch.utils._python_dispatch", "torch.overrides", "torch._inductor.codecache",
    "torch._inductor.async_compile", "torch._inductor.cpp_builder", "torch.hub", "torch.package",
    "torch.serialization", "torch.utils.benchmark", "torch.utils.data", "torch.distributed",
    "torch._inductor.compile_worker",
    # futures run a callback on torch's inter-op pool, a thread no count of threads sees (torch.jit.fork below)
    "torch.futures",
    # libraries that evaluate strings as Python (sympify, templates, pandas.eval, YAML's object tags, unpicklers),
    # run programs, or reach processes: a route to anything the rules above refuse, spelled as data
    "sympy", "jinja2", "mako", "pandas", "numexpr", "yaml", "cloudpickle", "dill", "joblib", "psutil", "IPython",
    "pytest", "_pytest", "hypothesis", "setuptools", "pip", "distutils", "Cython", "pyximport", "werkzeug",
    "requests", "urllib", "http", "pydantic", "pydantic_core", "attr", "attrs", "typeguard", "beartype",
    "jaxtyping", "hydra", "omegaconf", "mpmath",
    "__main__", "__mp_main__",  # the process's entry module: the harness that imported the candidate
    # files written below Python's audit hook (guard/child/opens.py checks the rest): a database's pages, GPU-direct
    # storage
    "sqlite3", "_sqlite3", "cuda.bindings.cufile", "kvikio",
    "torch.fx", "torch.export",  # Python generated from a graph, with repr() of its constants pasted in
    # views of memory at any address: as_strided unchecked, and the interface dict it builds them from
    "numpy.lib.stride_tricks", "numpy.lib._stride_tricks_impl",
    # torch's own evaluators and runners of strings: type comments evaluated, TorchScript's frontend, a shell
    # (collect_env.run), an unpickler, exporters that hand back generated graph code
    "torch.jit.annotations", "torch.jit.frontend", "torch.utils.jit", "torch.utils.collect_env",
    "torch.utils.show_pickle", "torch.utils.bundled_inputs", "torch.utils.model_dump", "torch.onnx",
    "logging.handlers",  # sockets, SMTP and HTTP handlers, a listener thread
}
# Attributes refused by any path, beside the modules above.
FORBIDDEN_ATTRIBUTES = {
    "operator.attrgetter", "operator.methodcaller", "string.Formatter", "types.CodeType", "types.FunctionType",
    "types.LambdaType", "types.new_class", "typing.get_type_hints", "typing.ForwardRef",
    "typing_extensions.get_type_hints", "typing_extensions.ForwardRef", "torch.load", "numpy.load",
    "torch.ops.import_module", "torch.cuda.memory.CUDAPluggableAllocator",
    "torch.cuda.memory.change_current_allocator",
    # code generated from a graph the candidate holds (see _compile_code_violation); writers below the audit hook
    "torch._dynamo.optimize", "torch._dynamo.register_backend", "torch._dynamo.lookup_backend",
    "torch.save", "torch.jit.save", "torch.jit.CompilationUnit",
    # TorchScript's tasks on the inter-op pool: work after a call returns, and Python there through a future's then
    "torch.jit.fork", "torch.jit._fork", "torch.jit.wait", "torch.jit._wait", "torch.jit.Future",
    # copies one object's namespace onto another's, names computed: a setattr and a vars() in one call (a module's
    # globals swapped in as a plain object's __dict__, then written past the module's own refusal)
    "functools.update_wrapper",
    # binds its enum's members in the caller's module namespace, where no syntax shows it: a "constant" the gate read
    # as a literal (an attribute's name, a template, dict) rebound at run time (red team round 15)
    "enum.global_enum",
    # a backend for every torch.compile, where no call shows it (refused at run time too: settings_watch.py)
    "torch.compiler.set_default_backend", "torch._dynamo.set_default_backend",
    # torch.compile's own wrappers, built by hand: options the gate never reads, as a stance's forced backend
    "torch._TorchCompileInductorWrapper", "torch._TorchCompileWrapper",
    # a native watchdog thread with no Python thread state, started at import: no count of threads sees it, and on a
    # short period it keeps a core busy under every role's timing (red team round 18)
    "faulthandler.dump_traceback_later",
}
# argparse's parse methods: given a namespace, they set on it the attributes their arguments name (a setattr by a
# string that is data, onto any object, a module included).
ARGPARSE_PARSES = {"parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args"}
# A module's name met inside a path starts the path again (`os.sys.modules` is `sys.modules`, `random._os` is os:
# leading underscores are the stdlib's way of re-exporting), but for names that torch uses for submodules of its
# own (torch.signal, torch.profiler.profile, torch.jit.trace, ...).
# The standard library's private members are refused (`uuid._get_command_stdout` runs a command, `tempfile._os` is
# os); torch's, triton's and numpy's are not (torch._scaled_mm), but for the forbidden ones above.
STDLIB_MODULES = frozenset(sys.stdlib_module_names)
# The standard library by allowlist too: what kernels and their helpers import. The rest is refused, since modules
# there turn strings into code or imports in ways no list of refusals keeps up with (site runs a .pth file's import
# lines, rlcompleter evaluates in a namespace it fills with the builtins, optparse imports a module by name,
# xml.sax a parser class by name); traceback, which walks frames, by its own allowlist (ALLOWED_MEMBERS).
STDLIB_ALLOWED = frozenset({
    "__future__", "abc", "argparse", "array", "base64", "binascii", "bisect", "calendar", "cmath", "collections",
    "colorsys", "contextlib", "contextvars", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "enum",
    "errno", "faulthandler", "fnmatch", "fractions", "functools", "gc", "glob", "graphlib", "hashlib", "heapq",
    "hmac", "io", "itertools", "json", "keyword", "logging", "math", "numbers", "operator", "os", "pathlib",
    "posixpath", "pprint", "random", "re", "reprlib", "secrets", "stat", "statistics", "string", "struct", "sys",
    "tempfile", "textwrap", "time", "traceback", "types", "typing", "unicodedata", "warnings", "weakref", "zlib",
    "zoneinfo",
    "atexit",  # handlers never run: a worker ends with _exit
})
# Names torch, numpy and triton use for functions or submodules of their own (Tensor.chunk, torch.select,
# torch.signal, torch.jit.trace, torch.profiler.profile, a script module's .code, Timer.timeit): not module names.
_OWN_NAMES = {"chunk", "select", "signal", "code", "trace", "profile", "resource", "timeit"}
# Windows' modules: no object holds one where the guard runs (Linux), and honest fields bear their names (`self.nt`,
# a number of tiles).
_ELSEWHERE = {"nt", "msvcrt", "winreg", "winsound"}
MODULE_NAMES = ({"sys", "os", "io", "gc", "traceback", "bltns"} | {m for m in FORBIDDEN_MODULES if "." not in m}
                | {m for m in STDLIB_MODULES - STDLIB_ALLOWED if not m.startswith("_")}) - _OWN_NAMES - _ELSEWHERE
RENAMED_MODULES = {"posix": "os", "_io": "io", "bltns": "builtins"}  # enum.bltns is builtins
# Third-party packages a candidate may import: PyTorch and the kernel libraries written for it. Any other installed
# package is refused, since installed packages turn strings into code in ways no list of refusals keeps up with
# (fsspec imports a class named by a string, execnet runs source in a new interpreter, pydantic evaluates annotations).
THIRD_PARTY_MODULES = frozenset({
    "torch", "triton", "numpy", "cuda", "nvmath", "cupy", "cupyx", "numba", "einops", "opt_einsum", "flashinfer",
    "vllm", "xformers", "flash_attn", "flash_attn_interface", "cutlass", "cutlass_library", "tilelang", "apex",
    "transformer_engine", "deep_gemm", "sgl_kernel", "liger_kernel", "torchao", "bitsandbytes", "fbgemm_gpu",
    "mamba_ssm", "causal_conv1d", "triton_kernels", "quack", "thunderkittens", "nvtx", "ml_dtypes", "packaging",
    "typing_extensions",
})
KNOWN_ROOTS = STDLIB_ALLOWED | THIRD_PARTY_MODULES | {"posix", "_io"}
# The private submodules of these libraries are refused but for ALLOWED_PRIVATE_MODULES: they hold helpers that
# import a module named by a string computed at run time (torch._utils._import_dotted_name, trace_rules' loaders,
# ...), which would hand candidate code gc, sys or the harness. Their private functions stay allowed (torch._scaled_mm).
PRIVATE_CHECKED = ("torch", "numpy", "triton")
# NVIDIA's bindings and CuPy: none of their private names at all. Their modules load by redirects (cuda.core.graph
# lives in cuda/core/cu13/), which no reading of files follows, and a compiled private module there binds ctypes
# (cuda.core.graph._host_callback.ct, red team round 6); honest kernels use their public API.
PRIVATE_REFUSED = ("cuda", "nvmath", "cupy", "cupyx")
# torch.compile's configuration and entry points; what kernels adapted from Inductor's output code import
# (triton_helpers' libdevice and math, its hints, its heuristics' launch decorators); the has_triton checks.
ALLOWED_PRIVATE_MODULES = {"torch._dynamo", "torch._dynamo.config", "torch._dynamo.exc", "torch._inductor",
                           "torch._inductor.config", "torch._functorch", "torch._functorch.config", "torch._logging",
                           "torch._inductor.runtime",
                           "torch._inductor.runtime.triton_helpers", "torch._inductor.runtime.hints",
                           "torch._inductor.runtime.triton_heuristics", "torch.utils._triton"}
# Single members of refused modules that torch.compile's output code imports, which kernels adapted from it keep:
# the raw-stream getter, allocation and layout helpers, the extern GEMM namespace (and what is under them).
ALLOWED_PRIVATE_PATHS = (
    "torch._C._cuda_getCurrentRawStream", "torch._C._dynamo.guards._empty_strided_cuda",
    "torch._C._dynamo.guards._empty_strided_cpu", "torch._C._dynamo.guards.assert_size_stride",
    "torch._C._dynamo.guards.assert_alignment", "torch._C._dynamo.guards._reinterpret_tensor",
    "torch._inductor.select_algorithm.extern_kernels", "torch._inductor.hooks.run_intermediate_hooks",
    "torch._inductor.utils.maybe_profile", "torch._inductor.utils.ceildiv",
    "torch._inductor.codegen.memory_planning._align", "torch._inductor.runtime.runtime_utils.next_power_of_2",
    "torch._inductor.runtime.runtime_utils.ceildiv", "torch._inductor.runtime.triton_compat.libdevice",
    "torch._inductor.runtime.triton_compat.tl", "torch._inductor.runtime.triton_compat.triton",
    "torch._dynamo.testing.rand_strided",
)
# The paths on the way to them (`torch._C._dynamo.guards`), judged only as the base of a longer one.
_ON_THE_WAY = frozenset(".".join(path.split(".")[:n]) for path in ALLOWED_PRIVATE_PATHS
                        for n in range(1, path.count(".") + 1))
# Their members by allowlist as well: torch._dynamo also holds explain() and export(), which hand back a graph module
# whose generated code pastes in repr() of its constants, and backends that compile whatever they are given.
PRIVATE_MEMBERS = {
    "torch._dynamo": {"config", "reset", "mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address",
                      "disable", "allow_in_graph", "disallow_in_graph", "forbid_in_graph", "is_compiling",
                      "graph_break", "assume_constant_result", "list_backends", "reset_code_caches", "set_stance",
                      "nonstrict_trace", "is_dynamo_supported", "is_inductor_supported", "OptimizedModule", "exc"},
    "torch._inductor": {"config", "runtime", "list_mode_options", "list_options"},
    "torch._functorch": {"config"},
    "torch._logging": {"set_logs"},
}
# sys, os, io and traceback by allowlist: what an honest kernel needs of them.
ALLOWED_MEMBERS = {
    "sys": {"version", "version_info", "hexversion", "implementation", "platform", "byteorder", "maxsize",
            "float_info", "int_info", "float_repr_style", "stdout", "stderr", "getsizeof", "getrecursionlimit",
            "getdefaultencoding", "getfilesystemencoding", "argv", "prefix", "base_prefix", "exec_prefix"},
    "gc": {"collect"},  # benchmarking code collects before it measures; the rest of gc reaches every object
    "os": {"environ", "getenv", "path", "sep", "pathsep", "linesep", "curdir", "pardir", "devnull", "name",
           "cpu_count", "process_cpu_count", "sched_getaffinity", "getpid", "getppid", "getcwd", "fspath", "PathLike",
           "makedirs", "listdir", "scandir", "stat", "urandom", "replace", "rename", "remove", "unlink"},
    "io": {"BytesIO", "StringIO", "IOBase", "TextIOBase", "BufferedIOBase", "UnsupportedOperation", "SEEK_SET",
           "SEEK_CUR", "SEEK_END", "DEFAULT_BUFFER_SIZE"},
    # A fallback's `except: traceback.print_exc()`, as kernels are written: text from the exception caught, down the
    # frames it passed through, source lines without locals; the rest of traceback walks frames (walk_stack).
    "traceback": {"print_exc", "format_exc", "print_exception", "format_exception", "format_exception_only"},
}
# The environment is read, never written: the compilers the harness runs read it (TRITON_PTXAS_PATH runs any program).
ENVIRON_READS = {"get", "keys", "items", "values", "copy"}
# ...but for the build settings of the candidate's own C++/CUDA, set by name (`os.environ["TORCH_CUDA_ARCH_LIST"] =
# "9.0a"`, how Hopper kernels ask for wgmma): torch.utils.cpp_extension reads them, no program path among them, and
# the native build cache keys on the architecture list.
BUILD_ENVIRONMENT = {"TORCH_CUDA_ARCH_LIST": re.compile(r"[0-9][0-9.]*[af]?(\+PTX)?([ ;][0-9][0-9.]*[af]?(\+PTX)?)*"),
                     "MAX_JOBS": re.compile(r"[0-9]+")}
# Modules that may only be used through their attributes, however they are reached (besides any bound by import).
ATTRIBUTE_ONLY_MODULES = {"sys", "os", "io", "gc", "traceback", "torch.library", "os.environ"}
# torch.library: what defines a new operator, what registers for one (the candidate's own only), what is free.
LIBRARY_DEFINE = {"custom_op", "triton_op", "define"}
LIBRARY_REGISTER = {"register_fake", "register_kernel", "register_autograd", "register_autocast", "register_vmap",
                    "register_torch_dispatch", "impl", "impl_abstract"}
LIBRARY_FREE = {"wrap_triton", "capture_triton", "get_ctx", "opcheck", "CustomOpDef", "infer_schema"}
TORCH_NAMESPACES = {
    "aten", "prims", "prim", "_", "quantized", "_quantized", "quantization", "sparse", "c10d", "_c10d_functional",
    "_c10d_functional_autograd", "_dtensor", "_native", "_test", "debugprims", "rngprims", "inductor",
    "inductor_prims", "higher_order", "mkl", "mkldnn", "mkldnn_prepacked", "onednn", "profiler", "export",
    "static_runtime", "symm_mem", "debug_mode_ops", "fbgemm", "torchvision", "torchaudio",
}
# Calls that run code the gate cannot see, or hand out the namespaces it is judged in.
FORBIDDEN_NAMES = {
    "exec": "dynamic code is not allowed", "eval": "dynamic code is not allowed",
    "compile": "dynamic code is not allowed", "__import__": "dynamic code is not allowed",
    "breakpoint": "dynamic code is not allowed", "__builtins__": "dynamic code is not allowed",
    "vars": "a namespace as a dict", "globals": "a namespace as a dict", "locals": "a namespace as a dict",
}
# The same names as attributes (`torch.compile` and `re.compile` are fine, `x.exec(...)` is not), and loaders of
# native code or evaluators of strings wherever they are re-exported (`triton.backends.nvidia.driver`, ...).
# from_file: torch maps a file of any path writable (shared=True), below the audit hook; so do the profiler's exports.
FORBIDDEN_ATTRIBUTE_NAMES = {"exec", "__import__", "breakpoint", "__builtins__", "load_library", "from_file",
                             "compile_module_from_src", "_evaluate", "export_chrome_trace", "export_stacks",
                             "export_memory_timeline",
                             # a Python callback on CUDA's own thread, in stream order (cuda.bindings, cupy...)
                             "cuLaunchHostFunc", "cuStreamAddCallback", "cudaLaunchHostFunc", "cudaStreamAddCallback",
                             "launchHostFunc", "streamAddCallback", "launch_host_func", "add_callback",
                             # unpicklers behind allowed members: a configuration module's load_config (torch's
                             # config modules unpickle what is not a dict), numpy's pickle loads
                             "load_config", "read_array", "read_array_header_1_0", "read_array_header_2_0",
                             # hands back a module (torch.cuda) as a value, its attributes then written freely
                             "get_device_module",
                             # a Triton kernel's source other than the one read here: Inductor pastes a user
                             # kernel's source into the Python module it writes and imports
                             "_unsafe_update_src", "_src",
                             # sys._getframe by another name (logging's, inspect's)
                             "currentframe",
                             # torch.compile's artifacts from a file: unpickled, and code the gate never read
                             "load_cache_artifacts", "load_compiled_function"}
DYNAMIC_ACCESS = {"getattr", "hasattr", "setattr", "delattr"}
# Refused wherever they are named: attribute, constant getattr name, match pattern, keyword or string constant.
INTROSPECTION = {
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "gi_frame", "gi_code", "gi_yieldfrom",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame", "ag_code", "ag_await", "tb_frame", "tb_next",
    "co_consts", "co_code", "co_names", "cell_contents", "_getframe", "_current_frames", "_current_exceptions",
    "exc_info", "last_traceback", "last_exc", "settrace", "setprofile", "fileno", "__globals__", "__builtins__",
    "__dict__", "__code__", "__closure__", "__traceback__", "__subclasses__", "__getattribute__", "__setattr__",
    "__annotations__",  # copied by name (functools.update_wrapper), then evaluated by whoever reads them
}
INTERCEPTION = {
    "__torch_function__", "__torch_dispatch__", "TorchFunctionMode", "TorchDispatchMode", "BaseTorchFunctionMode",
    "py_impl", "py_kernels", "py_functionalize_impl", "python_key_table", "functorch_table",
    "register_module_forward_hook", "register_module_forward_pre_hook",
}
# numpy makes an array of whatever address such an attribute names: the process's memory, read and written from
# Python (defined by a class, a computed namespace or a keyword; a string constant is how a namespace names it).
RAW_MEMORY = {"__array_interface__", "__array_struct__"}
REFUSED_STRINGS = INTROSPECTION | INTERCEPTION | RAW_MEMORY
# Dunder attributes an honest kernel uses; any other (__dict__, __self__, __mro__, __loader__, ...) is refused.
ALLOWED_DUNDERS = {f"__{name}__" for name in (
    "name", "qualname", "doc", "module", "version", "file", "class", "init", "new", "call", "enter", "exit", "len",
    "iter", "next", "getitem", "setitem", "contains", "repr", "str", "format", "hash", "bool", "index", "int",
    "float", "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "add", "sub", "mul", "matmul", "truediv",
    "floordiv", "mod", "pow", "and", "or", "xor", "radd", "rsub", "rmul", "rtruediv", "wrapped",
    "cuda_array_interface", "array", "dlpack", "dlpack_device", "members", "post_init", "init_subclass",
    "lshift", "rshift", "invert", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
    "iand", "ior", "ixor", "ilshift", "irshift", "rmatmul", "rfloordiv", "rmod", "rpow", "rand", "ror", "rxor",
    "rlshift", "rrshift", "round", "floor", "ceil", "trunc", "complex", "reversed", "missing", "delitem",
)}
# Dunder names a module may read, and those it may bind.
ALLOWED_DUNDER_NAMES = ALLOWED_DUNDERS | {"__debug__", "__package__"}
# Not __name__: a module that could rebind it could run its `if __name__ == "__main__":` block, which is not judged.
BOUND_DUNDER_NAMES = ALLOWED_DUNDERS - {"__class__", "__name__"} | {
    "__all__", "__slots__", "__match_args__", "__constants__", "__author__", "__license__"}
# Paths that name a file descriptor or process memory.
DESCRIPTOR_PATH = re.compile(r"^/(proc/[^/]+/(fd|fdinfo|mem)\b|dev/fd\b|dev/mem\b)")
# Suspicious, not unsafe: reported with the decision.
SUSPICIOUS_ATTRIBUTES = {
    "torch.cuda.Stream": "creates a CUDA stream (side-stream work is timed device-wide)",
    "torch.cuda.stream": "switches CUDA streams (side-stream work is timed device-wide)",
    "torch.cuda.ExternalStream": "uses an external CUDA stream",
    "os.environ": "reads the environment",
    "os.getenv": "reads the environment",
}
# Knobs an honest kernel sets for itself, which rule 8 would read as patches: they change how its own process
# computes (the reference and the incumbent run elsewhere), and none is a function the harness calls. Precision
# switches are not among them (TF32 changes what the problem computes; the seal fails a candidate that sets them).
SETTINGS = {"torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic", "torch.backends.cudnn.enabled",
            "torch.backends.mkldnn.enabled", "torch.backends.opt_einsum.enabled"}
# Precision switches may only be set to their exact value (towards exact float32: TF32 off, reduced-precision
# reductions off, torch 2.9's fp32_precision "ieee"): the seal still fails a change of the harness's.
STRICT_SETTINGS: dict[str, object] = {
    "torch.backends.cuda.matmul.allow_tf32": False, "torch.backends.cudnn.allow_tf32": False,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": False,
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": False,
    **{f"torch.backends.{name}fp32_precision": "ieee" for name in ("", "cuda.matmul.", "cudnn.", "cudnn.conv.",
                                                                   "cudnn.rnn.", "mkldnn.", "mkldnn.matmul.",
                                                                   "mkldnn.conv.", "mkldnn.rnn.")},
}
_UNSET = object()  # no constant was assigned
SETTING_NAMESPACES = ("torch._dynamo.config.", "torch._inductor.config.", "torch._functorch.config.",
                      "torch.compiler.config.", "triton.knobs.autotuning.")
# torch.compile by its names: its options are settings. Used other than by a call or as a decorator (handed to
# functools.partial, say) its options would go unread.
COMPILE_ENTRIES = {"torch.compile", "torch.compiler.compile"}
TEMPLATE_METHODS = {"format", "format_map", "vformat"}  # str's and string.Formatter's: fields read attributes
# C++/CUDA compiled from source (torch.utils.cpp_extension.load_inline, the KernelBench route) is how people write
# kernels, so it is allowed; native code can do anything in its process, so it is contained, not checked.
NATIVE_MODULE = "torch.utils.cpp_extension"
NATIVE_WARNING = ("compiles native code (torch.utils.cpp_extension): the gate cannot read it, and its worker's own "
                  "timer and checks cannot be sealed against it (its process isolation still holds)")


@dataclass(frozen=True)
class GateResult:
    ok: bool
    reason: str = ""
    warnings: list[str] = field(default_factory=list)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _format_attributes(text: str) -> list[str]:
    """The attribute names a string reads where it is used as a str.format template (``{0.f_back.f_code}``),
    nested fields of a format spec included; none where it is not a template."""
    if "{" not in text:
        return []
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return []
    names: list[str] = []
    for _, name, spec, _ in fields:
        names += re.findall(r"\.(\w+)", name or "") + _format_attributes(spec or "")
    return names


def _refused_name(name: str) -> str | None:
    """Why an attribute name is refused wherever it appears, or None."""
    if name in INTERCEPTION:
        return f"names {name} (intercepts PyTorch operators)"
    if name in INTROSPECTION or (_dunder(name) and name not in ALLOWED_DUNDERS):
        return f"reaches {name}"
    if name in FORBIDDEN_ATTRIBUTE_NAMES:
        return f"reaches {name}"
    return None


@functools.lru_cache(maxsize=4096)  # a kernel names the same few paths hundreds of times
def _canonical(dotted: str) -> str:
    """The path a resolved name really is: from the last module name in it (`torch.os.path` is `os.path`)."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ALLOWED_MEMBERS["sys"] and _canonical(".".join(parts[:i])) == "sys":
            parts = ["sys", *parts[i:]]  # `sys.platform` is a string, not the module of that name
            break
        name = parts[i] if parts[i] in MODULE_NAMES else parts[i].lstrip("_")
        if name in MODULE_NAMES and ".".join(parts[: i + 1]) != "torch.signal":
            parts = [name, *parts[i + 1 :]]
            break
        # Another module a module imported (`torch.nn.functional.torch` is torch, `torch.cuda.memory._C` is
        # torch._C): that module.
        imported = _module_imports(tuple(parts[:i])).get(parts[i])
        if imported is not None:
            parts = [*imported.split("."), *parts[i + 1 :]]
            break
    parts[0] = RENAMED_MODULES.get(parts[0], parts[0])
    return ".".join(parts)


@functools.lru_cache(maxsize=4096)
def _a_setting(path: str) -> bool:
    """Whether assigning ``path`` sets one of the knobs an honest kernel sets for its own process (cuDNN's
    autotuner, torch.compile's configuration) rather than patching what the harness runs."""
    return path in SETTINGS or any(path.startswith(prefix) for prefix in SETTING_NAMESPACES)


def _settings_patch(path: str) -> bool:
    """Whether ``path`` is a configuration's ``patch`` (its arguments are settings)."""
    return path.endswith(".patch") and _a_setting(path)


def _setting_key(path: str) -> str:
    """A setting's key within its namespace (``torch._inductor.config.cpp.march`` -> ``cpp.march``)."""
    return next((path.removeprefix(prefix) for prefix in SETTING_NAMESPACES if path.startswith(prefix)), path)


def _forbidden_dotted(dotted: str, resolved: bool = True) -> bool:
    """Whether a path resolved from an import is refused: it, or a path above it, is forbidden; it is a private
    member of a standard-library module, a member of sys, os or io outside their allowlists, or of torch.library
    outside what it allows."""
    if any(dotted == path or dotted.startswith(path + ".") for path in ALLOWED_PRIVATE_PATHS):
        return False
    parts = dotted.split(".")
    if not resolved:  # a local name, not a module (`code.co_filename` on a variable named code); an unbound os is os
        return len(parts) > 1 and parts[0] in ("os", "sys") and parts[1] not in ALLOWED_MEMBERS[parts[0]]
    if dotted.startswith("arcengine") or any(".".join(parts[:n]) in FORBIDDEN_MODULES | FORBIDDEN_ATTRIBUTES
                                             for n in range(1, len(parts) + 1)):
        return True
    if parts[0].isidentifier() and parts[0] not in KNOWN_ROOTS:
        return True  # a package installed beside torch, not one kernels are written with
    if len(parts) < 2:
        return False
    if parts[0] in STDLIB_MODULES and any(p.startswith("_") and not _dunder(p) for p in parts[1:]):
        return parts[0] != "faulthandler"  # its private members only crash the process: a fail, not a cheat
    if parts[0] in PRIVATE_CHECKED and _private_submodule(tuple(parts)):
        return True
    if parts[0] in PRIVATE_REFUSED and any(p.startswith("_") and not _dunder(p) for p in parts[1:]):
        return True
    if len(parts) > 2 and parts[2] not in PRIVATE_MEMBERS.get(".".join(parts[:2]), {parts[2]}):
        return True
    if parts[:2] == ["os", "environ"] and len(parts) > 2:
        return parts[2] not in ENVIRON_READS
    if parts[0] in ALLOWED_MEMBERS:
        return parts[1] not in ALLOWED_MEMBERS[parts[0]]
    return parts[:2] == ["torch", "library"] and len(parts) > 2 and (
        parts[2] not in LIBRARY_DEFINE | LIBRARY_REGISTER | LIBRARY_FREE)


def _build_setting(call: ast.Call) -> bool:
    """``setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")``: a build setting named by a constant, with a constant value
    of its own form (architectures, a number of jobs: nothing that could become a flag)."""
    return (len(call.args) == 2 and not call.keywords and isinstance(call.args[0], ast.Constant)
            and _build_value(call.args[0].value, call.args[1]))


def _build_value(name: object, value: ast.expr | None) -> bool:
    """Whether ``value`` is a constant of the form BUILD_ENVIRONMENT gives the build setting ``name``."""
    return (name in BUILD_ENVIRONMENT and isinstance(value, ast.Constant) and isinstance(value.value, str)
            and BUILD_ENVIRONMENT[str(name)].fullmatch(value.value) is not None)


def _private_submodule(parts: tuple[str, ...]) -> bool:
    """Whether a path of torch, numpy or triton passes through a private submodule outside the allowlist."""
    private = [n for n in range(2, len(parts) + 1) if parts[n - 1].startswith("_") and not _dunder(parts[n - 1])]
    # Every module from the first private component down: torch._dynamo.trace_rules is private as torch._dynamo is.
    return bool(private) and any(_is_module(parts[:n]) and ".".join(parts[:n]) not in ALLOWED_PRIVATE_MODULES
                                 for n in range(private[0], len(parts) + 1))


@functools.lru_cache(maxsize=4096)
def _module_file(parts: tuple[str, ...]) -> Path | None:
    """The file of the module a dotted path names in an installed package or the standard library, read from the
    file system (nothing is imported); None if it names no module."""
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if len(parts) == 1:
        return Path(spec.origin) if spec.origin and Path(spec.origin).is_file() else None
    for root in spec.submodule_search_locations or []:
        path = Path(root, *parts[1:])
        for file in (path.with_suffix(".py"), path / "__init__.py", *path.parent.glob(f"{parts[-1]}.*.so")):
            if file.is_file():
                return file
    return None


def _is_module(parts: tuple[str, ...]) -> bool:
    """Whether a dotted path names a module of an installed package or of the standard library."""
    return _module_file(parts) is not None


@functools.lru_cache(maxsize=1024)
def _module_imports(parts: tuple[str, ...]) -> dict[str, str]:
    """The modules a module binds by ``import`` (the name bound, the module's path), read from its source: what
    it re-exports as an attribute, e.g. ``torch`` in ``torch.nn.functional``."""
    file = _module_file(parts) if parts and parts[0].isidentifier() else None
    if file is None or file.suffix != ".py":
        return {}
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    package = parts if file.name == "__init__.py" else parts[:-1]  # what a relative import starts from
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                bound[alias.asname or root] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom) and node.level <= len(package):
            # `from torch import _C` binds a module too (`torch.cuda.memory._C` is torch._C)
            origin = [*package[: len(package) - node.level + 1 if node.level else 0], *(node.module or "").split(".")]
            origin = [part for part in origin if part]
            for alias in node.names:
                if origin and alias.name != "*" and _is_module((*origin, alias.name)):
                    bound[alias.asname or alias.name] = ".".join([*origin, alias.name])
    return bound


def _names_module(path: str) -> bool:
    """Whether a resolved path is a module (`torch.nn.functional`, `sys`), not a member of one."""
    return path in ATTRIBUTE_ONLY_MODULES or path in MODULE_NAMES or _is_module(tuple(path.split(".")))


def _literal_value(node: ast.AST | None) -> bool:
    """Whether ``node`` is a literal (a constant, or containers of them): a value, never code."""
    try:
        ast.literal_eval(node)  # type: ignore[arg-type]
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _bindings(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Every name the module binds anywhere, with the node that binds it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node.id, node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield from ((alias.asname or alias.name.split(".")[0], node) for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, node
        elif isinstance(node, ast.Global | ast.Nonlocal):
            yield from ((name, node) for name in node.names)
        elif isinstance(node, ast.arg):  # a parameter shadows a module's name in its function
            yield node.arg, node
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name, node
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, node


def _module_constants(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Names bound only by top-level assignments of literals (``BLOCK = 128``), nowhere else in any way, each with
    the literals it is bound to."""
    literal_targets = {id(target): statement.value for statement in tree.body if isinstance(statement, ast.Assign)
                       and _literal_value(statement.value) for target in statement.targets}
    constants: dict[str, list[ast.expr]] = {}
    others: set[str] = set()
    for name, node in _bindings(tree):
        if id(node) in literal_targets:
            constants.setdefault(name, []).append(literal_targets[id(node)])
        else:
            others.add(name)
    return {name: values for name, values in constants.items() if name not in others}


def _compile_entry(path: str) -> bool:
    """Whether ``path`` is torch.compile by one of its names: ``torch.compile`` and a module class's ``compile``
    (``torch.nn.Linear.compile``: nn.Module's hands its arguments to torch.compile)."""
    return path in COMPILE_ENTRIES or (path.startswith("torch.") and path.endswith(".compile"))


def _dynamic_access(node: ast.AST) -> str | None:
    """``getattr`` for ``getattr(x, ...)`` (and hasattr, setattr, delattr), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_ACCESS:
        return node.func.id
    return None


def _qualname(call: ast.Call) -> str | None:
    """The constant "ns::name" a torch.library call is about (first argument, or name=/qualname=/op=)."""
    candidates = call.args[:1] + [k.value for k in call.keywords if k.arg in ("name", "qualname", "op")]
    for value in candidates:
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and "::" in value.value:
            return value.value
    return None


class _Checker:
    """Walks a module, resolving names (``import os as o`` makes ``o.system`` ``os.system``)."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # name -> the path it is bound to
        self.modules: set[str] = set()  # names bound by `import`: modules, used only through their attributes
        self.bases: set[int] = set()  # ids of nodes in a position where a module may be: `m.x`, getattr(m, "x")
        self.callees: set[int] = set()  # ids of nodes that are called
        self.constant_stores: dict[int, object] = {}  # ids of targets assigned a constant, and the constant
        self.namespaces: set[str] = set()  # operator namespaces the candidate's own custom ops define
        self.shadowed: set[int] = set()  # ids of uses of a builtin's name that are a function's own variable
        self.imported_names: set[str] = set()  # names bound by an unconditional import at the module's top
        self.literal_stores: set[int] = set()  # ids of assignment targets given a literal value
        self.build_settings: set[int] = set()  # ids of `os.environ.setdefault` called with a build setting's name
        self.decorators: set[int] = set()  # ids of a def's or class's decorator expressions
        self.alias_values: set[int] = set()  # ids of `F = torch.nn.functional`'s value: a module bound to a name
        self.tree: ast.Module | None = None  # the module, for what is read of it only when needed
        self._constants: dict[str, list[ast.expr]] | None = None
        self._bound: set[str] | None = None  # every name the module binds (read once a builtin's call needs it)
        self.store_values: dict[int, ast.expr] = {}  # id of an attribute assigned a literal -> the literal
        self.warnings: list[str] = []

    def warn(self, node: ast.AST, message: str) -> None:
        text = f"{message} (line {getattr(node, 'lineno', '?')})"
        if text not in self.warnings:
            self.warnings.append(text)

    def resolve(self, node: ast.AST) -> tuple[str, bool]:
        """The dotted path ``node`` spells (``getattr(m, "x")`` spells ``m.x``) and whether its root is bound to an
        import (then the path is canonical: ``os.sys.modules`` is ``sys.modules``); ``""`` if it is no path."""
        parts = []
        while True:
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif (isinstance(node, ast.Call) and _dynamic_access(node) == "getattr"
                  and (name := self.attribute_name(node))):
                parts.append(name)
                node = node.args[0]
            else:
                break
        if not isinstance(node, ast.Name):
            return "", False
        if node.id in self.aliases:
            return _canonical(".".join([self.aliases[node.id], *reversed(parts)])), True
        dotted = ".".join([node.id, *reversed(parts)])
        # On any object, a module's name leads to that module (a parameter bound to torch.nn.functional: `m.torch`,
        # `m.sys`): the path starts again there, resolved, as on an import's.
        canonical = _canonical(dotted) if parts else dotted
        return (canonical, True) if canonical != dotted else (dotted, False)

    def dotted(self, node: ast.AST) -> str:
        return self.resolve(node)[0]

    # ---------------------------------------------------------------- before the walk

    def bind_imports(self, node: ast.Import | ast.ImportFrom) -> str | None:
        """Bind an import's names; why it is refused, or None."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                path = _canonical(alias.name)
                if _forbidden_dotted(path):
                    return f"imports {alias.name}"
                self.note_native(node, path)
                bound = alias.asname or alias.name.split(".")[0]  # `import a.b` binds `a`
                self.aliases[bound] = path if alias.asname else _canonical(bound)
                self.modules.add(bound)
            return None
        if node.level or not node.module:
            return "uses a relative import"
        for alias in node.names:
            if alias.name == "*":
                return f"imports * from {node.module} (names the gate cannot see)"
            full = _canonical(f"{node.module}.{alias.name}")
            named = alias.asname or alias.name  # `from torch import compile` binds torch.compile, not the builtin
            if _forbidden_dotted(full) or _refused_name(alias.name) or (
                    named in FORBIDDEN_NAMES and named not in self.imported_names):
                return f"imports {alias.name} from {node.module}"
            self.note_native(node, full)
            self.aliases[alias.asname or alias.name] = full
        return None

    def note_native(self, node: ast.AST, path: str) -> None:
        if path == NATIVE_MODULE or path.startswith(f"{NATIVE_MODULE}."):
            self.warn(node, NATIVE_WARNING)

    def note_positions(self, nodes: list[ast.AST]) -> None:
        """Where modules may appear, what is called, names bound to imported paths, the candidate's namespaces."""
        calls: list[ast.Call] = []
        for node in nodes:
            if isinstance(node, ast.Attribute | ast.Subscript):
                self.bases.add(id(node.value))
            elif isinstance(node, ast.Call):
                self.callees.add(id(node.func))
                calls.append(node)
                if _dynamic_access(node) and self.attribute_name(node):
                    self.bases.add(id(node.args[0]))
            elif isinstance(node, ast.Compare):  # `if triton is None`
                self.bases.update(id(n) for n in [node.left, *node.comparators])
            elif isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):  # an optional import's truth
                self.bases.add(id(node.test))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                self.bases.add(id(node.operand))
            elif isinstance(node, ast.BoolOp) and id(node) in self.bases:  # `if triton and x.is_cuda:`, not
                self.bases.update(id(n) for n in node.values)  # `m = sys or x`, which is sys
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.decorators.update(id(decorator) for decorator in node.decorator_list)
            elif isinstance(node, ast.Assign):
                self.bind_assignment(node)
                if self.literal(node.value):  # a knob set to a value, not to code of the candidate's
                    self.literal_stores.update(id(target) for target in node.targets)
                    self.store_values.update((id(target), node.value) for target in node.targets)
                if isinstance(node.value, ast.Constant):
                    self.constant_stores.update((id(target), node.value.value) for target in node.targets)
        for call in calls:
            if self.resolve(call.func) == ("os.environ.setdefault", True) and _build_setting(call):
                self.build_settings.add(id(call.func))
            qualname = _qualname(call)
            if qualname and qualname.partition("::")[0] not in TORCH_NAMESPACES:
                path, resolved = self.resolve(call.func)
                if resolved and path.startswith("torch.library.") and path[14:] in LIBRARY_DEFINE:
                    self.namespaces.add(qualname.partition("::")[0])

    def bind_assignment(self, node: ast.Assign) -> None:
        """``T = torch.Tensor`` binds T to torch.Tensor (``T.add = f`` patches torch); ``T = type(x)`` binds T to
        a class from elsewhere (``T.add = f`` patches it)."""
        match node:
            case ast.Assign(targets=[ast.Name(id=name)], value=ast.Attribute() | ast.Call() as value) if (
                    name not in self.aliases and (isinstance(value, ast.Attribute) or _dynamic_access(value))):
                path, resolved = self.resolve(value)
                if resolved:
                    self.aliases[name] = path
                    if _names_module(path):  # `F = torch.nn.functional`: F is then used as an import's name is
                        self.modules.add(name)
                        self.alias_values.add(id(value))
            case ast.Assign(targets=[ast.Name(id=name)], value=ast.Call(func=ast.Name(id="type"), args=[_])):
                self.aliases.setdefault(name, "type()")

    # ---------------------------------------------------------------- the rules

    def violation(self, node: ast.AST) -> str | None:
        rule = _RULES.get(type(node))
        return rule(self, node) if rule else None

    def name_violation(self, node: ast.Name) -> str | None:
        name, load = node.id, isinstance(node.ctx, ast.Load)
        own = id(node) in self.shadowed or (load and name in self.imported_names)
        if name in FORBIDDEN_NAMES and not own:
            return f"uses {name} ({FORBIDDEN_NAMES[name]})"
        if _dunder(name):
            if name in INTERCEPTION:
                return f"{'names' if load else 'defines'} {name} (intercepts PyTorch operators)"
            if load and name not in ALLOWED_DUNDER_NAMES:
                return f"reaches {name}"
            if not load and name not in BOUND_DUNDER_NAMES:
                return f"binds {name}"
        if load and name in DYNAMIC_ACCESS and id(node) not in self.callees:
            return f"uses {name} other than by calling it"
        if load and name in self.aliases:  # `from torch.nn import functional` binds a module too
            path = self.aliases[name]
            return self.path_violation(node, path, True, name in self.modules or _names_module(path))
        return None

    def function_violation(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        if node.name in RAW_MEMORY:
            return f"defines {node.name} (numpy reads and writes memory at any address it names)"
        return f"defines {node.name} (intercepts PyTorch operators)" if node.name in INTERCEPTION else None

    def subscript_violation(self, node: ast.Subscript) -> str | None:
        if not isinstance(node.ctx, ast.Load) and self.resolve(node.value) == ("os.environ", True):
            key = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if isinstance(node.ctx, ast.Store) and _build_value(key, self.store_values.get(id(node))):
                return None
            return "writes the environment (compilers the harness runs read it)"
        return None

    def match_violation(self, node: ast.MatchClass) -> str | None:
        """A class pattern's keywords read attributes of whatever the subject is (``case object(sys=s)`` is
        ``getattr(subject, "sys")``), where no path says what they reach: a module's name or a private member is
        refused there, as every name refused in an attribute is."""
        for name in node.kwd_attrs:
            if name in MODULE_NAMES or (name.startswith("_") and not _dunder(name)):
                return f"reads {name} through a match pattern (a module or a private member, reached from a value)"
            if why := _refused_name(name):
                return f"{why} in a match pattern"
        return None

    def keyword_violation(self, node: ast.keyword) -> str | None:
        name = node.arg or ""
        if name == "allow_pickle" and not (isinstance(node.value, ast.Constant) and node.value.value is False):
            return "passes allow_pickle (an unpickler runs any code its bytes name)"
        why = _refused_name(name) if _dunder(name) or name in INTERCEPTION else None
        return f"{why} as a keyword" if why else None

    def string_violation(self, node: ast.Constant | ast.JoinedStr) -> str | None:
        if isinstance(node, ast.JoinedStr):  # f"/proc/{pid}/fd/3" reads /proc/*/fd/3
            text = "".join(str(v.value) if isinstance(v, ast.Constant) else "*" for v in node.values)
        elif type(node.value) is str:
            text = node.value
        else:
            return None
        if text in REFUSED_STRINGS or DESCRIPTOR_PATH.match(text):
            return f"names {text!r} in a string"
        if isinstance(node, ast.Constant) and (why := next(filter(None, map(_refused_name, _format_attributes(text))),
                                                           None)):
            return f"{why} in a format string"  # "{0.f_back.f_globals}".format(frame) reads attributes by name
        return None

    def try_warnings(self, node: ast.Try) -> None:
        for handler in node.handlers:
            if any(self.dotted(c.func).startswith("torch") for c in ast.walk(handler) if isinstance(c, ast.Call)):
                self.warn(handler, "try/except falls back to PyTorch: the fallback would be what is timed")

    def path_violation(self, node: ast.AST, path: str, resolved: bool, module: bool = False) -> str | None:
        """Rules on a name or attribute that resolves to ``path``."""
        if path in _ON_THE_WAY and id(node) in self.bases:
            return None  # `torch._C._dynamo.guards` on the way to an allowed member: the whole path is judged
        if _forbidden_dotted(path, resolved):
            return f"uses {path}"
        if not resolved:
            return None
        if (module or path in ATTRIBUTE_ONLY_MODULES) and id(node) not in self.bases:
            return f"uses {path} as a value (it is used only through its attributes)"
        if _a_setting(path) and any(part.startswith("_") for part in _setting_key(path).split(".")):
            # A configuration's own machinery (`_config[...]`, `_set_alias_val`) sets a knob past every check here.
            return f"reaches {path} (a configuration's private member)"
        if ((_compile_entry(path) or _settings_patch(path))
                and id(node) not in self.callees and id(node) not in self.decorators):
            return f"uses {path} other than by calling it (the settings it is given are read only in a call)"
        member = path[14:] if path.startswith("torch.library.") else ""
        if member in LIBRARY_DEFINE | LIBRARY_REGISTER and id(node) not in self.callees:
            return f"uses {path} other than by calling it"
        return None

    def attribute_violation(self, node: ast.Attribute) -> str | None:
        if id(node) in self.build_settings:
            return None
        path, resolved = self.resolve(node)
        # A module reached through an attribute (`torch.nn.functional.torch`) is as much a module as an import's
        # name: passed or stored as a value, its attributes are then read and written where no path shows it.
        module = (resolved and isinstance(node.ctx, ast.Load) and id(node) not in self.alias_values
                  and _names_module(path))
        why = (path and self.path_violation(node, path, resolved, module)) or _refused_name(node.attr)
        if why:
            return why
        if isinstance(node.ctx, ast.Store | ast.Del):  # an assignment, loop target, del, setattr or delattr
            if path.startswith("type()."):
                return f"patches a class through {ast.unparse(node.value)} = type(...)"
            if resolved and isinstance(node.ctx, ast.Store) and path in STRICT_SETTINGS:
                exact, given = STRICT_SETTINGS[path], self.constant_stores.get(id(node), _UNSET)
                if type(given) is type(exact) and given == exact:
                    return None
                return (f"turns on {path} (only off is allowed)" if exact is False
                        else f"sets {path} to other than {exact!r} (only exact float32 is allowed)")
            if resolved and not (isinstance(node.ctx, ast.Store) and _a_setting(path)):
                return f"monkey-patches {path}"
            if resolved and id(node) not in self.literal_stores:
                return f"sets {path} to a computed value (a callable there runs on torch.compile's graphs)"
            if resolved and (why := self.setting_value_violation(_setting_key(path), self.store_values[id(node)])):
                return why
            base = node.value
            if (isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "type") or (
                isinstance(base, ast.Attribute) and base.attr == "__class__"
            ):
                return f"patches a class through {ast.unparse(base)}"
            if _dunder(node.attr):
                return f"assigns {node.attr}"
        if path in SUSPICIOUS_ATTRIBUTES:
            self.warn(node, SUSPICIOUS_ATTRIBUTES[path])
        if resolved:
            self.note_native(node, path)
        return None

    def call_violation(self, node: ast.Call) -> str | None:
        if (why := self.template_violation(node)):
            return why
        access = _dynamic_access(node)
        if access:
            name = self.attribute_name(node)
            return self.access_violation(node, access, name) if name else f"{access} with a computed attribute name"
        func = node.func.id if isinstance(node.func, ast.Name) else ""
        if func == "type" and len(node.args) == 3:
            return "builds a class with type() (its namespace is computed)"
        if func == "open":
            file = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "file"), None)
            if (isinstance(file, ast.Constant) and isinstance(file.value, int)) or any(
                k.arg in ("opener", "closefd") for k in node.keywords
            ):
                return "opens a file descriptor (writing to inherited descriptors forges the harness's messages)"
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                                 None)
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
                self.warn(node, "writes a file")
        if (isinstance(node.func, ast.Attribute) and node.func.attr in ARGPARSE_PARSES
                and (len(node.args) > 1 or any(k.arg == "namespace" for k in node.keywords))):
            return f"gives {node.func.attr} a namespace (it sets the attributes its arguments name, on any object)"
        path, resolved = self.resolve(node.func)
        if resolved and path == "functools.wraps" and id(node) not in self.decorators:
            return "calls functools.wraps other than as a decorator (it copies one object's namespace onto another's)"
        if resolved and path.startswith("torch.library."):
            return self.library_violation(node, path)
        if (resolved or self.method_compile(node.func)) and (
                why := self.compile_code_violation(node, path if resolved else "")):
            return why
        return None

    def attribute_name(self, call: ast.Call) -> str | None:
        """The name a getattr/hasattr/setattr/delattr call reads: its string literal, or that of a module constant
        bound only to it (``DTYPE = "bfloat16"; getattr(torch, DTYPE)``); None if computed."""
        literals = self._constant_literals(call.args[1]) if len(call.args) >= 2 else []
        if len(literals) == 1 and isinstance(literals[0], ast.Constant) and type(literals[0].value) is str:
            return literals[0].value
        return None

    def access_violation(self, node: ast.Call, access: str, name: str) -> str | None:
        """getattr(x, "name") and its kind judged as ``x.name`` would be. hasattr's answer is a bool: only what the
        path is counts there (a module or torch.compile reached is never handed on)."""
        ctx = {"setattr": ast.Store(), "delattr": ast.Del()}.get(access, ast.Load())
        spelled = ast.copy_location(ast.Attribute(value=node.args[0], attr=name, ctx=ctx), node)
        if id(node) in self.alias_values:  # `cpp = getattr(torch.utils, "cpp_extension")` binds a module
            self.alias_values.add(id(spelled))
        if access == "hasattr":
            self.bases.add(id(spelled))
            self.callees.add(id(spelled))
        if access == "setattr" and len(node.args) > 2 and self.literal(node.args[2]):
            self.literal_stores.add(id(spelled))
            self.store_values[id(spelled)] = node.args[2]
        why = self.attribute_violation(spelled)
        return f"{why} (through {access})" if why else None

    def annotation_library_call(self, call: ast.Call) -> bool:
        """Whether a call in an annotation is a kernel language's buffer declaration (ANNOTATION_LIBRARIES)."""
        path, resolved = self.resolve(call.func)
        return resolved and path.split(".")[0] in ANNOTATION_LIBRARIES

    def literal(self, node: ast.AST | None) -> bool:
        """A literal, a module constant only ever bound to one (``COORDINATE_DESCENT = False``, a TUNABLE), or
        arithmetic and containers of these (``2 ** 8``, ``{"max_autotune": MAX_AUTOTUNE}``)."""
        if isinstance(node, ast.Name) and self.tree is not None:
            if self._constants is None:  # a walk of the whole module, so only once a knob is set from a name
                self._constants = _module_constants(self.tree)
            return node.id in self._constants
        if _literal_value(node):
            return True
        match node:
            case ast.BinOp(left=left, right=right):
                return self.literal(left) and self.literal(right)
            case ast.UnaryOp(operand=operand):
                return self.literal(operand)
            case ast.Dict(keys=keys, values=values):
                return all(key is not None and self.literal(key) for key in keys) and all(map(self.literal, values))
            case ast.Call() if (spelled := self.dict_call(node)) is not None:
                return self.literal(spelled)
            case ast.Tuple(elts=items) | ast.List(elts=items) | ast.Set(elts=items):
                return all(map(self.literal, items))
        return False

    def method_compile(self, func: ast.expr) -> bool:
        """Whether ``func`` is a method named compile of a value (``m.compile``, ``getattr(m, "compile")``): an
        nn.Module's hands its arguments to torch.compile."""
        if isinstance(func, ast.Attribute):
            return func.attr == "compile"
        return isinstance(func, ast.Call) and _dynamic_access(func) == "getattr" and self.attribute_name(func) == \
            "compile"

    def dict_call(self, node: ast.Call) -> ast.Dict | None:
        """``dict(max_autotune=True)`` as the literal ``{"max_autotune": True}`` it makes, where ``dict`` is the
        builtin (the module binds no other) and every argument is a named keyword; None otherwise."""
        if not (isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args
                and all(k.arg for k in node.keywords)):
            return None
        if self._bound is None and self.tree is not None:
            self._bound = {name for name, _ in _bindings(self.tree)}
        if self._bound is None or "dict" in self._bound:
            return None
        return ast.Dict(keys=[ast.Constant(k.arg) for k in node.keywords], values=[k.value for k in node.keywords])

    def compile_code_violation(self, call: ast.Call, path: str) -> str | None:
        """A torch.compile (or a method named compile on a value, which may be nn.Module's, or ``""``) whose backend
        or options are not literals or are spread with ``**``, or a configuration patch with computed values:
        torch.compile's ways of running a callable on the graphs it builds. torch.fx writes repr() of a graph's
        constants into the Python it generates and execs, so a graph in the candidate's hands turns an object's repr
        into code with the real builtins (torch.fx, torch.export and dynamo's backend registry are refused as
        modules and attributes)."""
        if _compile_entry(path) or (not path and self.method_compile(call.func)):
            given, name = {k.arg: k.value for k in call.keywords}, path or "a .compile method"
            if None in given:
                return f"spreads {name}'s arguments with ** (only named ones: its backend and options are read there)"
            if any(not self.literal(given[key]) for key in ("backend", "options") if key in given):
                return f"calls {name} with a computed backend or options (only names of torch's own, as literals)"
            return self.settings_violation(given["options"], "") if "options" in given else None
        if _settings_patch(path):
            values = [*call.args, *(k.value for k in call.keywords)]
            if not all(map(self.literal, values)) or any(k.arg is None for k in call.keywords):
                return f"calls {path} with computed values or keys"
            prefix = _setting_key(path.removesuffix("patch"))  # "" or "triton." (a nested config's patch)
            if len(call.args) == 2:  # patch("key", value)
                return self.keyed_setting_violation(prefix, call.args[0], call.args[1])
            return next(filter(None, [*(self.settings_violation(arg, prefix) for arg in call.args),
                                      *(self.setting_value_violation(f"{prefix}{k.arg}", k.value)
                                        for k in call.keywords)]), None)
        return None

    def settings_violation(self, settings: ast.expr, prefix: str) -> str | None:
        """A literal {key: value} of settings (torch.compile's options, a config's patch), each value checked
        against its key; a constant's name stands for the literals it is bound to."""
        for value in self._constant_literals(settings):
            value = self.dict_call(value) or value if isinstance(value, ast.Call) else value
            if not isinstance(value, ast.Dict):
                if (why := self.setting_value_violation(prefix.rstrip("."), value)):
                    return why
                continue
            for key, item in zip(value.keys, value.values, strict=True):
                if key is None or (why := self.keyed_setting_violation(prefix, key, item)):
                    return why or "spreads settings with ** (only named settings)"
        return None

    def template_violation(self, call: ast.Call) -> str | None:
        """A str.format template (``t.format``, ``format_map``, ``str.format(t)``, a Formatter's ``vformat(t)``)
        is a whole string literal, or a constant's name bound to one: its fields read attributes by name, and
        every literal's are checked (string_violation); one built at run time could read any."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr in TEMPLATE_METHODS):
            return None
        for template in (call.func.value, *call.args[:1]):
            literals = self._constant_literals(template) if isinstance(template, ast.Name | ast.Constant) else []
            if literals and all(isinstance(t, ast.Constant) and isinstance(t.value, str) for t in literals):
                return None
        return f"formats a template built at run time (.{call.func.attr}: only string literals)"

    def keyed_setting_violation(self, prefix: str, key: ast.expr, value: ast.expr) -> str | None:
        """A setting named by ``key``: a string literal, or a constant's name bound only to string literals
        (``"cpp_" + "wrapper"`` would name a setting no check could read)."""
        literals = self._constant_literals(key)
        names = [literal.value for literal in literals
                 if isinstance(literal, ast.Constant) and isinstance(literal.value, str)]
        if not names or len(names) != len(literals):
            return f"names a setting by a computed key ({ast.unparse(key)[:40]}: only string literals)"
        return next(filter(None, (self.setting_value_violation(f"{prefix}{name}", value) for name in names)), None)

    def setting_value_violation(self, key: str, value: ast.expr) -> str | None:
        """CODEGEN_SETTINGS are refused; a string in a setting is refused but for the choices of STRING_SETTINGS,
        written out whole: torch.compile passes some of its settings to a compiler's command line
        (``cpp.march = "native -wrapper ..."`` ran a shell in the worker)."""
        if CODEGEN_SETTINGS.fullmatch(key):
            return f"sets {key} (Inductor would write C++ with the graph's values pasted in, unescaped)"
        choices = STRING_SETTINGS.get(key)
        nodes = list(self._expanded(value))
        texts = [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str | bytes)]
        if texts and any(isinstance(n, ast.BinOp) for n in nodes):
            return f"sets {key} to a string built by arithmetic (only whole literals)"
        for text in texts:
            if choices is None or not isinstance(text, str) or not choices.fullmatch(text):
                allowed = "" if choices is None else f": only {choices.pattern}"
                return f"sets {key} to the string {str(text)[:40]!r} (a setting's text can reach a compiler's " \
                       f"command line{allowed})"
        return None

    def _expanded(self, value: ast.expr) -> Iterator[ast.AST]:
        """Every node of a literal, each constant's name in it replaced by the literals it is bound to."""
        for node in ast.walk(value):
            if isinstance(node, ast.Name):
                for bound in self._constant_literals(node):
                    yield from (ast.walk(bound) if bound is not node else [node])
            else:
                yield node

    def _constant_literals(self, value: ast.expr) -> list[ast.expr]:
        """The literals a value stands for: itself, or those a module constant's name is bound to."""
        if isinstance(value, ast.Name) and self.tree is not None:
            if self._constants is None:
                self._constants = _module_constants(self.tree)
            return self._constants.get(value.id, [value])
        return [value]

    def library_violation(self, node: ast.Call, path: str) -> str | None:
        """torch.library: new operators outside torch's namespaces; registrations for the candidate's own only."""
        member, qualname = path[14:], _qualname(node)
        namespace = qualname.partition("::")[0] if qualname else None
        if member in LIBRARY_DEFINE and namespace in TORCH_NAMESPACES | {None}:
            where = f"in torch's {namespace} namespace" if namespace else "without a constant 'namespace::name'"
            return f"defines an operator with {path} {where}"
        if member in LIBRARY_REGISTER and namespace not in self.namespaces:
            what = qualname or "an operator not named by a constant 'namespace::name'"
            return f"registers {what} with {path} (only the candidate's own custom ops may be registered)"
        return None


# The rule for each node type that can break one; the walk hands only these (and what note_positions reads) over.
_RULES: dict[type, Callable[[_Checker, Any], str | None]] = {
    ast.Name: _Checker.name_violation, ast.Attribute: _Checker.attribute_violation,
    ast.Subscript: _Checker.subscript_violation, ast.Call: _Checker.call_violation,
    ast.FunctionDef: _Checker.function_violation, ast.AsyncFunctionDef: _Checker.function_violation,
    ast.MatchClass: _Checker.match_violation, ast.keyword: _Checker.keyword_violation,
    ast.Constant: _Checker.string_violation, ast.JoinedStr: _Checker.string_violation, ast.Try: _Checker.try_warnings,
}
_CHECKED = frozenset({*_RULES, ast.Import, ast.ImportFrom, ast.Assign, ast.Compare, ast.If, ast.While, ast.IfExp,
                      ast.Assert, ast.BoolOp, ast.UnaryOp})


def _concrete(*bases: type) -> frozenset[type]:
    found = set(bases)
    for base in bases:
        found |= _concrete(*base.__subclasses__())
    return frozenset(found)


# Childless nodes that break none (a Name's Load, a BinOp's Add, ...): a third of a kernel's tree, not walked.
# Node types are matched exactly (``type(node) in``), a set lookup instead of an isinstance over a tuple.
_LEAVES = _concrete(ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _checked_nodes(tree: ast.AST) -> list[ast.AST]:
    """The nodes of ``tree`` the checker looks at, in ``ast.walk``'s order (breadth first), in one flat loop:
    ``ast.walk``'s generators took most of the gate's time on a kernel of a few hundred lines."""
    found: list[ast.AST] = []
    queue = deque([tree])
    while queue:
        node = queue.popleft()
        if type(node) in _CHECKED:
            found.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                queue.extend(item for item in value if isinstance(item, ast.AST) and type(item) not in _LEAVES)
            elif isinstance(value, ast.AST) and type(value) not in _LEAVES:
                queue.append(value)
                if name in ("annotation", "returns"):
                    queue.extend(_annotation_code(value))
    return found


def _annotation_code(annotation: ast.AST) -> list[ast.AST]:
    """The expressions that strings in an annotation spell: typing.get_type_hints and torch.library.custom_op
    evaluate them (``x: "__import__('os')..."``), so they are judged as code; but for ``Literal[...]``'s
    arguments, which are values (``Literal["eager", "compile"]``)."""
    found: list[ast.AST] = []
    pending = [annotation]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Subscript) and _literal(node.value):
            pending.append(node.value)
            continue
        if isinstance(node, ast.Subscript) and _annotated(node.value):  # Annotated[T, metadata]: T only
            pending += [node.value, node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice]
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                expression = ast.parse(node.value.strip(), mode="eval").body
            except SyntaxError:
                continue  # what does not parse cannot be evaluated either
            ast.increment_lineno(expression, node.lineno - 1)
            found += [expression, *_annotation_code(expression)]
        pending.extend(ast.iter_child_nodes(node))
    return found


# What a type annotation is made of. Anything else computes a value, and a computed string is evaluated once more as
# code by whoever reads the annotations (functools.singledispatch's register, pydantic, get_type_hints):
# ``x: "__imp" + "ort__('gc')"`` runs __import__ though no such string is written.
_ANNOTATION_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Tuple, ast.List, ast.Starred,
                     ast.BinOp, ast.BitOr, ast.UnaryOp, ast.USub, ast.Load)


# Kernel languages whose buffers are declared by a call in the annotation (TileLang's ``A: T.Tensor((M, K), dtype)``,
# TVMScript's ``T.Buffer``): the call is the library's, and returns its buffer type, not a string.
ANNOTATION_LIBRARIES = {"tilelang", "tvm"}


def _annotation_violation(tree: ast.AST, library_call: Callable[[ast.Call], bool]) -> tuple[ast.AST, str] | None:
    """An annotation that computes something (a call, an arithmetic, a formatted string): where, and why.
    ``library_call``: whether a call is one of ANNOTATION_LIBRARIES' (its arguments are values, judged elsewhere)."""
    for holder in ast.walk(tree):
        annotations = [getattr(holder, name, None) for name in ("annotation", "returns")]
        for annotation in filter(None, annotations):
            for node in [annotation, *_annotation_code(annotation)]:
                for part in _type_parts(node, library_call):
                    if not isinstance(part, _ANNOTATION_NODES) or (  # X | Y, Literal[-1]: no other operator
                            isinstance(part, ast.BinOp) and not isinstance(part.op, ast.BitOr)) or (
                            isinstance(part, ast.UnaryOp) and not isinstance(part.operand, ast.Constant)):
                        return holder, "computes an annotation (whoever reads annotations evaluates a string as code)"
    return None


def _type_parts(node: ast.AST, library_call: Callable[[ast.Call], bool]) -> Iterator[ast.AST]:
    """The nodes of an annotation that make its type: not Annotated's metadata, nor a kernel library's arguments
    (values: nothing reads them as code)."""
    if isinstance(node, ast.Call) and library_call(node):
        return
    yield node
    if isinstance(node, ast.Subscript) and _annotated(node.value) and isinstance(node.slice, ast.Tuple):
        children: list[ast.AST] = [node.value, node.slice.elts[0]]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _type_parts(child, library_call)


def _literal(node: ast.AST) -> bool:
    """Whether ``node`` names typing's Literal (``Literal``, ``typing.Literal``, ``t.Literal``)."""
    return (isinstance(node, ast.Name) and node.id == "Literal") or (
        isinstance(node, ast.Attribute) and node.attr == "Literal")


def _annotated(node: ast.AST) -> bool:
    """Whether ``node`` names typing's Annotated, whose arguments after the first are metadata values."""
    return (isinstance(node, ast.Name) and node.id == "Annotated") or (
        isinstance(node, ast.Attribute) and node.attr == "Annotated")


def _main_block(node: ast.AST) -> bool:
    """A module's ``if __name__ == "__main__":`` without an else: never run where the module is imported, as the
    guard imports it (under another name, which the module cannot rebind)."""
    test = node.test if isinstance(node, ast.If) and not node.orelse else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def check_source(source: str, entry: str = "run") -> GateResult:
    """The cascade gate; ``entry`` is the module-level name a candidate must define (``run``, or ``ModelNew``
    for KernelBench problems)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return GateResult(False, f"does not parse: line {error.lineno}: {error.msg}")
    tree.body = [statement for statement in tree.body if not _main_block(statement)]  # self-tests, never run
    checker = _Checker()
    nodes = _checked_nodes(tree)
    checker.imported_names = {alias.asname or alias.name for statement in tree.body
                              if isinstance(statement, ast.ImportFrom) for alias in statement.names}
    checker.tree = tree
    if any(type(node) is ast.Name and node.id in FORBIDDEN_NAMES for node in nodes):
        checker.shadowed = shadowed_uses(tree, FORBIDDEN_NAMES)
    # Imports first, then where names are bound and used, so that every name is resolved wherever it is judged.
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom) and (violation := checker.bind_imports(node)):
            return GateResult(False, f"forbidden: {violation} (line {node.lineno})")
    if computed := _annotation_violation(tree, checker.annotation_library_call):
        node, why = computed
        return GateResult(False, f"forbidden: {why} (line {getattr(node, 'lineno', '?')})")
    checker.note_positions(nodes)
    for node in nodes:
        violation = checker.violation(node)
        if violation:
            return GateResult(False, f"forbidden: {violation} (line {getattr(node, 'lineno', '?')})")
    has_entry = any(
        (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == entry)
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == entry for t in n.targets))
        for n in tree.body
    )
    if not has_entry:
        expected = "run(*inputs)" if entry == "run" else entry
        return GateResult(False, f"no module-level {expected}", checker.warnings)
    return GateResult(True, "", checker.warnings)
