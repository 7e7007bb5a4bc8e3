"""arcengine/guard/decision.py judge(): correctness first, impossible times, baseline, paired KEEP/ACCEPT/REVERT,
roofline-floored speedup, held-out workloads reported apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arcengine.domain.problem import Problem, Tolerance, Workload
from arcengine.guard.contract import ChildResult
from arcengine.guard.decision import Ceilings, Thresholds, judge

# floors with CEILINGS: bytes = 4 * N at 1e9 B/s -> N=1000: 4 us, N=500: 2 us, N=250: 1 us
# (flops = 2 * N at 1e12 flop/s are a thousand times smaller).
WORKLOADS = [
    Workload(index=0, axes={"N": 1000}, dtype="float32"),
    Workload(index=1, axes={"N": 500}, dtype="float32"),
    Workload(index=2, axes={"N": 250}, dtype="float32", held_out=True),
]
PROBLEM = Problem(
    name="p", directory=Path("."), kernel_type="k", category="L1", description="",
    tolerance=Tolerance(atol=1e-2, rtol=1e-2, matched_ratio=0.99), workloads=WORKLOADS, cpu_workloads=WORKLOADS,
    flops_expr="2 * N", bytes_expr="4 * N",
)
CEILINGS = Ceilings(flops_per_s=1e12, bytes_per_s=1e9)
THRESHOLDS = Thresholds(margin=0.02, near_band=0.05)


def _result(times: list[float], refs: list[float], incumbents: list[float | None] | None = None,
            correct: bool = True, failure: str | None = None) -> dict[str, Any]:
    incumbents = incumbents or [None] * len(times)
    return {
        "correct": correct,
        "failure": failure,
        "workloads": [
            {"index": i, "correct": correct, "time_us": t, "ref_time_us": r, "incumbent_time_us": inc,
             "max_abs_err": 0.001, "paired_ratios": [inc / t] * 20 if inc else []}
            for i, (t, r, inc) in enumerate(zip(times, refs, incumbents, strict=True))
        ],
    }


def _judge(result: dict[str, Any], has_incumbent: bool = True, ceilings: Ceilings | None = CEILINGS):
    return judge(ChildResult.model_validate(result), PROBLEM, WORKLOADS, THRESHOLDS, ceilings, has_incumbent)


def test_incorrect_result_is_reverted_with_the_child_failure() -> None:
    result = _result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], correct=False,
                     failure="workload N=500: 12 of 500 elements outside tolerance")
    verdict = _judge(result)
    assert verdict.decision == "REVERT"
    assert not verdict.correct
    assert verdict.reason == "incorrect: workload N=500: 12 of 500 elements outside tolerance"
    assert verdict.speedup is None and verdict.vs_incumbent is None
    assert len(verdict.workloads) == 3  # the findings are still reported


def test_incorrect_without_a_failure_text() -> None:
    verdict = _judge({"correct": False, "workloads": []}, has_incumbent=False)
    expected = ("REVERT", "incorrect: not every workload was checked correct", False)
    assert (verdict.decision, verdict.reason, verdict.correct) == expected


def test_incorrect_baseline_is_not_kept() -> None:
    assert _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], correct=False), has_incumbent=False).decision == (
        "REVERT")


def test_baseline_is_kept_with_visible_and_held_out_speedups() -> None:
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0]), has_incumbent=False)
    assert verdict.decision == "KEEP"
    assert verdict.correct
    assert "baseline" in verdict.reason
    assert verdict.speedup == pytest.approx(4.0)  # 40/10 and 20/5; the held-out 9/3 = 3 stays out
    assert verdict.held_out_speedup == pytest.approx(3.0)
    assert verdict.vs_incumbent is None


def test_held_out_workload_does_not_move_speedup() -> None:
    slow_held_out = _judge(_result([10.0, 5.0, 9.0], [40.0, 20.0, 9.0]), has_incumbent=False)
    fast_held_out = _judge(_result([10.0, 5.0, 1.0], [40.0, 20.0, 9.0]), has_incumbent=False)
    assert slow_held_out.speedup == fast_held_out.speedup == pytest.approx(4.0)
    assert slow_held_out.held_out_speedup == pytest.approx(1.0)
    assert fast_held_out.held_out_speedup == pytest.approx(9.0)


def test_workload_results_carry_per_workload_numbers() -> None:
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [11.0, 5.5, 3.0]))
    w0, w1, w2 = verdict.workloads
    assert (w0.index, w0.axes, w0.held_out, w1.held_out, w2.held_out) == (0, {"N": 1000}, False, False, True)
    assert (w0.time_us, w0.ref_time_us, w0.incumbent_time_us, w0.max_abs_err) == (10.0, 40.0, 11.0, 0.001)
    assert w0.speedup == pytest.approx(4.0)
    assert w0.sol_score == pytest.approx(1 / (1 + (10 - 4) / (40 - 4)))  # floor 4 us: 36/42
    assert w2.speedup == pytest.approx(3.0)


def test_paired_gain_beyond_the_margin_is_kept() -> None:
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [11.0, 5.5, 3.0]))
    assert verdict.decision == "KEEP"
    assert verdict.vs_incumbent == pytest.approx(1.1)
    assert "1.100x" in verdict.reason


def test_paired_ratio_ignores_held_out_workloads() -> None:
    # The held-out incumbent is 10x slower; counting it would lift 0.9 far above the margin.
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [9.0, 4.5, 30.0]))
    assert verdict.vs_incumbent == pytest.approx(0.9)
    assert verdict.decision == "REVERT"


@pytest.mark.parametrize(
    ("incumbents", "decision"),
    [
        ([10.3, 5.15], "KEEP"),  # 1.03 >= 1.02
        ([10.1, 5.05], "ACCEPT"),  # 1.01: better, but not by the margin
        ([10.0, 5.0], "ACCEPT"),  # equal
        ([9.7, 4.85], "ACCEPT"),  # 0.97: within the 5% near band
        ([9.6, 4.8], "ACCEPT"),  # 0.96
        ([9.4, 4.7], "REVERT"),  # 0.94: slower than the band
        ([5.0, 2.5], "REVERT"),  # half as fast
    ],
)
def test_paired_ratio_bands(incumbents: list[float], decision: str) -> None:
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [*incumbents, 3.0]))
    assert verdict.decision == decision, verdict.reason
    assert verdict.correct
    assert verdict.vs_incumbent == pytest.approx(incumbents[0] / 10.0)


def test_paired_ratio_is_a_geometric_mean() -> None:
    # 14/10 = 1.4 and 3.5/5 = 0.7: geometric mean sqrt(0.98) = 0.99 -> ACCEPT (an arithmetic mean, 1.05, would KEEP).
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [14.0, 3.5, 3.0]))
    assert verdict.vs_incumbent == pytest.approx(0.98**0.5)
    assert verdict.decision == "ACCEPT"


def test_reverted_slower_candidate_names_the_ratio() -> None:
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [8.0, 4.0, 3.0]))
    assert verdict.decision == "REVERT" and verdict.reason.startswith("slower: 0.800x the incumbent")


def test_no_paired_timing_is_reverted() -> None:
    verdict = _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0]))
    assert verdict.decision == "REVERT"
    assert "no paired timing" in verdict.reason


def test_impossible_time_is_reverted_naming_the_workload() -> None:
    # N=1000 floor is 4 us; 1.5 us is under half of it.
    verdict = _judge(_result([1.5, 5.0, 3.0], [40.0, 20.0, 9.0], [11.0, 5.5, 3.0]))
    assert verdict.decision == "REVERT"
    assert not verdict.correct
    assert "impossible time" in verdict.reason and "N=1000" in verdict.reason
    assert "1.50 us" in verdict.reason and "4.00 us" in verdict.reason


def test_impossible_time_on_a_held_out_workload_is_caught_too() -> None:
    verdict = _judge(_result([10.0, 5.0, 0.4], [40.0, 20.0, 9.0]), has_incumbent=False)  # floor 1 us
    assert verdict.decision == "REVERT" and "N=250" in verdict.reason


def test_time_just_above_half_the_floor_is_possible_and_floored() -> None:
    # 3 us on N=1000 (floor 4 us) is plausible within noise, but the speedup counts 4 us: 40/4 = 10, not 13.3.
    verdict = _judge(_result([3.0, 5.0, 3.0], [40.0, 20.0, 9.0]), has_incumbent=False)
    assert verdict.decision == "KEEP"
    assert verdict.workloads[0].speedup == pytest.approx(10.0)
    assert verdict.speedup == pytest.approx((10.0 * 4.0) ** 0.5)


def test_without_ceilings_no_floor_applies() -> None:
    verdict = _judge(_result([1.0, 5.0, 3.0], [40.0, 20.0, 9.0]), has_incumbent=False, ceilings=None)
    assert verdict.decision == "KEEP"
    assert verdict.workloads[0].speedup == pytest.approx(40.0)
    assert verdict.workloads[0].sol_score == pytest.approx(40 / 41)


def test_judge_is_deterministic() -> None:
    result = _result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [9.8, 5.0, 3.0])
    assert _judge(result) == _judge(result)


def _noisy(centre: float, spread: float, n: int = 40) -> list[float]:
    """n per-round ratios around centre, evenly spread over +-spread (deterministic)."""
    return [centre - spread + 2 * spread * k / (n - 1) for k in range(n)]


def test_keep_needs_the_whole_interval_beyond_the_margin() -> None:
    base = _result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [10.4, 5.2, 3.0])
    tight, wide = base, _result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [10.4, 5.2, 3.0])
    for w in tight["workloads"][:2]:
        w["paired_ratios"] = _noisy(1.04, 0.01)
    for w in wide["workloads"][:2]:
        w["paired_ratios"] = _noisy(1.04, 0.30)  # same median, but the rounds disagree a lot
    kept, doubtful = _judge(tight), _judge(wide)
    assert kept.decision == "KEEP" and kept.vs_incumbent_interval[0] >= 1.02
    assert doubtful.vs_incumbent == pytest.approx(kept.vs_incumbent)
    assert doubtful.decision == "ACCEPT" and doubtful.vs_incumbent_interval[0] < 1.02
    assert "95% CI" in doubtful.reason


def test_an_incumbent_dropped_in_the_child_is_no_bar() -> None:
    # An incumbent that broke or returned wrong outputs in this child (its timed calls are audited) has no paired
    # times: a correct candidate is kept, and says why, rather than reverted for want of a comparison (an incumbent
    # wrong as the incumbent only would otherwise stand for good).
    result = {**_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0]),
              "incumbent_failure": "incumbent failed during timing on N=1: returned a wrong output"}
    verdict = _judge(result)
    assert verdict.decision == "KEEP" and verdict.correct
    assert "the incumbent was dropped here (incumbent failed during timing" in verdict.reason
    assert _judge(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0])).decision == "REVERT"  # no pairs, no failure


def test_an_incumbent_that_runs_slower_than_it_was_kept_at_is_replaced_by_its_record() -> None:
    # Red team rounds 9 and 10: a module slow as the incumbent only (it told the roles apart) made an honest
    # candidate at a third of its speed a KEEP at "7.7x the incumbent". Where the incumbent runs outside AGREEMENT
    # of the speedup it was kept at, the candidate is compared with that record instead.
    slow_incumbent = _result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [100.0, 50.0, 3.0])  # 0.4x here; kept at 4x
    verdict = judge(ChildResult.model_validate(slow_incumbent), PROBLEM, WORKLOADS, THRESHOLDS, CEILINGS, True,
                    incumbent_speedup=12.0)
    assert verdict.decision == "REVERT" and verdict.vs_incumbent == pytest.approx(4.0 / 12.0)
    assert "the incumbent's recorded speedup (the incumbent ran at 0.40x the reference here" in verdict.reason
    kept = judge(ChildResult.model_validate(slow_incumbent), PROBLEM, WORKLOADS, THRESHOLDS, CEILINGS, True,
                 incumbent_speedup=3.5)  # the candidate, 4x here, beats the record
    assert kept.decision == "KEEP" and kept.vs_incumbent == pytest.approx(4.0 / 3.5)
    # Within AGREEMENT of its record the paired comparison stands, and says so.
    paired = judge(ChildResult.model_validate(_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0], [11.0, 5.5, 3.0])),
                   PROBLEM, WORKLOADS, THRESHOLDS, CEILINGS, True, incumbent_speedup=3.8)
    assert paired.decision == "KEEP" and "95% CI" in paired.reason
    # Dropped (broken, or wrong in its audited calls), the record is the bar too.
    dropped = {**_result([10.0, 5.0, 3.0], [40.0, 20.0, 9.0]), "incumbent_failure": "returned a wrong output"}
    verdict = judge(ChildResult.model_validate(dropped), PROBLEM, WORKLOADS, THRESHOLDS, CEILINGS, True,
                    incumbent_speedup=5.0)
    assert verdict.decision == "REVERT"
    assert "(the incumbent was dropped here (returned a wrong output))" in verdict.reason
