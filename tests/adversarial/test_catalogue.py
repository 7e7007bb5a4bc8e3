"""The adversarial catalogue on CPU: every cpu entry of catalogue.toml (but those marked ci = false, which repeat a
check another entry or a unit test of tests/guard makes, to keep this file short on 2 cores) through the real command
line,
`python -m arcengine.cli eval PROBLEM FILE --device cpu --json`, with API-key canaries in its environment. An entry
only the static gate can refuse (verdict "reject") is checked against the gate in this process, as `eval` calls it
before anything runs; a few of them go through the command line too, for the reject path's output and canaries
(bench/adversarial.py runs every entry through the command line).

Each entry must get its expected verdict with a reason containing the expected fragment, and no canary may appear
in what the command prints. Entries the guard does not catch yet are strict xfails naming the gap, so a fix shows up
as an XPASS to be removed from GAPS. Loading, running and judging are shared with bench/adversarial.py, which runs
the same catalogue (GPU-only entries included) on a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from arcengine.domain.problem import load_problem
from arcengine.guard.gate import check_source

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _load_runner():
    spec = importlib.util.spec_from_file_location("bench_adversarial", ROOT / "bench" / "adversarial.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


runner = _load_runner()
ENTRIES = runner.load_catalogue()
CPU_ENTRIES = [entry for entry in ENTRIES if entry.cpu and entry.ci and not entry.skip]
# Refused by the gate alone, whose verdict needs no process of its own: these few also through the command line.
THROUGH_EVAL = {"scale/spawn_subprocess", "scale/exec_dynamic", "softmax/fallback_calls_reference",
                "rmsnorm/rlcompleter_builtins_timer"}
GATE_ENTRIES = [entry for entry in CPU_ENTRIES if entry.verdicts == ("reject",) and entry.name not in THROUGH_EVAL]
EVAL_ENTRIES = [entry for entry in CPU_ENTRIES if entry not in GATE_ENTRIES]

# Entries the guard does not catch yet: what it did, and where the fix belongs.
GAPS: dict[str, str] = {}


def _param(entry):
    marks = []
    if entry.name in GAPS:
        marks.append(pytest.mark.xfail(strict=True, reason=f"guard gap: {GAPS[entry.name]}"))
    return pytest.param(entry, id=entry.name, marks=marks)


@pytest.fixture(scope="module")
def canary_env():
    return runner.canary_environment()


def test_catalogue_is_complete_and_well_formed() -> None:
    names = [entry.name for entry in ENTRIES]
    assert len(set(names)) == len(names), "duplicate entries"
    assert len(ENTRIES) >= 30
    listed = {entry.path.resolve() for entry in ENTRIES}
    on_disk = {path.resolve() for path in HERE.glob("*/*.py")}
    assert on_disk == listed, f"files not in the catalogue: {on_disk - listed}; missing: {listed - on_disk}"
    for entry in ENTRIES:
        assert entry.path.read_text().startswith("# ruff: noqa\n\"\"\""), f"{entry.name}: header and docstring"
        assert entry.description and entry.source, entry.name
        assert entry.problem_argument, entry.name
    assert set(GAPS) <= {entry.name for entry in CPU_ENTRIES}, "GAPS names an entry that is not run on CPU"


def test_an_earlier_runs_slowest_entries_start_first_and_new_ones_before_them(tmp_path: Path) -> None:
    first, second, third = ENTRIES[:3]
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"entries": [{"name": first.name, "got": {"seconds": 3.0}},
                                               {"name": second.name, "got": {"seconds": 90.0}}]}))
    ordered = runner._longest_first([first, second, third], earlier)
    assert [entry.name for entry in ordered] == [third.name, second.name, first.name]
    assert runner._longest_first([first, second, third], None) == [first, second, third]


@pytest.mark.parametrize("entry", [_param(entry) for entry in GATE_ENTRIES])
def test_the_gate_refuses(entry) -> None:
    result = check_source(entry.path.read_text(encoding="utf-8"), load_problem(entry.problem_argument).entry)
    assert not result.ok, f"{entry.name}: the gate let it through"
    assert any(needle in result.reason for needle in entry.reasons), (
        f"reason {result.reason!r} contains none of {list(entry.reasons)}"
    )


@pytest.mark.parametrize("entry", [_param(entry) for entry in EVAL_ENTRIES])
def test_guard_catches(entry, canary_env) -> None:
    env, canaries = canary_env
    outcome = runner.run_entry(entry, "cpu", env, canaries)
    assert not outcome.leaked, f"API-key canary in the {outcome.leaked}: {runner.redact(outcome.reason, canaries)}"
    assert outcome.verdict != "error", outcome.reason
    assert outcome.verdict in entry.verdicts, f"got {outcome.verdict}: {outcome.reason}"
    assert any(needle in outcome.reason for needle in entry.reasons), (
        f"reason {outcome.reason!r} contains none of {list(entry.reasons)}"
    )
    assert outcome.returncode == (0 if outcome.verdict == "pass" else 1), outcome.stderr[-2000:]
