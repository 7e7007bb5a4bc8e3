"""The contract between the engine and a guard child, typed: the spec the engine hands a child and the result the
child writes back.

The child keeps to the standard library and torch, so it has its own dataclasses for both
(``arcengine.guard.child.judge``: ``Spec``, ``WorkloadRecord``, ``Evaluation.result``); these models are the
engine's side, and tests/guard/test_contract.py holds the two sides to the same fields. The engine builds every
spec as a ``ChildSpec`` and reads every result through ``ChildResult``: a field added on one side and not the
other fails there, not as a missing key six files away.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkloadSpec(_Contract):
    index: int
    axes: dict[str, Any]
    held_out: bool = False


class ToleranceSpec(_Contract):
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)
    matched_ratio: float = Field(gt=0, le=1)


class TimingSpec(_Contract):
    """How long the child times each workload (``arcengine.guard.child.timing.TimingConfig``)."""

    warmup: int = Field(2, ge=0)
    min_reps: int = Field(5, ge=2)
    max_reps: int = 50
    target_rel_se: float = 0.005
    max_seconds_per_workload: float = 1.0
    warmup_seconds: float = 0.0
    block: int = Field(1, ge=1)


class BaselineSpec(_Contract):
    routes: tuple[str, ...] = Field(min_length=1)
    module: str | None = None  # the problem's baseline.py, where it has library routes


class ChildSpec(_Contract):
    """One candidate to judge. The launcher adds where the result goes, its token and the gate."""

    mode: Literal["evaluate"] = "evaluate"
    device: Literal["cpu", "cuda"]
    reference: str
    candidate: str
    incumbent: str | None = None
    workloads: tuple[WorkloadSpec, ...] = Field(min_length=1)
    tolerance: ToleranceSpec
    seeds: tuple[int, ...] = Field(min_length=1)
    distributions: tuple[str, ...] = ("normal",)
    deterministic: bool = True
    timing: TimingSpec = TimingSpec()
    rng_seed: int
    input_salt: int | None = None  # pins the inputs (tests, reproductions); otherwise drawn fresh per child
    baseline: BaselineSpec | None = None  # the routes this child checks and times beside the reference
    destination_passing: bool = False  # candidate and incumbent write into outputs passed after their inputs

    def document(self) -> dict[str, Any]:
        """The JSON object a launcher writes for the child."""
        return self.model_dump(mode="json")


class WorkloadOutcome(_Contract):
    """One workload as the child judged it (``WorkloadRecord``)."""

    index: int
    held_out: bool = False
    correct: bool = False
    failure: str | None = None
    max_abs_err: float | None = None
    matched_ratio: float | None = None
    time_us: float | None = None
    ref_time_us: float | None = None
    incumbent_time_us: float | None = None
    reps: int | None = None
    rel_se: float | None = None
    ref_rel_se: float | None = None
    paired_ratios: list[float] = []
    harness: dict[str, float] = {}
    baseline_times_us: dict[str, float] = {}
    baseline_failures: dict[str, str] = {}
    baseline_route: str | None = None
    baseline_time_us: float | None = None
    baseline_paired_ratios: list[float] = []


class ChildResult(_Contract):
    """What a judging child wrote (``Evaluation.result``), or a short failure where it could not judge."""

    ok: bool = False
    correct: bool = False
    failure: str | None = None
    failure_workload: int | None = None
    failure_held_out: bool = False
    stage: str | None = None
    workloads: list[WorkloadOutcome] = []
    incumbent_failure: str | None = None
    baseline_failure: str | None = None
    device: dict[str, Any] | None = None
    seconds: dict[str, float] = {}
    compiler: dict[str, float] = {}
    timer: str | None = None
    input_salt: int | None = None
