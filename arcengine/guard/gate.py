"""The cascade gate: cheap static checks in the engine, before any process starts.

Rejects what is unsafe or walks around the guard (native escapes, process spawning, dynamic code and the
back doors to it); the sandbox and the dynamic checks catch the rest.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Modules whose import alone is refused: native escapes, process control, dynamic import.
FORBIDDEN_MODULES = {
    "ctypes", "cffi", "subprocess", "multiprocessing", "importlib", "pty", "socket", "signal", "builtins",
    "resource", "torch.utils.cpp_extension",
}
# Calls that run code the gate cannot see.
FORBIDDEN_NAMES = {"exec", "eval", "compile", "__import__", "breakpoint", "__builtins__"}
# os functions that spawn, replace or end processes.
FORBIDDEN_OS_CALLS = {
    "system", "popen", "fork", "forkpty", "kill", "killpg", "execv", "execve", "execl", "execle", "execlp",
    "execlpe", "execvp", "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve",
    "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "_exit", "abort",
}
FORBIDDEN_ATTRIBUTES = {"sys.modules"}


@dataclass(frozen=True)
class GateResult:
    ok: bool
    reason: str = ""
    warnings: list[str] = field(default_factory=list)


def _module_forbidden(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES)


def _forbidden_dotted(dotted: str) -> bool:
    module, _, attribute = dotted.rpartition(".")
    return (
        _module_forbidden(dotted)
        or dotted in FORBIDDEN_ATTRIBUTES
        or (module == "os" and attribute in FORBIDDEN_OS_CALLS)
    )


class _Checker:
    """Walks a module, resolving import aliases (``import os as o`` makes ``o.system`` ``os.system``)."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def dotted(self, node: ast.AST) -> str:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return ""
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def violation(self, node: ast.AST) -> str | None:
        match node:
            case ast.Import(names=names):
                for alias in names:
                    if _module_forbidden(alias.name):
                        return f"imports {alias.name}"
                    bound = alias.asname or alias.name.split(".")[0]  # `import a.b` binds `a`
                    self.aliases[bound] = alias.name if alias.asname else bound
            case ast.ImportFrom(module=module, names=names) if module:
                for alias in names:
                    full = f"{module}.{alias.name}"
                    if _forbidden_dotted(full) or alias.name in FORBIDDEN_NAMES:
                        return f"imports {alias.name} from {module}"
                    self.aliases[alias.asname or alias.name] = full
            case ast.Name(id=name) if name in FORBIDDEN_NAMES:
                return f"uses {name} (dynamic code is not allowed)"
            case ast.Name(id=name) if _forbidden_dotted(self.aliases.get(name, "")):
                return f"uses {self.aliases[name]}"
            case ast.Attribute():
                dotted = self.dotted(node)
                if _forbidden_dotted(dotted):
                    return f"uses {dotted}"
                if node.attr in FORBIDDEN_NAMES:
                    return f"reaches {node.attr}"
            case ast.Call(func=ast.Name(id="getattr"), args=[_, ast.Constant(value=str(name)), *_]) if (
                name in FORBIDDEN_NAMES or name in FORBIDDEN_OS_CALLS
            ):
                return f"reaches {name} through getattr"
        return None


def check_source(source: str) -> GateResult:
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return GateResult(False, f"does not parse: line {error.lineno}: {error.msg}")
    checker = _Checker()
    # Imports first, so aliases are known wherever they are used.
    nodes = sorted(ast.walk(tree), key=lambda n: not isinstance(n, ast.Import | ast.ImportFrom))
    for node in nodes:
        violation = checker.violation(node)
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
