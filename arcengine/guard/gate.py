"""The cascade gate: cheap static checks in the engine, before any process starts.

Rejects what is unsafe or walks around the guard (native escapes, process spawning, threads, dynamic code
and the back doors to it, frame walking, monkey-patching of imported modules); warns on what is only
suspicious (side streams, environment reads, file writes, try/except fallbacks to PyTorch). The sandbox and
the dynamic checks catch the rest.
"""

from __future__ import annotations

import ast
import functools
from collections import deque
from dataclasses import dataclass, field

# Modules whose import alone is refused: native escapes, process control, dynamic import.
FORBIDDEN_MODULES = {
    "ctypes", "cffi", "subprocess", "multiprocessing", "importlib", "pty", "socket", "signal", "builtins",
    "resource", "torch.utils.cpp_extension", "threading", "_thread", "concurrent", "asyncio", "gc", "inspect",
    "pickle", "marshal", "shutil", "arcengine",
}
# Calls that run code the gate cannot see.
FORBIDDEN_NAMES = {"exec", "eval", "compile", "__import__", "breakpoint", "__builtins__"}
# The same names as attributes: `torch.compile` and `re.compile` are fine, `x.exec(...)` is not.
FORBIDDEN_ATTRIBUTE_NAMES = FORBIDDEN_NAMES - {"compile"}
# os functions that spawn, replace or end processes.
FORBIDDEN_OS_CALLS = {
    "system", "popen", "fork", "forkpty", "kill", "killpg", "execv", "execve", "execl", "execle", "execlp",
    "execlpe", "execvp", "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve",
    "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "_exit", "abort",
}
FORBIDDEN_ATTRIBUTES = {
    "sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile", "sys.meta_path", "sys.path_hooks",
    "sys.exit", "sys.addaudithook", "os.environ.__setitem__",
}
# Suspicious, not unsafe: reported with the decision.
SUSPICIOUS_ATTRIBUTES = {
    "torch.cuda.Stream": "creates a CUDA stream (side-stream work is timed device-wide)",
    "torch.cuda.stream": "switches CUDA streams (side-stream work is timed device-wide)",
    "torch.cuda.ExternalStream": "uses an external CUDA stream",
    "os.environ": "reads the environment",
    "os.getenv": "reads the environment",
}
FRAME_ATTRIBUTES = {"f_back", "f_globals", "f_locals", "gi_frame", "tb_frame", "__globals__", "__code__",
                    "__subclasses__", "__mro__", "__bases__"}


@dataclass(frozen=True)
class GateResult:
    ok: bool
    reason: str = ""
    warnings: list[str] = field(default_factory=list)


def _module_forbidden(name: str) -> bool:
    # Anything named arcengine*: the guard's own modules, and those the child registers for the reference.
    # Otherwise the name or a package above it is forbidden ("a.b.c": "a", "a.b", "a.b.c").
    parts = name.split(".")
    return name.startswith("arcengine") or any(".".join(parts[:n]) in FORBIDDEN_MODULES
                                               for n in range(1, len(parts) + 1))


@functools.lru_cache(maxsize=4096)  # a kernel names the same few modules hundreds of times
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
        self.warnings: list[str] = []

    def warn(self, node: ast.AST, message: str) -> None:
        text = f"{message} (line {getattr(node, 'lineno', '?')})"
        if text not in self.warnings:
            self.warnings.append(text)

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
            case ast.Name(id=name) if name in self.aliases and _forbidden_dotted(self.aliases[name]):
                return f"uses {self.aliases[name]}"
            case ast.Attribute():
                dotted = self.dotted(node)
                if _forbidden_dotted(dotted):
                    return f"uses {dotted}"
                if node.attr in FORBIDDEN_ATTRIBUTE_NAMES or node.attr in FRAME_ATTRIBUTES:
                    return f"reaches {node.attr}"
                if dotted in SUSPICIOUS_ATTRIBUTES:
                    self.warn(node, SUSPICIOUS_ATTRIBUTES[dotted])
            case ast.Assign(targets=targets) | ast.AugAssign(target=ast.Attribute() as targets) | ast.AnnAssign(
                target=ast.Attribute() as targets
            ):
                for target in targets if isinstance(targets, list) else [targets]:
                    patched = self.patched_module_attribute(target)
                    if patched:
                        return f"monkey-patches {patched}"
            case ast.Call(func=ast.Name(id="setattr" | "delattr"), args=[target, *_]) if self.dotted(target):
                root = self.dotted(target).split(".")[0]
                if root in self.aliases.values() or root in self.aliases:
                    return f"monkey-patches {self.dotted(target)} with {node.func.id}"  # type: ignore[attr-defined]
            case ast.Call(func=ast.Name(id="open"), args=[_, ast.Constant(value=str(mode)), *_]) if set(mode) & set(
                "wax+"
            ):
                self.warn(node, "writes a file")
            case ast.Try(handlers=handlers):
                for handler in handlers:
                    if any(self.dotted(c.func).startswith("torch") for c in ast.walk(handler)
                           if isinstance(c, ast.Call)):
                        self.warn(handler, "try/except falls back to PyTorch: the fallback would be what is timed")
            case ast.Call(func=ast.Name(id="getattr"), args=[_, ast.Constant(value=str(name)), *_]) if (
                name in FORBIDDEN_NAMES or name in FORBIDDEN_OS_CALLS
            ):
                return f"reaches {name} through getattr"
        return None

    def patched_module_attribute(self, target: ast.AST) -> str | None:
        """``torch.allclose = ...`` or ``np.x.y = ...``: an assignment into an imported module's namespace."""
        if not isinstance(target, ast.Attribute):
            return None
        dotted = self.dotted(target)
        root = dotted.split(".")[0]
        imported_roots = {a.split(".")[0] for a in self.aliases.values()}
        return dotted if root in imported_roots and dotted else None


# Nodes that can break a rule; the walk hands only these to the checker.
_CHECKED = frozenset({ast.Import, ast.ImportFrom, ast.Name, ast.Attribute, ast.Assign, ast.AugAssign, ast.AnnAssign,
                      ast.Call, ast.Try})


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
    return found


def check_source(source: str, entry: str = "run") -> GateResult:
    """The cascade gate; ``entry`` is the module-level name a candidate must define (``run``, or ``ModelNew``
    for KernelBench problems)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return GateResult(False, f"does not parse: line {error.lineno}: {error.msg}")
    checker = _Checker()
    nodes = _checked_nodes(tree)
    # Imports first, so aliases are known wherever they are used.
    imports = [node for node in nodes if isinstance(node, ast.Import | ast.ImportFrom)]
    for node in [*imports, *(node for node in nodes if not isinstance(node, ast.Import | ast.ImportFrom))]:
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
