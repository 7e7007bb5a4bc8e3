"""Export a run's best kernel: as a standalone module, a KernelBench candidate, or a FlashInfer-Bench Solution.

The written files are self-contained: none of them imports arcengine.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arcengine.domain.errors import UserError
from arcengine.domain.events import CampaignStarted, CandidateDecided, Event
from arcengine.domain.formats import solution
from arcengine.domain.problem import Problem, ProblemError, load_problem
from arcengine.domain.run import RunState
from arcengine.recording.eventlog import EventLogError, read_events

FORMATS = ("python", "kernelbench", "flashinfer")
ENTRY_FILE = "main.py"


class ExportError(UserError):
    """The run cannot be exported; the message (one line) says why."""


@dataclass(frozen=True)
class RunFacts:
    """What the event log says about a run: its campaign, its problem, and its best kernel."""

    campaign_id: str
    problem: str
    problem_dir: str
    speedup: float | None  # the best kernel's speedup over the reference (None: the log does not say)
    device: str  # the device the best kernel was judged on, e.g. "NVIDIA H200"
    over_baseline: float | None = None  # and over the problem's baseline (the reference where none is declared)


# ---------------------------------------------------------------- entry point


def export_run(run_dir: Path, fmt: str, out: Path | None = None) -> Path:
    """Export the best kernel of ``run_dir`` in format ``fmt``; return the path of the file written."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (choose from: {', '.join(FORMATS)})")
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ExportError(f"no run folder at {run_dir}")
    source = read_best_source(run_dir)
    facts = read_run_facts(run_dir / "events.jsonl")
    target = _target_path(run_dir, fmt, facts.problem, out)
    target.parent.mkdir(parents=True, exist_ok=True)
    _WRITERS[fmt](source, facts, target)
    return target


def default_file_name(fmt: str, problem: str) -> str:
    """The file name an export gets when no output path is given."""
    return {"python": "best.py", "kernelbench": "best_kernelbench.py", "flashinfer": f"{problem}-arcengine.json"}[fmt]


def _target_path(run_dir: Path, fmt: str, problem: str, out: Path | None) -> Path:
    if out is None:
        return run_dir / "export" / default_file_name(fmt, problem)
    out = Path(out)
    return out / default_file_name(fmt, problem) if out.is_dir() else out


# ---------------------------------------------------------------- reading the run


def read_best_source(run_dir: Path) -> str:
    """The text of the run's best.py; it must parse as Python."""
    path = run_dir / "best.py"
    if not path.is_file():
        raise ExportError(f"{run_dir} has no best.py (did the campaign's seed pass the guard?)")
    source = path.read_text(encoding="utf-8")
    _parse(source, str(path))
    return source


def read_run_facts(events_path: Path) -> RunFacts:
    """Campaign id, problem, and the best kernel's speedup and device, from the run's event log."""
    if not events_path.is_file():
        raise ExportError(f"{events_path.parent} has no events.jsonl")
    events = _load_events(events_path)
    if not events or not isinstance(events[0], CampaignStarted):
        raise ExportError(f"{events_path} does not start with a campaign_started event")
    started = events[0]
    best_id, speedup, over_baseline = _best_candidate(events)
    return RunFacts(campaign_id=started.campaign_id, problem=started.problem, problem_dir=started.problem_dir,
                    speedup=speedup, device=_device_name(events, best_id, started.device),
                    over_baseline=over_baseline)


def _load_events(path: Path) -> list[Event]:
    try:
        return list(read_events(path))
    except EventLogError as error:
        raise ExportError(str(error)) from None


def _best_candidate(events: list[Event]) -> tuple[str | None, float | None, float | None]:
    """The campaign's best (arcengine.domain.run's one rule) and its speedups over the reference and the
    baseline."""
    run = RunState()
    run.apply_all(events)
    best = run.best
    return (best.candidate_id, best.speedup, best.over_baseline) if best else (None, None, None)


def _device_name(events: list[Event], candidate_id: str | None, fallback: str) -> str:
    """The device name the guard reported for ``candidate_id`` (else for any decision, else ``fallback``)."""
    names = {e.candidate_id: str(e.device["name"]) for e in events
             if isinstance(e, CandidateDecided) and e.device.get("name")}
    if candidate_id in names:
        return names[candidate_id]
    return next(iter(names.values()), fallback)


def load_run_problem(facts: RunFacts) -> Problem:
    """The run's problem: from the folder the campaign used, else a shipped problem of the same name."""
    for spec in (facts.problem_dir, facts.problem):
        try:
            return load_problem(spec)
        except ProblemError:
            continue
    raise ExportError(f"cannot load problem {facts.problem!r} (not at {facts.problem_dir}, not shipped)")


# ---------------------------------------------------------------- source inspection


