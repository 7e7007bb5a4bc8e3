"""Problem loading: the native folder format (``problem.toml``, ``reference.py``, and ``seed.py`` or the seed files
that ``seeds`` names)."""

from __future__ import annotations

import ast
import operator
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from arcengine.domain.errors import UserError
from arcengine.domain.shipped import SHIPPED_PROBLEMS
from arcengine.guard.child.baselines import BUILTIN_ROUTES, COMPILE_MODES

# Input distributions of the correctness gate (arcengine.guard.child.distributions); a problem may add its own.
DEFAULT_DISTRIBUTIONS = ("normal", "uniform", "heavy_tailed", "large", "small")
DEFAULT_SEEDS = ("seed.py",)  # the seed files of a problem.toml without ``seeds``
COMPILE_ROUTES = tuple(COMPILE_MODES)  # baseline routes a CPU leaves out by default (their C++ build is slow)


class ProblemError(UserError):
    """A problem folder or its files are malformed; the message says what and where."""


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    matched_ratio: float


@dataclass(frozen=True)
class Workload:
    index: int
    axes: dict[str, int]
    dtype: str
    held_out: bool = False

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.axes.items())


@dataclass(frozen=True)
class Problem:
    name: str
    directory: Path
    kernel_type: str
    category: str
    description: str
    tolerance: Tolerance
    workloads: list[Workload]  # GPU shapes
    cpu_workloads: list[Workload]  # small shapes for CPU campaigns
    flops_expr: str
    bytes_expr: str
    distributions: tuple[str, ...] = DEFAULT_DISTRIBUTIONS
    deterministic: bool = True  # candidates must give the same bits twice on the same inputs
    cpu_unsupported: str | None = None  # why the problem cannot run on a CPU (None: it can, on cpu_workloads)
    entry: str = "run"  # what a candidate module defines: run(*inputs), or ModelNew for KernelBench problems
    # Candidates are called as run(*inputs, *outputs) and write into outputs the guard allocates (FlashInfer-Bench's
    # destination-passing style); False: run(*inputs) returns them. The reference always returns its outputs.
    destination_passing: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    # What a user would otherwise run (see arcengine.guard.child.baselines), on a GPU and on the CPU; () on a device:
    # none declared, and the reference stands in for it.
    baseline_routes: tuple[str, ...] = ()
    cpu_baseline_routes: tuple[str, ...] = ()
    # The seed files (``seeds`` in problem.toml), relative to the folder: each is judged before the agents start;
    # on the CPU, those of ``cpu_seeds`` (default: all of them; a CUDA C++ seed cannot run there).
    seed_files: tuple[str, ...] = DEFAULT_SEEDS
    cpu_seed_files: tuple[str, ...] | None = None

    def seed_files_for(self, device: str) -> tuple[str, ...]:
        return self.cpu_seed_files if device == "cpu" and self.cpu_seed_files is not None else self.seed_files

    def baseline_routes_for(self, device: str) -> tuple[str, ...]:
        return self.cpu_baseline_routes if device == "cpu" else self.baseline_routes

    @property
    def baseline_path(self) -> Path:
        """The library routes' functions (optional: torch.compile routes need none)."""
        return self.directory / "baseline.py"

    @property
    def reference_path(self) -> Path:
        return self.directory / "reference.py"

    @cached_property
    def reference_source(self) -> str:
        """Read once: every agent's context quotes it, and a campaign's problem does not change under it."""
        return self.reference_path.read_text(encoding="utf-8")

    @property
    def seed_paths(self) -> list[Path]:
        """Every seed, in the order problem.toml declares them."""
        return [self.directory / name for name in self.seed_files]

    @property
    def seed_path(self) -> Path:
        """The first seed (a problem's only one, unless it declares several)."""
        return self.directory / self.seed_files[0]

    def workloads_for(self, device: str) -> list[Workload]:
        return self.cpu_workloads if device == "cpu" else self.workloads

    def flops(self, workload: Workload) -> float:
        return evaluate_expression(self.flops_expr, workload.axes)

    def bytes(self, workload: Workload) -> float:
        return evaluate_expression(self.bytes_expr, workload.axes)


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}


def evaluate_expression(expression: str, axes: dict[str, int]) -> float:
    """Evaluate arithmetic over axis names (numbers, + - * / // % **, parentheses; nothing else)."""

    def walk(node: ast.AST) -> float:
        match node:
            case ast.Expression(body=body):
                return walk(body)
            case ast.Constant(value=value) if isinstance(value, int | float):
                return value
            case ast.Name(id=name) if name in axes:
                return axes[name]
            case ast.Name(id=name):
                raise ProblemError(f"expression {expression!r} uses unknown axis {name!r}")
            case ast.BinOp(left=left, op=ast.Pow(), right=right):
                base, exponent = walk(left), walk(right)
                if abs(exponent) > 64:
                    raise ProblemError(f"expression {expression!r}: exponent {exponent} is too large")
                return base**exponent
            case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
                return _BINARY[type(op)](walk(left), walk(right))
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return -walk(operand)
        raise ProblemError(f"expression {expression!r}: only arithmetic over axes is allowed")

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as error:
        raise ProblemError(f"expression {expression!r} does not parse: {error.msg}") from None
    try:
        return float(walk(tree))
    except (ArithmeticError, ValueError) as error:
        raise ProblemError(f"expression {expression!r} with {axes}: {error}") from None


