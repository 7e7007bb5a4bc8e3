"""torch.compile's settings as an untrusted worker sets them, checked at run time whatever the spelling.

The gate reads settings where the source spells them (guard/gate.py); a key or value built at run time, a setting
reached through a helper torch offers (``functools.partial`` of torch.compile with ``options``, a configuration's
``load_config``) or one the gate has no rule for reaches the same place: every configuration module of torch
(Inductor's, dynamo's, functorch's, torch.compiler's) is an instance of one class, and each write to any of them,
``patch`` and torch.compile's ``options`` included, goes through that class's ``__setattr__``. Wrapped there, before
the module is imported, a write is refused (and the role fails, through guard/child/opens.py) where it:

- turns on a setting that makes Inductor write C++ with the graph's values pasted in (CODEGEN_SETTINGS), or
- puts a string that is not one of torch's own choices (STRING_SETTINGS) into any setting: Inductor hands some
  of them to a compiler's command line, or
- puts a callable into any setting (a custom pass is handed the graphs torch.fx turns into code).

A write back to a setting's default passes, so a patch's exit restores what it found. A backend of the candidate's
own is refused the same way, wherever it comes from (see _watch_backends).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from arcengine.guard.child import opens

# The settings that take a string, each with the strings it may take: names of torch's own choices, never text
# that could become a flag, a path or a program (Inductor passes settings such as cpp.march and
# cpp.enable_floating_point_contract_flag to the C++ compiler's command line). Keys are relative to their
# configuration module.
STRING_SETTINGS = {
    "max_autotune_gemm_backends": re.compile(r"[A-Z]+(,[A-Z]+)*"),
    "max_autotune_conv_backends": re.compile(r"[A-Z]+(,[A-Z]+)*"),
    "max_autotune_gemm_search_space": re.compile(r"DEFAULT|EXHAUSTIVE"),
    "max_autotune_flex_search_space": re.compile(r"DEFAULT|EXHAUSTIVE"),
    "triton.descriptive_names": re.compile(r"original_aten|torch|inductor_node"),
    "cpp.descriptive_names": re.compile(r"original_aten|torch|inductor_node"),
    "memory_pool": re.compile(r"none|intermediates|outputs|combined"),
    "mixed_mm_choice": re.compile(r"default|triton|aten|heuristic"),
    "cpu_backend": re.compile(r"cpp|triton"),
    "cuda_backend": re.compile(r"triton"),
    "cache_key_tag": re.compile(r"[\w.-]*"),  # torch.compiler.config's: a name in cache keys, never a command
}
# Settings that make Inductor write its wrapper as C++ (or build an AOT package): it pastes the graph's values into
# that C++ unescaped (a custom op's string argument ran C++ of the candidate's in the worker: red team round 8), so
# they would make a plain torch.compile candidate native.
CODEGEN_SETTINGS = re.compile(r"cpp_wrapper(_.*)?|aot_inductor(_mode)?\..*")
# Inductor compiles in the calling thread in the guard (TORCHINDUCTOR_COMPILE_THREADS=1, guard/sandbox.py): a
# candidate's own value for it is kept at 1, so its compile finishes inside its call as everyone else's does.
SERIAL_SETTING = "compile_threads"


def refused_setting(key: str, value: object, default: object = None) -> str | None:
    """Why setting ``key`` (relative to its configuration module) to ``value`` is refused, or None."""
    if _same(value, default):  # what torch starts with, or a patch putting back what it found
        return None
    if CODEGEN_SETTINGS.fullmatch(key) and not (value is False or value is None):
        return f"sets {key} (Inductor would write C++ with the graph's values pasted in, unescaped)"
    if any(callable(leaf) for leaf in _leaves(value)):
        return f"sets {key} to a callable (it would be handed torch.compile's graphs, whose code torch.fx writes)"
    choices = STRING_SETTINGS.get(key)
    for text in (leaf for leaf in _leaves(value) if isinstance(leaf, str | bytes)):
        if type(text) is not str or choices is None or not choices.fullmatch(text):
            allowed = "" if choices is None else f": only {choices.pattern}"
            shown = repr(text[:40]) if type(text) in (str, bytes) else "of a str subclass"
            return f"sets {key} to the string {shown} (a setting's text can reach a compiler's command line{allowed})"
    return None


def install() -> None:
    """Check every write to torch's configuration modules, and every backend torch.compile is given, from now on;
    call before any untrusted module is imported (a fork inherits the checks)."""
    _watch_backends()
    from torch.utils._config_module import ConfigModule

    write = ConfigModule.__setattr__

    def checked(config: Any, name: str, value: object) -> None:
        entry = config._config.get(name) if isinstance(config._config, dict) else None
        if entry is not None and (why := refused_setting(name, value, entry.default)):
            opens.refuse(f"{why}, at run time in {config.__name__}")
        if name == SERIAL_SETTING and config.__name__ == "torch._inductor.config":
            value = 1  # copied set-ups ask for a compile pool; its threads would outlive the call (threads.py)
        write(config, name, value)

    ConfigModule.__setattr__ = checked  # type: ignore[method-assign]


def _watch_backends() -> None:
    """Refuse a backend of the candidate's own, however it reaches torch.compile (an argument, a spread, a
    module's ``compile``, ``set_default_backend``, ``set_stance(force_backend=...)``): a backend is handed the
    graphs dynamo builds, and torch.fx turns a graph's constants into code it runs with the real builtins. Every
    route resolves its backend in ``eval_frame.get_compiler_fn``, which is wrapped here; torch's own backends
    (names, its compile wrappers around them) pass."""
    import torch
    from torch._dynamo import eval_frame
    from torch._dynamo.backends import registry

    resolve = getattr(eval_frame, "get_compiler_fn", None)
    if resolve is None:  # another torch: the gate's static rules alone
        return

    inductor = getattr(torch, "_TorchCompileInductorWrapper", None)
    wrapper = getattr(torch, "_TorchCompileWrapper", None)

    def torchs_own(backend: object) -> bool:
        kind = type(backend)
        if kind is str or kind is inductor or backend is None:
            return True
        if kind is wrapper:  # torch.compile's wrapper around a backend it looked up
            backend = vars(backend).get("compiler_fn")
        return any(backend is fn for fn in registry._COMPILER_FNS.values())

    def checked(backend: object) -> object:
        if not torchs_own(backend):
            opens.refuse("gives torch.compile a backend of its own (it would be handed the graphs torch.fx turns "
                         "into code), at run time")
        return resolve(backend)

    eval_frame.get_compiler_fn = checked


def _same(value: object, default: object) -> bool:
    """Whether ``value`` is ``default`` or an equal copy of it, compared by exact built-in types only: a str
    subclass's __eq__ could call any text its default."""
    if value is default:
        return True
    kind = type(value)
    if kind is not type(default):
        return False
    if kind in (bool, int, float, str, bytes):
        return value == default
    if kind in (tuple, list):
        return len(value) == len(default) and all(map(_same, value, default))  # type: ignore[arg-type]
    return False


def _leaves(value: object) -> Iterator[object]:
    """What a setting's value holds, inside containers too (``cpp.cxx`` is a tuple of strings)."""
    if isinstance(value, dict):
        for item in value.items():
            yield from _leaves(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _leaves(item)
    else:
        yield value
