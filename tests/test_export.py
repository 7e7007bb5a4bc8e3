"""arcengine/tools/export.py: python, KernelBench and FlashInfer-Bench exports of a hand-built run folder."""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from arcengine.domain.events import (
    SEED_AGENT,
    BestImproved,
    CampaignStarted,
    CandidateDecided,
    CandidateProposed,
    Event,
    dump_event,
)
from arcengine.domain.formats.solution import Solution, violations
from arcengine.tools.export import ExportError, export_run, read_run_facts

CAMPAIGN_ID = "20250101-000000-test"
DEVICE = {"name": "NVIDIA H200", "kind": "cuda"}


def _events(problem_dir: Path) -> list[Event]:
    seed_source = (problem_dir / "seed.py").read_text(encoding="utf-8")
    return [
        CampaignStarted(seq=1, campaign_id=CAMPAIGN_ID, problem="scale", problem_dir=str(problem_dir),
                        kernel_type="elementwise", config={"device": "cuda"}, device="cuda"),
        CandidateProposed(seq=2, candidate_id="c0000", agent_id=SEED_AGENT, position=0, parent_id=None,
                          strategy="seed", rationale="the problem's seed", source=seed_source),
        CandidateDecided(seq=3, candidate_id="c0000", agent_id=SEED_AGENT, decision="KEEP", reason="seed",
                         correct=True, speedup=0.5, device=DEVICE),
        CandidateDecided(seq=4, candidate_id="c0001", agent_id="a1", decision="KEEP", reason="faster",
                         correct=True, speedup=2.5, speedup_over_baseline=1.25, device=DEVICE),
        BestImproved(seq=5, agent_id="a1", candidate_id="c0001", speedup=2.5, campaign_best=True,
                     speedup_over_baseline=1.25),
    ]


def _write_log(path: Path, events: list[Event]) -> None:
    """One JSON line per event, as EventLogWriter.append writes them."""
    path.write_text("".join(dump_event(event) + "\n" for event in events), encoding="utf-8")


@pytest.fixture
def run_dir(tmp_path: Path, scale_problem: Path) -> Path:
    run = tmp_path / "runs" / CAMPAIGN_ID
    run.mkdir(parents=True)
    shutil.copy(scale_problem / "seed.py", run / "best.py")
    _write_log(run / "events.jsonl", _events(scale_problem))
    return run


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"exported_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_run_facts_take_the_campaign_best(run_dir: Path) -> None:
    facts = read_run_facts(run_dir / "events.jsonl")
    assert (facts.campaign_id, facts.problem, facts.speedup, facts.device) == (
        CAMPAIGN_ID, "scale", 2.5, "NVIDIA H200")


def test_run_facts_fall_back_to_the_seed_keep(run_dir: Path, scale_problem: Path) -> None:
    _write_log(run_dir / "events.jsonl", _events(scale_problem)[:3])
    facts = read_run_facts(run_dir / "events.jsonl")
    assert (facts.speedup, facts.device) == (0.5, "NVIDIA H200")


def test_python_export_imports_and_runs(run_dir: Path) -> None:
    path = export_run(run_dir, "python", None)
    assert path == run_dir / "export" / "best.py"
    text = path.read_text(encoding="utf-8")
    assert text.endswith((run_dir / "best.py").read_text(encoding="utf-8"))
    assert "exported by arcengine" in text and "2.5x" in text and "NVIDIA H200" in text
    assert "1.25x over the baseline, 2.5x over the reference" in text
    assert "import arcengine" not in text and "from arcengine" not in text
    x = torch.randn(1000)
    torch.testing.assert_close(_load(path).run(x), 2 * x + 1)


def test_python_export_keeps_a_future_import_legal(run_dir: Path) -> None:
    best = run_dir / "best.py"
    best.write_text("from __future__ import annotations\n\n" + best.read_text(encoding="utf-8"), encoding="utf-8")
    path = export_run(run_dir, "python", run_dir / "elsewhere" / "kernel.py")
    assert path == run_dir / "elsewhere" / "kernel.py"
    x = torch.randn(10)
    torch.testing.assert_close(_load(path).run(x), 2 * x + 1)