def resolve_problem_dir(spec: str | Path, precision: str | None = None) -> Path:
    """A path to a problem folder, or the name of a shipped problem. ``precision`` (fp32, fp16, bf16) is for a
    KernelBench file only: a native problem states its own dtypes."""
    path = Path(spec)
    native = path.is_dir() and (path / "problem.toml").is_file()
    imported = None if native else _import_foreign(path, precision)
    if precision is not None and imported is None:
        raise ProblemError(f"a precision (--precision {precision}) is for KernelBench problem files; "
                           f"{spec} states its own dtypes")
    if imported is not None:
        return imported
    if path.is_dir():
        return path.resolve()
    shipped = SHIPPED_PROBLEMS / str(spec)
    if shipped.is_dir():
        return shipped
    raise ProblemError(
        f"no problem {str(spec)!r}: not a folder, and not a shipped problem "
        f"(shipped: {', '.join(shipped_problem_names()) or 'none'})"
    )


def _import_foreign(path: Path, precision: str | None = None) -> Path | None:
    """A KernelBench file (in ``precision``, KernelBench's default where None) or a FlashInfer-Trace definition, as a
    generated native problem folder; None for anything else, and for a definition given a precision."""
    from arcengine.domain.formats import flashinfer, kernelbench

    try:
        if kernelbench.is_kernelbench_file(path):
            return kernelbench.materialize(path, precision or kernelbench.DEFAULT_PRECISION)
        if precision is not None:
            return None
        definition = flashinfer.definition_path(path)
        if definition is not None:
            return flashinfer.materialize(definition)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ProblemError(f"{path}: cannot read it as a KernelBench or FlashInfer-Trace problem: {error}") from None
    return None


def shipped_problem_names() -> list[str]:
    if not SHIPPED_PROBLEMS.is_dir():
        return []
    return sorted(p.name for p in SHIPPED_PROBLEMS.iterdir() if (p / "problem.toml").is_file())


def _workloads(entries: Any, default_dtype: str, where: str, required: bool = True) -> list[Workload]:
    if not required and entries is None:
        return []
    if not isinstance(entries, list) or not entries:
        raise ProblemError(f"{where}: needs at least one [[{where.rsplit(':', 1)[-1]}]] entry")
    workloads = []
    for index, entry in enumerate(entries):
        axes = entry.get("axes") if isinstance(entry, dict) else None
        if not isinstance(axes, dict) or not axes or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in axes.values()
        ):
            raise ProblemError(f"{where}[{index}]: axes must be a table of positive integers")
        workloads.append(
            Workload(
                index=index,
                axes=dict(axes),
                dtype=str(entry.get("dtype", default_dtype)),
                held_out=bool(entry.get("held_out", False)),
            )
        )
    return workloads


def _baseline_routes(table: Any, directory: Path, where: Path) -> dict[str, tuple[str, ...]]:
    """``[baseline]``: ``routes`` (GPU) and ``cpu_routes`` (default: the routes that are not torch.compile, whose
    C++ build on a CPU takes longer than the candidates it is compared with). Each route is checked to exist."""
    if not isinstance(table, dict) or not set(table) <= {"routes", "cpu_routes"}:
        raise ProblemError(f"{where}: [baseline] takes routes and cpu_routes only")
    found = {}
    for key in ("routes", "cpu_routes"):
        names = table.get(key)
        if names is None:
            continue
        if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
            raise ProblemError(f"{where}: [baseline] {key} must be a list of route names")
        found[key] = tuple(dict.fromkeys(names))
    routes = found.get("routes", ())
    cpu_routes = found.get("cpu_routes", tuple(name for name in routes if name not in COMPILE_ROUTES))
    library = {name for name in routes + cpu_routes if name not in BUILTIN_ROUTES}
    defined = _functions(directory / "baseline.py") if library else set()
    missing = sorted(library - defined)
    if missing:
        raise ProblemError(f"{where}: baseline route(s) {', '.join(missing)} not defined in {directory / 'baseline.py'}"
                           f" (or name {' / '.join(BUILTIN_ROUTES)})")
    return {"baseline_routes": routes, "cpu_baseline_routes": cpu_routes}


