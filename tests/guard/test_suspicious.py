"""A suspicious speedup is checked twice: past ``suspicious_speedup`` over the reference (or under the roofline
floor), a pass is believed only if a second, fresh child passes again with figures that agree; a KEEP's own
confirmation child answers both. The guard's children are stand-ins that return canned results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from arcengine.domain.events import CandidateDecided
from arcengine.guard.contract import ChildResult
from arcengine.guard.decision import SUSPICIOUS_SPEEDUP, Ceilings, Thresholds, judge
from arcengine.guard.sandbox import ChildOutcome
from arcengine.guard.service import GuardService, Slot
from arcengine.guard.turns import DeviceTurns
from arcengine.recording.bus import Bus
from arcengine.tools.evaluate import eval_report
from tests.guard.fakes import FakeLauncher
from tests.guard.test_decision import PROBLEM, WORKLOADS

# The decision tests' problem: roofline floors (bytes = 4 * N at 1e9 B/s) N=1000: 4 us, N=500: 2 us, N=250
# (held out): 1 us.
PROFILE = {"device": {"name": "Fake", "kind": "cpu"}, "flops_per_s": 1e12, "bandwidth_bytes_per_s": 1e9}
THRESHOLDS = Thresholds(margin=0.02, near_band=0.05)

HONEST = [10.0, 5.0, 3.0]  # candidate times against REFS: 4x the reference on every visible workload
REFS = [40.0, 20.0, 9.0]
FAST_REFS = [200.0, 20.0, 9.0]  # the same times are 20x the reference on N=1000: past the threshold


def child(times: list[float], refs: list[float], incumbents: list[float] | None = None,
          correct: bool = True) -> dict[str, Any]:
    """A child's result as the harness writes it; paired ratios are constant, so no bootstrap runs."""
    incumbents = incumbents or [0.0] * len(times)
    return {
        "ok": True, "correct": correct, "failure": None if correct else "N=500: 12 elements outside tolerance",
        "device": {"name": "Fake"}, "seconds": {"timing": 0.5},
        "workloads": [
            {"index": i, "correct": correct, "time_us": t, "ref_time_us": r, "incumbent_time_us": inc or None,
             "max_abs_err": 0.001, "paired_ratios": [inc / t] * 20 if inc else []}
            for i, (t, r, inc) in enumerate(zip(times, refs, incumbents, strict=True))
        ],
    }


class CannedChildren(FakeLauncher):
    """A launcher whose children answer at once with the next canned result, recording what each was asked."""

    def __init__(self, *results: dict[str, Any]) -> None:
        self.results = list(results)
        self.specs: list[dict[str, Any]] = []

    async def run(self, spec: dict[str, Any], *, device: str, timeout_s: float,
                  env_extra: dict[str, str] | None = None, turns: DeviceTurns | None = None) -> ChildOutcome:
        self.specs.append(spec)
        assert self.results, "the guard launched more children than the test expected"
        return ChildOutcome(result=self.results.pop(0), returncode=0, timed_out=False, seconds=1.0, stderr_tail="")


async def decide(tmp_path: Path, children: CannedChildren, *, incumbent: bool,
                 thresholds: Thresholds = THRESHOLDS) -> CandidateDecided:
    guard = GuardService(PROBLEM, Bus(None), thresholds, seeds=1, timeout_s=10.0, launcher=children.launcher)
    guard.device, guard.slots = "cpu", [Slot(None, PROFILE)]
    async with anyio.create_task_group() as group:
        group.start_soon(guard.work)
        decided = await guard.submit(candidate_id="c1", agent_id="a1", source="def run(x):\n    return x\n",
                                     candidate_path=tmp_path / "c1.py",
                                     incumbent_path=tmp_path / "inc.py" if incumbent else None)
        group.cancel_scope.cancel()
    return decided


# ---------------------------------------------------------------- the guard: how many children, what it decides


