"""The cascade gate: cheap static checks in the engine, before any process starts.

Rejects what is unsafe or walks around the guard (native escapes, process spawning, dynamic code);
the sandbox and the dynamic checks catch the rest.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Modules whose import alone is refused: native escapes, process control, dynamic import.
FORBIDDEN_MODULES = {
    "ctypes", "cffi", "subprocess", "multiprocessing", "importlib", "pty", "socket", "signal",
    "torch.utils.cpp_extension", "torch.utils.cpp_extension.load_inline",
}
# Calls that run code the gate cannot see, or escape the process.
FORBIDDEN_NAMES = {"exec", "eval", "compile", "__import__", "breakpoint"}
FORBIDDEN_OS_CALLS = {
    "system", "popen", "fork", "forkpty", "kill", "killpg", "execv", "execve", "execl", "execle", "execlp",
    "execlpe", "execvp", "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve",
    "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "_exit", "abort",
}


@dataclass(frozen=True)
class GateResult:
    ok: bool
    reason: str = ""
    warnings: list[str] = field(default_factory=list)


def _module_forbidden(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES)


def _dotted(node: ast.AST) -> str:
    """'a.b.c' for an attribute chain, '' when it is not one."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _violation(node: ast.AST) -> str | None:
    match node:
        case ast.Import(names=names):
            for alias in names:
                if _module_forbidden(alias.name):
                    return f"imports {alias.name}"
        case ast.ImportFrom(module=module, names=names) if module:
            for alias in names:
                if _module_forbidden(module) or _module_forbidden(f"{module}.{alias.name}"):
                    return f"imports {alias.name} from {module}"
        case ast.Name(id=name) if name in FORBIDDEN_NAMES:
            return f"uses {name}() (dynamic code is not allowed)"
        case ast.Attribute():
            dotted = _dotted(node)
            if dotted.startswith("os.") and dotted.split(".", 1)[1] in FORBIDDEN_OS_CALLS:
                return f"calls {dotted}"
            if _module_forbidden(dotted):
                return f"uses {dotted}"
            if dotted.endswith(".__builtins__") or dotted == "builtins.__import__":
                return f"reaches {dotted}"
    return None


def check_source(source: str) -> GateResult:
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return GateResult(False, f"does not parse: line {error.lineno}: {error.msg}")
    for node in ast.walk(tree):
        violation = _violation(node)
        if violation:
            return GateResult(False, f"forbidden: {violation} (line {getattr(node, 'lineno', '?')})")
    has_run = any(
        (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "run")
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "run" for t in n.targets))
        for n in tree.body
    )
    if not has_run:
        return GateResult(False, "no module-level run(*inputs)")
    return GateResult(True)
