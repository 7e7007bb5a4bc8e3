"""The engine's typed contract with a guard child (arcengine/guard/contract.py) and the child's own dataclasses
name the same fields, a spec built by the engine is what the child parses, and a real child's result is read
through the contract, key for key."""

from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path

from arcengine.guard.child.correctness import Tolerance
from arcengine.guard.child.judge import Baseline, Spec, WorkloadRecord, parse_spec
from arcengine.guard.child.timing import TimingConfig
from arcengine.guard.contract import (
    BaselineSpec,
    ChildResult,
    ChildSpec,
    TimingSpec,
    ToleranceSpec,
    WorkloadOutcome,
    WorkloadSpec,
)
from arcengine.guard.sandbox import ChildOutcome
from arcengine.guard.service import read_result
from tests.guard.test_child import FAST_TIMING, WORKLOADS, _evaluate

LAUNCHER_FIELDS = {"result", "gate"}  # added to the spec by the launcher, never by the engine's spec


def _names(dataclass: type) -> set[str]:
    return {field.name for field in fields(dataclass)}


def test_both_sides_name_the_same_fields() -> None:
    assert _names(Spec) - LAUNCHER_FIELDS == set(ChildSpec.model_fields)
    assert _names(WorkloadRecord) == set(WorkloadOutcome.model_fields)
    assert _names(TimingConfig) == set(TimingSpec.model_fields)
    assert _names(Tolerance) == set(ToleranceSpec.model_fields)
    assert _names(Baseline) == set(BaselineSpec.model_fields)


def test_timing_defaults_agree() -> None:
    child = {field.name: field.default for field in fields(TimingConfig) if field.default is not MISSING}
    assert child == TimingSpec().model_dump()


def test_the_child_parses_what_the_engine_builds(tmp_path: Path) -> None:
    spec = ChildSpec(device="cpu", reference="r.py", candidate="c.py", incumbent="i.py",
                     workloads=(WorkloadSpec(index=3, axes={"N": 7}, held_out=True),),
                     tolerance=ToleranceSpec(atol=0.1, rtol=0.2, matched_ratio=0.99), seeds=(0, 4),
                     distributions=("normal", "uniform"), deterministic=False,
                     timing=TimingSpec(**FAST_TIMING, block=2), rng_seed=11, input_salt=5,
                     baseline=BaselineSpec(routes=("compile", "addmm"), module="baseline.py"),
                     destination_passing=True)
    parsed = parse_spec({**spec.document(), "result": str(tmp_path / "result.json")})
    for name in ChildSpec.model_fields:
        ours, theirs = getattr(spec, name), getattr(parsed, name)
        if name in ("workloads", "tolerance", "timing", "baseline"):
            ours = tuple(item.model_dump() for item in ours) if name == "workloads" else ours.model_dump()
            theirs = tuple(vars(item) for item in theirs) if name == "workloads" else vars(theirs)
        assert ours == theirs, name


def test_a_real_childs_result_has_exactly_the_contracts_keys(tmp_path: Path) -> None:
    for name in ("pass", "broken"):
        (tmp_path / name).mkdir()
    passed = _evaluate(tmp_path / "pass", "def run(x):\n    return x * 2\n")
    passed.pop("token")  # the launcher's: it takes it off before the engine reads the result
    assert set(passed) == set(ChildResult.model_fields)
    read = ChildResult.model_validate(passed)
    assert read.ok and read.correct and [w.index for w in read.workloads] == [w["index"] for w in WORKLOADS]
    assert all(w.time_us and w.ref_time_us and len(w.paired_ratios) == 0 for w in read.workloads)
    broken = _evaluate(tmp_path / "broken", "raise ImportError('nope')\n")
    broken.pop("token")
    assert not ChildResult.model_validate(broken).correct


def test_a_result_outside_the_contract_is_a_harness_failure_that_says_where() -> None:
    forged = ChildOutcome(result={"ok": True, "correct": True, "speedup": 1e6}, returncode=0, timed_out=False,
                          seconds=1.0, stderr_tail="")
    read = read_result(forged)
    assert not read.ok and "outside the contract" in (read.failure or "") and "speedup" in (read.failure or "")
    missing = ChildOutcome(result=None, returncode=1, timed_out=False, seconds=1.0, stderr_tail="")
    assert not read_result(missing).ok