async def test_a_suspicious_pass_confirmed_by_a_fresh_child_is_believed(tmp_path: Path) -> None:
    children = CannedChildren(child(HONEST, FAST_REFS), child([10.5, 5.0, 3.0], [205.0, 20.0, 9.0]))
    decided = await decide(tmp_path, children, incumbent=False)
    assert len(children.specs) == 2
    assert children.specs[0]["rng_seed"] != children.specs[1]["rng_seed"]  # its own round orders
    assert decided.decision == "KEEP" and decided.correct and decided.confirmed is True
    assert decided.suspicious == "N=1000: 20.00x the reference, past 10x"
    assert decided.reason.startswith("baseline: correct on every workload; suspicious (")
    assert "confirmed by a fresh child" in decided.reason
    document = eval_report(decided).model_dump(mode="json")
    assert document["verdict"] == "pass"
    assert document["suspicious"] == decided.suspicious and document["confirmed"] is True


@pytest.mark.parametrize("fresh_faster", [False, True], ids=["fresh-slower", "fresh-faster"])
async def test_a_suspicious_pass_the_fresh_child_does_not_reproduce_keeps_the_slower_figures(
        tmp_path: Path, fresh_faster: bool) -> None:
    # Both children pass, far apart where it was suspect: neither is believed over the other, the slower stands
    # (an autotuner may pick another configuration in each process; a trick that works in one child gains nothing).
    fresh = child([4.0, 5.0, 3.0] if fresh_faster else [60.0, 5.0, 3.0], FAST_REFS)
    children = CannedChildren(child(HONEST, FAST_REFS), fresh)
    decided = await decide(tmp_path, children, incumbent=False)
    assert len(children.specs) == 2 and decided.confirmed is False
    assert decided.decision == "KEEP" and "not reproduced by a fresh child" in decided.reason
    assert decided.workloads[0].time_us == (10.0 if fresh_faster else 60.0)  # the slower child's figures
    assert decided.reason.endswith(f"the slower, {'first' if fresh_faster else 'fresh'} child's figures stand")
    assert ("N=1000 10.00 us then 4.00 us" if fresh_faster else "N=1000 10.00 us then 60.00 us") in decided.reason


async def test_a_suspicious_pass_whose_fresh_child_fails_is_reverted(tmp_path: Path) -> None:
    children = CannedChildren(child(HONEST, FAST_REFS), child(HONEST, FAST_REFS, correct=False))
    decided = await decide(tmp_path, children, incumbent=False)
    assert decided.decision == "REVERT" and not decided.correct and decided.confirmed is False
    assert "the first measured 8.94x the reference" in decided.reason
    assert "the fresh child did not pass: incorrect: N=500: 12 elements outside tolerance" in decided.reason


@pytest.mark.parametrize("incumbent", [False, True], ids=["eval-pass", "accept"])
async def test_a_pass_that_is_not_suspicious_runs_one_child(tmp_path: Path, incumbent: bool) -> None:
    # Against an incumbent timed as fast, the candidate is an ACCEPT; without one, an eval-style pass.
    children = CannedChildren(child(HONEST, REFS, HONEST if incumbent else None))
    decided = await decide(tmp_path, children, incumbent=incumbent)
    assert len(children.specs) == 1
    assert decided.decision == ("ACCEPT" if incumbent else "KEEP")
    assert decided.suspicious is None and decided.confirmed is None


async def test_a_suspicious_keep_runs_exactly_one_confirmation(tmp_path: Path) -> None:
    incumbent = [15.0, 7.5, 4.5]  # 1.5x slower, and 13.3x the reference on N=1000: the candidate's 20x is news
    children = CannedChildren(child(HONEST, FAST_REFS, incumbent), child(HONEST, FAST_REFS, incumbent))
    decided = await decide(tmp_path, children, incumbent=True)
    assert len(children.specs) == 2  # the KEEP's confirmation is the suspicious pass's too
    assert decided.decision == "KEEP" and decided.confirmed is True
    assert decided.suspicious == "N=1000: 20.00x the reference, past 10x"


async def test_a_suspicious_keep_that_is_kept_again_but_disagrees_keeps_the_slower_figures(tmp_path: Path) -> None:
    incumbent = [15.0, 7.5, 4.5]
    # Again a KEEP (1.25x the incumbent), its mean within 25% (8.94x then 7.45x), but N=1000 took 44% longer.
    children = CannedChildren(child(HONEST, FAST_REFS, incumbent), child([14.4, 5.0, 3.0], FAST_REFS, incumbent))
    decided = await decide(tmp_path, children, incumbent=True)
    assert len(children.specs) == 2
    assert decided.confirmed is False and decided.workloads[0].time_us == 14.4  # the slower child's figures
    assert "N=1000 10.00 us then 14.40 us" in decided.reason


