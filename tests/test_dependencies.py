"""Every third-party package the code imports is declared in pyproject.toml: a fresh `pip install arcengine` (or an
extra) brings it, rather than it being there by luck as another package's dependency."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("arcengine", "tui", "problems", "skills", "bench", "tests")
# Candidate files written to be judged (forbidden modules on purpose), not code that runs as arcengine.
# Candidates' files, read by the gate, never imported by the project (einops, CuPy: what a user's kernel may use).
SKIPPED = (ROOT / "tests" / "adversarial", ROOT / "tests" / "fixtures" / "honest")
OWN = {"arcengine", "arcengine_tui", "arcengine_problems", "arcengine_skills", "tests", "tui"}
# Imported where present, never needed: the guard's worker quiets the progress bars torch.compile brings.
OPTIONAL = {"tqdm"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return normalized(re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0])


def declared() -> set[str]:
    """The project's dependencies and extras, with what a meta-package among them requires (cuda-python: no module
    of its own, only cuda-bindings, cuda-core and cuda-pathfinder). Another package's dependencies do not count:
    textual bringing rich today does not declare rich."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {requirement_name(r) for r in project["dependencies"]}
    names |= {requirement_name(r) for extra in project["optional-dependencies"].values() for r in extra}
    with_modules = {normalized(d) for dists in packages_distributions().values() for d in dists}
    for name in [n for n in names if n not in with_modules]:
        try:
            names |= {requirement_name(r) for r in requires(name) or () if "extra ==" not in r}
        except PackageNotFoundError:  # an extra not installed here (cupti-python, nvmath-python)
            continue
    return names


def third_party_imports() -> dict[str, set[str]]:
    """Per imported module (dotted up to two parts: namespace packages like cuda.core), the files importing it."""
    found: dict[str, set[str]] = {}
    for folder in SCANNED:
        for path in (ROOT / folder).rglob("*.py"):
            if any(path.is_relative_to(skipped) for skipped in SKIPPED):
                continue
            siblings = {p.stem for p in path.parent.iterdir()}  # bench/ and tests/ import their neighbours
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in OWN or top in siblings or top in OPTIONAL:
                        continue
                    found.setdefault(".".join(name.split(".")[:2]), set()).add(str(path.relative_to(ROOT)))
    return found


def distribution_of(module: str, providers: dict[str, list[str]]) -> str:
    """The distribution a module comes from: installed metadata where there is one (a namespace package's
    sub-package by its own distribution), else the module's name (an extra not installed here)."""
    top, _, sub = module.partition(".")
    candidates = [normalized(d) for d in providers.get(top, [])]
    if len(candidates) > 1 and normalized(f"{top}-{sub}") in candidates:
        return normalized(f"{top}-{sub}")
    return candidates[0] if candidates else normalized(top)


def test_every_imported_package_is_declared() -> None:
    names, providers = declared(), packages_distributions()
    undeclared = {}
    for module, files in third_party_imports().items():
        distribution = distribution_of(module, providers)
        # Not installed here: its declared name may add a suffix (nvmath -> nvmath-python).
        if distribution not in names and not any(n.startswith(f"{distribution}-") for n in names):
            undeclared[module] = sorted(files)[:3]
    assert undeclared == {}


def test_the_scan_sees_what_it_must() -> None:
    """The scan is not vacuous: it finds imports it must find, and would name an undeclared one."""
    found = third_party_imports()
    assert {"torch", "rich.text", "yaml", "tomli_w", "cuda.core", "cuda.bindings"} <= set(found)
    assert distribution_of("cuda.core", packages_distributions()) == "cuda-core"
    assert "not-a-declared-package" not in declared()
