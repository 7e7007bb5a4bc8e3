"""The package's layers, as docs/architecture.md draws them: no import points up, no module imports itself back
through others, the guard's child code imports nothing else of arcengine, and the wheel lists every package."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import arcengine

ROOT = Path(arcengine.__file__).resolve().parents[1]
PACKAGE = ROOT / "arcengine"
# Bottom to top: a module may import its own layer and those below it. The guard's child code is a leaf that any
# layer may use (its constants name what the child does); the front-ends (the CLI, the headless printer) sit on top.
LAYERS = ["arcengine.guard.child", "arcengine.domain", "arcengine.recording", "arcengine.guard", "arcengine.providers",
          "arcengine.engine", "arcengine.tools", "arcengine"]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if module == layer or module.startswith(layer + "."))


def imported_names(path: Path) -> set[str]:
    """Every dotted name ``path`` imports, wherever the import stands (functions and TYPE_CHECKING too); for
    ``from a import b``, both ``a`` and ``a.b``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
    return found


def imports_of(path: Path) -> set[str]:
    """Every arcengine module ``path`` imports."""
    found = imported_names(path)
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    # "from arcengine.x import name": the module itself, or a submodule when the name is one
    return {name for name in found if name in modules and name != "arcengine"}


def graph() -> dict[str, set[str]]:
    return {module_name(path): imports_of(path) for path in PACKAGE.rglob("*.py")}


def test_no_import_points_up() -> None:
    upward = sorted(f"{module} imports {target}" for module, targets in graph().items() for target in targets
                    if layer_of(target) > layer_of(module))
    assert upward == []


def test_no_module_imports_itself_back() -> None:
    edges = graph()
    packages = {module for module in edges if (ROOT / Path(*module.split("."))).is_dir()}
    circles: list[list[str]] = []

    def walk(module: str, path: list[str]) -> None:
        for target in sorted(edges.get(module, ())):
            if target in packages:  # a package's __init__ is run by any import below it, not a dependency
                continue
            if target in path:
                circles.append([*path[path.index(target):], target])
            elif len(path) < 12:
                walk(target, [*path, target])

    for module in sorted(edges):
        walk(module, [module])
    assert circles == []


def test_the_child_code_imports_nothing_else_of_arcengine() -> None:
    """Statically, and as loaded: the judge, its workers and the zygote bring in only their own sub-package."""
    child = "arcengine.guard.child"
    static = sorted(f"{m} imports {t}" for m, ts in graph().items() if m.startswith(child)
                    for t in ts if not t.startswith(child))
    assert static == []
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, arcengine.guard.child.judge, arcengine.guard.child.zygote; "
         "print(' '.join(m for m in sys.modules if m.startswith('arcengine')))"],
        capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    assert sorted(m for m in loaded if not m.startswith(child)) == ["arcengine", "arcengine.guard"]


def test_the_engine_never_imports_the_terminal_ui() -> None:
    """The Textual front-end is its own package (tui/, imported as arcengine_tui); only the CLI starts it."""
    users = sorted(module_name(path) for path in PACKAGE.rglob("*.py")
                   if any(name.split(".")[0] == "arcengine_tui" for name in imported_names(path)))
    assert users == ["arcengine.cli"]


def test_the_wheel_lists_every_package() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {module_name(init) for init in PACKAGE.rglob("__init__.py")}
    assert present <= listed
    assert {"arcengine_tui", "arcengine_problems", "arcengine_skills"} <= listed