async def test_an_accept_under_the_roofline_floor_is_checked_and_reverted_if_it_moves(tmp_path: Path) -> None:
    # 3.5 us on N=1000 is under its 4 us floor (a SOL score above 1) but not under half of it (impossible).
    fast = [3.5, 5.0, 3.0]
    children = CannedChildren(child(fast, REFS, fast), child([8.0, 5.0, 3.0], REFS, [8.0, 5.0, 3.0]))
    decided = await decide(tmp_path, children, incumbent=True)
    assert len(children.specs) == 2
    assert decided.suspicious is not None and "3.50 us under the 4.00 us roofline floor" in decided.suspicious
    assert decided.decision == "ACCEPT" and decided.confirmed is False and decided.workloads[0].time_us == 8.0
    assert "N=1000 3.50 us then 8.00 us" in decided.reason


async def test_a_held_out_workload_that_moves_is_named_without_its_figures(tmp_path: Path) -> None:
    children = CannedChildren(child([10.0, 5.0, 0.8], REFS), child([10.0, 5.0, 3.0], REFS))
    decided = await decide(tmp_path, children, incumbent=False)
    assert decided.confirmed is False and decided.workloads[2].time_us == 3.0  # the fresh child's figures stand
    assert "a held-out workload: its time moved by more than 25%" in decided.reason
    assert "N=250" not in decided.reason and "0.80" not in decided.reason


async def test_the_threshold_is_the_guards_setting(tmp_path: Path) -> None:
    children = CannedChildren(child(HONEST, FAST_REFS))
    decided = await decide(tmp_path, children, incumbent=False,
                           thresholds=Thresholds(0.02, 0.05, suspicious_speedup=25.0))
    assert len(children.specs) == 1 and decided.suspicious is None


# ---------------------------------------------------------------- judge: which passes are suspicious


def _judge(result: dict[str, Any], has_incumbent: bool, threshold: float = SUSPICIOUS_SPEEDUP):
    return judge(ChildResult.model_validate(result), PROBLEM, WORKLOADS, Thresholds(0.02, 0.05, threshold),
                 Ceilings(1e12, 1e9), has_incumbent)


def test_one_workload_past_the_threshold_is_enough_though_the_mean_is_below() -> None:
    verdict = _judge(child(HONEST, FAST_REFS), has_incumbent=False)
    assert verdict.speedup is not None and verdict.speedup < SUSPICIOUS_SPEEDUP
    assert verdict.suspects == (0,)


def test_a_held_out_workload_is_not_judged_by_its_speedup_and_never_named() -> None:
    # 90x on the held-out workload: its speedup decides nothing, so it raises no suspicion.
    assert _judge(child(HONEST, [40.0, 20.0, 270.0]), has_incumbent=False).suspicious is None
    # Under its floor (1 us), it does, without its shape or its figures.
    verdict = _judge(child([10.0, 5.0, 0.8], REFS), has_incumbent=False)
    assert verdict.suspects == (2,)
    assert verdict.suspicious == "a held-out workload: under its roofline floor (a SOL score above 1)"


def test_a_level_the_incumbent_already_reached_beside_it_is_no_news() -> None:
    # The incumbent measured 19.6x on N=1000 in the same rounds: the candidate's 20x is within 25% of it.
    verdict = _judge(child(HONEST, FAST_REFS, [10.2, 5.0, 3.0]), has_incumbent=True)
    assert verdict.decision == "ACCEPT" and verdict.suspicious is None


def test_a_revert_is_never_suspicious() -> None:
    verdict = _judge(child(HONEST, FAST_REFS, [5.0, 2.5, 1.5]), has_incumbent=True)  # 2x slower
    assert verdict.decision == "REVERT" and verdict.suspicious is None


def test_evals_flag_defaults_to_the_guards_threshold() -> None:
    from arcengine.cli import eval_command

    option = next(p for p in eval_command.params if p.name == "suspicious_speedup")
    assert option.default == SUSPICIOUS_SPEEDUP