def test_kernelbench_export_matches_the_reference(run_dir: Path) -> None:
    path = export_run(run_dir, "kernelbench", None)
    assert path == run_dir / "export" / "best_kernelbench.py"
    companion = path.parent / "scale_kernelbench_problem.py"
    for generated in (path, companion):
        text = generated.read_text(encoding="utf-8")
        assert "import arcengine" not in text and "from arcengine" not in text
    problem, candidate = _load(companion), _load(path)
    inputs = problem.get_inputs()
    assert [tuple(t.shape) for t in inputs] == [(4096,)]  # the first visible GPU workload
    torch.testing.assert_close(problem.get_inputs()[0], inputs[0])  # seeded: the same inputs twice
    expected = problem.Model(*problem.get_init_inputs())(*inputs)
    actual = candidate.ModelNew(*problem.get_init_inputs())(*inputs)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(expected, 2 * inputs[0] + 1)


def test_kernelbench_source_is_exported_unchanged(run_dir: Path) -> None:
    source = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return 2 * x + 1\n"
    (run_dir / "best.py").write_text(source, encoding="utf-8")
    path = export_run(run_dir, "kernelbench", None)
    assert path.read_text(encoding="utf-8") == source
    assert not (path.parent / "scale_kernelbench_problem.py").exists()


def test_flashinfer_export_is_a_valid_solution(run_dir: Path) -> None:
    path = export_run(run_dir, "flashinfer", None)
    assert path == run_dir / "export" / "scale-arcengine.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert violations(document) == []
    assert document["name"] == f"scale-arcengine-{CAMPAIGN_ID}"
    assert document["definition"] == "scale" and document["author"] == "arcengine"
    spec = document["spec"]
    assert spec["language"] == "python" and spec["dependencies"] == ["torch"]  # the fixture's seed is not Triton
    assert spec["target_hardware"] == ["NVIDIA H200"] and spec["entry_point"] == "main.py::run"
    # Written out: the schema's default (true) would have FlashInfer-Bench call run(*inputs, *outputs).
    assert spec["destination_passing_style"] is False
    assert Solution.model_validate(document).spec.destination_passing_style is False
    entry = next(s for s in document["sources"] if s["path"] == "main.py")
    namespace: dict[str, Any] = {}
    exec(compile(entry["content"], "main.py", "exec"), namespace)
    x = torch.randn(7)
    torch.testing.assert_close(namespace["run"](x), 2 * x + 1)  # value-returning, as declared


def test_a_destination_passing_problem_exports_its_kernel_as_one(run_dir: Path, tmp_path: Path,
                                                                 scale_problem: Path) -> None:
    problem = tmp_path / "scale_dps"
    shutil.copytree(scale_problem, problem)
    (problem / "problem.toml").write_text("destination_passing = true\n" + (problem / "problem.toml").read_text())
    (problem / "seed.py").write_text("def run(x, y):\n    y.copy_(2 * x + 1)\n")
    shutil.copy(problem / "seed.py", run_dir / "best.py")
    _write_log(run_dir / "events.jsonl", _events(problem))
    document = json.loads(export_run(run_dir, "flashinfer", None).read_text(encoding="utf-8"))
    assert document["spec"]["destination_passing_style"] is True and violations(document) == []
    with pytest.raises(ExportError, match="destination-passing: its kernel writes into outputs it is given"):
        export_run(run_dir, "kernelbench", None)


def test_flashinfer_language_follows_a_triton_import(run_dir: Path) -> None:
    best = run_dir / "best.py"
    best.write_text("import triton  # noqa\n" + best.read_text(encoding="utf-8"), encoding="utf-8")
    document = json.loads(export_run(run_dir, "flashinfer", None).read_text(encoding="utf-8"))
    assert document["spec"]["language"] == "triton"
    assert document["spec"]["dependencies"] == ["torch", "triton"]


def _valid_solution() -> dict[str, Any]:
    return {
        "name": "scale-arcengine-x", "definition": "scale", "author": "arcengine",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "dependencies": ["torch"]},
        "sources": [{"path": "main.py", "content": "def run(x):\n    return 2 * x + 1\n"}],
    }