def _parse(source: str, where: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as error:
        raise ExportError(f"{where} does not parse: {error.msg} (line {error.lineno})") from None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def defines(source: str, name: str) -> bool:
    """Whether ``source`` binds ``name`` at module level."""
    return name in _top_level_names(_parse(source, "the best kernel"))


def uses_triton(source: str) -> bool:
    """Whether ``source`` imports triton (or a submodule of it)."""
    for node in ast.walk(_parse(source, "the best kernel")):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
            return True
    return False


def _require_run(source: str) -> None:
    if not defines(source, "run"):
        raise ExportError("best.py defines no module-level run(); nothing to export")


# ---------------------------------------------------------------- python


def header(facts: RunFacts) -> str:
    """A comment block naming the problem, campaign and result; legal before ``from __future__``."""
    return (
        f"# problem: {facts.problem}\n"
        f"# campaign: {facts.campaign_id}\n"
        f"# best speedup: {_speedup_text(facts)}\n"
        "# exported by arcengine\n"
    )


def _speedup_text(facts: RunFacts) -> str:
    speedup = "unknown" if facts.speedup is None else f"{facts.speedup:.3g}x"
    baseline = "" if facts.over_baseline is None else f"{facts.over_baseline:.3g}x over the baseline, "
    return f"{baseline}{speedup} over the reference on {facts.device}"


def write_python(source: str, facts: RunFacts, target: Path) -> None:
    """The best kernel unchanged, under a header comment."""
    _require_run(source)
    target.write_text(header(facts) + "\n" + source, encoding="utf-8")


# ---------------------------------------------------------------- kernelbench

_MODEL_NEW = '''

# ---- KernelBench entry point (generated by arcengine) ----
import torch as _kb_torch

_kernel_run = run


class ModelNew(_kb_torch.nn.Module):
    """Runs the exported kernel; init inputs are accepted and ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *inputs):
        return _kernel_run(*inputs)
'''

_MODEL = '''

# ---- KernelBench problem (generated by arcengine) ----
import torch as _kb_torch

_reference_run = run
_reference_make_inputs = make_inputs
_WORKLOAD_AXES = {axes!r}


class Model(_kb_torch.nn.Module):
    """The problem's reference; init inputs are accepted and ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *inputs):
        return _reference_run(*inputs)


def get_inputs():
    """Inputs of the first visible workload, made on the CPU (KernelBench moves them to the GPU)."""
    generator = _kb_torch.Generator().manual_seed(0)
    return list(_reference_make_inputs(dict(_WORKLOAD_AXES), generator, "cpu"))


def get_init_inputs():
    return []
'''


def companion_problem_path(target: Path, problem: str) -> Path:
    """Where the KernelBench problem file of a native problem goes: next to the ModelNew file."""
    return target.parent / f"{problem}_kernelbench_problem.py"


def write_kernelbench(source: str, facts: RunFacts, target: Path) -> None:
    """A KernelBench candidate (ModelNew); for a native problem, also its KernelBench problem file."""
    if defines(source, "ModelNew"):  # the problem came from KernelBench: the source already fits
        target.write_text(source, encoding="utf-8")
        return
    _require_run(source)
    problem = load_run_problem(facts)
    if problem.destination_passing:  # ModelNew.forward returns its outputs, and no shape is known to allocate them
        raise ExportError(f"problem {problem.name!r} is destination-passing: its kernel writes into outputs it is "
                          "given, which KernelBench's ModelNew does not pass (export it as python or flashinfer)")
    target.write_text(header(facts) + "\n" + source.rstrip("\n") + "\n" + _MODEL_NEW, encoding="utf-8")
    companion_problem_path(target, problem.name).write_text(kernelbench_problem(problem, facts), encoding="utf-8")


def kernelbench_problem(problem: Problem, facts: RunFacts) -> str:
    """The reference verbatim, then Model / get_inputs / get_init_inputs built on its run and make_inputs."""
    reference = problem.reference_path.read_text(encoding="utf-8")
    names = _top_level_names(_parse(reference, str(problem.reference_path)))
    missing = {"run", "make_inputs"} - names
    if missing:
        raise ExportError(f"{problem.reference_path} defines no {', '.join(sorted(missing))}")
    return header(facts) + "\n" + reference.rstrip("\n") + "\n" + _MODEL.format(axes=_first_visible_axes(problem))


def _first_visible_axes(problem: Problem) -> dict[str, int]:
    visible = [w for w in problem.workloads if not w.held_out]
    if not visible:
        raise ExportError(f"problem {problem.name!r} has no visible GPU workload")
    return dict(visible[0].axes)


# ---------------------------------------------------------------- flashinfer


def solution_document(source: str, facts: RunFacts, problem: Problem) -> dict[str, Any]:
    """A FlashInfer-Bench Solution holding the kernel as main.py, called as it was judged: ``run(*inputs)`` returning
    its outputs, said explicitly (``destination_passing_style`` false: the schema's default is true), unless the
    problem declared destination passing. The kernel is the judged file unchanged, not wrapped in a shim that copies
    into given outputs: such a copy would be timed in FlashInfer-Bench and was never timed here."""
    triton = uses_triton(source)
    definition = solution.definition_name(problem.directory, problem.name)
    return {
        "name": f"{definition}-arcengine-{facts.campaign_id}",
        "definition": definition,
        "author": "arcengine",
        "spec": {
            "language": "triton" if triton else "python",
            "target_hardware": [facts.device],
            "entry_point": f"{ENTRY_FILE}::run",
            "dependencies": ["torch", "triton"] if triton else ["torch"],
            "destination_passing_style": problem.destination_passing,
        },
        "sources": [{"path": ENTRY_FILE, "content": source}],
        "description": f"arcengine best kernel for {facts.problem}: {_speedup_text(facts)}",
    }


def write_flashinfer(source: str, facts: RunFacts, target: Path) -> None:
    """The Solution JSON, after checking it against FlashInfer-Bench's schema (arcengine.domain.formats.solution)."""
    _require_run(source)
    document = solution_document(source, facts, load_run_problem(facts))
    violations = solution.violations(document)
    if violations:
        raise ExportError(f"the FlashInfer-Bench solution is invalid: {'; '.join(violations)}")
    target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


_WRITERS: dict[str, Callable[[str, RunFacts, Path], None]] = {
    "python": write_python,
    "kernelbench": write_kernelbench,
    "flashinfer": write_flashinfer,
}