def _functions(path: Path) -> set[str]:
    """The top-level functions a Python file defines (none if it is missing or does not parse)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def _seed_files(value: Any, directory: Path, toml_path: Path, name: str) -> tuple[str, ...]:
    """``seeds``: a non-empty list of files relative to the problem folder, each one there (default: seed.py)."""
    if value is None:
        if not (directory / DEFAULT_SEEDS[0]).is_file():
            raise ProblemError(f"{directory}: missing {DEFAULT_SEEDS[0]}")
        return DEFAULT_SEEDS
    where = f"problem {name!r} ({toml_path})"
    if isinstance(value, list) and not value:
        raise ProblemError(f"{where}: seeds is empty; name at least one seed file (without seeds: seed.py)")
    if not isinstance(value, list) or not all(isinstance(file, str) and file for file in value):
        raise ProblemError(f"{where}: seeds must be a list of file names relative to the problem folder, "
                           f'like ["seed.py", "seed_native.py"], not {value!r}')
    for file in value:
        if Path(file).is_absolute() or ".." in Path(file).parts:
            raise ProblemError(f"{where}: seed file {file!r} must be a path inside the problem folder")
        if not (directory / file).is_file():
            raise ProblemError(f"{where}: seed file {file!r} is missing (no such file in {directory})")
    seen: set[Path] = set()
    for file in value:  # "seed.py" and "./seed.py" are one file
        if Path(file) in seen:
            raise ProblemError(f"{where}: seed file {file!r} is named twice in seeds")
        seen.add(Path(file))
    return tuple(value)


def _cpu_seed_files(value: Any, seed_files: tuple[str, ...], toml_path: Path) -> tuple[str, ...] | None:
    """``cpu_seeds``: the seeds that run on the CPU, a non-empty part of ``seeds`` (None: all of them)."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or not set(value) <= set(seed_files):
        raise ProblemError(f"{toml_path}: cpu_seeds must list some of the seeds {list(seed_files)}, not {value!r}")
    return tuple(value)


def load_problem(spec: str | Path, precision: str | None = None) -> Problem:
    """The problem ``spec`` names (see ``resolve_problem_dir``), read and checked."""
    directory = resolve_problem_dir(spec, precision)
    toml_path = directory / "problem.toml"
    for required in (toml_path, directory / "reference.py"):
        if not required.is_file():
            raise ProblemError(f"{directory}: missing {required.name}")
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ProblemError(f"{toml_path}: {error}") from None
    for key in ("name", "kernel_type", "category", "description", "dtype", "entry", "cpu_unsupported"):
        if key in data and not isinstance(data[key], str):
            raise ProblemError(f"{toml_path}: {key} must be a string, not {type(data[key]).__name__} "
                               f"({data[key]!r}); put it in quotes")
    if not isinstance(data.get("destination_passing", False), bool):
        raise ProblemError(f"{toml_path}: destination_passing must be true or false, not "
                           f"{data['destination_passing']!r}")
    if data.get("destination_passing") and data.get("entry", "run") != "run":
        raise ProblemError(f"{toml_path}: destination_passing applies to run(), not to entry {data['entry']!r}")
    seed_files = _seed_files(data.get("seeds"), directory, toml_path, str(data.get("name", directory.name)))
    cpu_seed_files = _cpu_seed_files(data.get("cpu_seeds"), seed_files, toml_path)
    try:
        tolerance = Tolerance(**{k: float(data["tolerance"][k]) for k in ("atol", "rtol", "matched_ratio")})
        sol = data["sol"]
        dtype = str(data.get("dtype", "float32"))
        problem = Problem(
            name=str(data["name"]),
            directory=directory,
            kernel_type=str(data["kernel_type"]),
            category=str(data.get("category", "L1")),
            description=str(data.get("description", "")).strip(),
            tolerance=tolerance,
            workloads=_workloads(data.get("workloads"), dtype, f"{toml_path}:workloads"),
            cpu_workloads=_workloads(data.get("cpu_workloads"), dtype, f"{toml_path}:cpu_workloads",
                                     required=not data.get("cpu_unsupported")),
            flops_expr=str(sol["flops"]),
            bytes_expr=str(sol["bytes"]),
            distributions=tuple(str(d) for d in data.get("distributions", DEFAULT_DISTRIBUTIONS)),
            deterministic=bool(data.get("deterministic", True)),
            cpu_unsupported=str(data["cpu_unsupported"]) if data.get("cpu_unsupported") else None,
            entry=str(data.get("entry", "run")),
            destination_passing=bool(data.get("destination_passing", False)),
            **_baseline_routes(data.get("baseline", {}), directory, toml_path),
            seed_files=seed_files,
            cpu_seed_files=cpu_seed_files,
        )
    except KeyError as error:
        raise ProblemError(f"{toml_path}: missing key {error.args[0]!r}") from None
    except (TypeError, ValueError) as error:
        raise ProblemError(f"{toml_path}: {error}") from None
    for workload in problem.workloads + problem.cpu_workloads:
        problem.flops(workload)
        problem.bytes(workload)
    return problem
