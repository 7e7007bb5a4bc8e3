"""FlashInfer-Bench Solutions: its current schema (``flashinfer_bench/data/solution.py``, v0.1.2 and main) as
pydantic models, what ``arcengine export --format flashinfer`` writes and what ``arcengine eval`` takes as a candidate.

The models follow the upstream ones field for field, with the same validators (an entry point with exactly
one ``::``, source paths relative and without ``..``, unique, the entry file among them) and the same defaults:
``destination_passing_style`` is true unless a Solution says false, so a Solution that omits it is called as
``run(*inputs, *outputs)``. Unknown keys are ignored, as upstream. flashinfer-bench itself is no dependency: it
installs flashinfer-python, CUTLASS's DSL and TVM-FFI (hundreds of megabytes) for these hundred lines.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from arcengine.domain.errors import UserError

NonEmptyString = Annotated[str, Field(min_length=1)]
# The languages arcengine's guard can judge: one Python module, Triton kernels inside it.
JUDGED_LANGUAGES = ("python", "triton")


class SolutionError(UserError):
    """A file is not a Solution arcengine can read or judge; the message (one line) says why."""


class SupportedLanguages(StrEnum):
    PYTHON = "python"
    TRITON = "triton"
    CPP = "cpp"
    CUDA = "cuda"
    TILELANG = "tilelang"


class SupportedBindings(StrEnum):
    TVM_FFI = "tvm-ffi"
    TORCH = "torch"


class SourceFile(BaseModel):
    path: NonEmptyString
    content: NonEmptyString

    @model_validator(mode="after")
    def _relative_inside(self) -> SourceFile:
        path = Path(self.path)
        if path.is_absolute():
            raise ValueError(f"Invalid source path (absolute path not allowed): {self.path}")
        if ".." in path.parts:
            raise ValueError(f"Invalid source path (parent directory traversal not allowed): {self.path}")
        return self


class BuildSpec(BaseModel):
    language: SupportedLanguages
    target_hardware: list[str] = Field(min_length=1)
    entry_point: NonEmptyString  # "<file_path>::<function_name>"
    dependencies: list[NonEmptyString] = Field(default_factory=list)
    destination_passing_style: bool = True
    binding: SupportedBindings | None = None

    @model_validator(mode="after")
    def _entry_point_form(self) -> BuildSpec:
        if self.entry_point.count("::") != 1:
            raise ValueError(f"Invalid entry point format: {self.entry_point}. "
                             'Expected "<file_path>::<function_name>".')
        return self


class Solution(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: NonEmptyString
    definition: NonEmptyString
    author: NonEmptyString
    spec: BuildSpec
    sources: list[SourceFile] = Field(min_length=1)
    description: str | None = None

    @model_validator(mode="after")
    def _sources_hold_the_entry(self) -> Solution:
        seen: set[str] = set()
        for source in self.sources:
            if source.path in seen:
                raise ValueError(f"Duplicate source path '{source.path}'")
            seen.add(source.path)
        if self.entry_file not in seen:
            raise ValueError(f"Entry source file '{self.entry_file}' not found in sources")
        return self

    @property
    def entry_file(self) -> str:
        return self.spec.entry_point.split("::")[0]

    @property
    def entry_symbol(self) -> str:
        return self.spec.entry_point.split("::")[-1]


def violations(document: object) -> list[str]:
    """Why ``document`` is not a valid Solution, one line per error (empty when it is one)."""
    try:
        Solution.model_validate(document)
    except ValidationError as error:
        return [_line(item) for item in error.errors()]
    return []


def _line(item: object) -> str:
    assert isinstance(item, dict)
    where = ".".join(str(part) for part in item.get("loc", ())) or "solution"
    return f"{where}: {str(item.get('msg', '')).removeprefix('Value error, ')}"


def definition_name(problem_dir: Path, problem_name: str) -> str:
    """The FlashInfer-Trace definition a problem was imported from, by its own name (arcengine's problem name keeps
    only letters, digits and underscores of it), else the problem's name: the ``definition`` a Solution names."""
    try:
        definition = json.loads((problem_dir / "definition.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return problem_name
    name = definition.get("name") if isinstance(definition, dict) else None
    return name if isinstance(name, str) and name else problem_name


def looks_like_solution(path: Path) -> bool:
    """A JSON file with a Solution's spec and sources (judged by ``load_solution``, which says what is wrong)."""
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return False
    return isinstance(data, dict) and "spec" in data and "sources" in data


def load_solution(path: Path) -> Solution:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as error:
        raise SolutionError(f"{path}: not a readable JSON file: {error}") from None
    problems = violations(data)
    if problems:
        raise SolutionError(f"{path}: not a FlashInfer-Bench Solution: {'; '.join(problems)}")
    return Solution.model_validate(data)


def write_candidate(solution: Solution, folder: Path) -> Path:
    """The Solution's sources written under ``folder`` as FlashInfer-Bench lays them out; the entry file, the one
    module the guard loads (with ``run = <entry symbol>`` appended where the entry point names another function)."""
    language = solution.spec.language.value
    if language not in JUDGED_LANGUAGES:
        raise SolutionError(f"solution {solution.name!r} is {language}; arcengine judges Python and Triton "
                            f"Solutions (one Python module)")
    if PurePosixPath(solution.entry_file).suffix != ".py":
        raise SolutionError(f"solution {solution.name!r}: entry file {solution.entry_file!r} is not a .py file")
    others = [s.path for s in solution.sources if s.path != solution.entry_file and s.path.endswith(".py")]
    if others:  # the gate reads one module: code it imports from beside it would run unchecked
        raise SolutionError(f"solution {solution.name!r}: {solution.entry_file} comes with other Python sources "
                            f"({', '.join(others)}); arcengine's guard judges one module, so put them in it")
    if not solution.entry_symbol.isidentifier():
        raise SolutionError(f"solution {solution.name!r}: entry symbol {solution.entry_symbol!r} is not a name")
    for source in solution.sources:
        target = folder / source.path
        target.parent.mkdir(parents=True, exist_ok=True)
        content = source.content
        if source.path == solution.entry_file and solution.entry_symbol != "run":
            content = f"{content.rstrip()}\n\n\nrun = {solution.entry_symbol}  # the Solution's entry point\n"
        target.write_text(content, encoding="utf-8")
    return folder / solution.entry_file