def test_the_schema_calls_a_solution_destination_passing_unless_it_says_otherwise() -> None:
    assert Solution.model_validate(_valid_solution()).spec.destination_passing_style is True
    document = _valid_solution()
    document["spec"] |= {"destination_passing_style": False, "binding": "tvm-ffi"}
    document["unknown_key"] = 1  # ignored, as upstream
    assert Solution.model_validate(document).spec.destination_passing_style is False


def _break_author(d: dict[str, Any]) -> None:
    del d["author"]


def _break_entry_separator(d: dict[str, Any]) -> None:
    d["spec"]["entry_point"] = "main.py:run"


def _break_entry_twice(d: dict[str, Any]) -> None:
    d["spec"]["entry_point"] = "main.py::run::x"


def _break_entry_file(d: dict[str, Any]) -> None:
    d["spec"]["entry_point"] = "kernel.py::run"


def _break_duplicate_paths(d: dict[str, Any]) -> None:
    d["sources"].append(dict(d["sources"][0]))


def _break_language(d: dict[str, Any]) -> None:
    d["spec"]["language"] = "rust"


def _break_hardware(d: dict[str, Any]) -> None:
    d["spec"]["target_hardware"] = []


def _break_binding(d: dict[str, Any]) -> None:
    d["spec"]["binding"] = "pybind11"


def _break_traversal(d: dict[str, Any]) -> None:
    d["sources"].append({"path": "../escape.py", "content": "x = 1\n"})


def _break_absolute(d: dict[str, Any]) -> None:
    d["sources"].append({"path": "/tmp/abs.py", "content": "x = 1\n"})


def _break_empty_content(d: dict[str, Any]) -> None:
    d["sources"][0]["content"] = ""


def _break_sources(d: dict[str, Any]) -> None:
    d["sources"] = []


@pytest.mark.parametrize(("breaker", "words"), [
    (_break_author, "author"),
    (_break_entry_separator, "Invalid entry point format"),
    (_break_entry_twice, "Invalid entry point format"),
    (_break_entry_file, "not found in sources"),
    (_break_duplicate_paths, "Duplicate source path"),
    (_break_language, "spec.language"),
    (_break_hardware, "spec.target_hardware"),
    (_break_binding, "spec.binding"),
    (_break_traversal, "parent directory traversal"),
    (_break_absolute, "absolute path"),
    (_break_empty_content, "sources.0.content"),
    (_break_sources, "sources"),
])
def test_the_schema_refuses_what_flashinfer_bench_refuses(breaker: Any, words: str) -> None:
    assert violations(_valid_solution()) == []
    document = copy.deepcopy(_valid_solution())
    breaker(document)
    found = violations(document)
    assert len(found) == 1 and words in found[0], found


def test_flashinfer_bench_itself_agrees_where_it_is_installed(run_dir: Path) -> None:
    """Not installed by the test extra (it pulls flashinfer-python and CUTLASS's DSL): run where it is."""
    upstream = pytest.importorskip("flashinfer_bench.data")
    document = json.loads(export_run(run_dir, "flashinfer", None).read_text(encoding="utf-8"))
    assert upstream.Solution.model_validate(document).spec.destination_passing_style is False
    for breaker in (_break_entry_separator, _break_entry_file, _break_duplicate_paths, _break_traversal):
        broken = copy.deepcopy(_valid_solution())
        breaker(broken)
        with pytest.raises(ValueError):
            upstream.Solution.model_validate(broken)


def test_missing_run_folder(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="no run folder"):
        export_run(tmp_path / "nope", "python", None)


def test_missing_best_py(run_dir: Path) -> None:
    (run_dir / "best.py").unlink()
    with pytest.raises(ExportError, match=r"has no best\.py"):
        export_run(run_dir, "python", None)


def test_missing_event_log(run_dir: Path) -> None:
    (run_dir / "events.jsonl").unlink()
    with pytest.raises(ExportError, match=r"has no events\.jsonl"):
        export_run(run_dir, "flashinfer", None)


def test_unknown_format(run_dir: Path) -> None:
    with pytest.raises(ExportError, match=r"unknown export format 'onnx'.*python, kernelbench, flashinfer"):
        export_run(run_dir, "onnx", None)
