"""arcengine/guard/sol.py: roofline floor, SOL score, geometric mean (worked numbers by hand)."""

from __future__ import annotations

import math

import pytest

from arcengine.guard.sol import geometric_mean, roofline_seconds, sol_score


def test_roofline_compute_bound() -> None:
    # 2e12 flops at 1e15 flop/s = 2 ms; 1e9 bytes at 4e12 B/s = 0.25 ms -> the slower: 2 ms.
    assert roofline_seconds(2e12, 1e9, 1e15, 4e12) == pytest.approx(2e-3)


def test_roofline_memory_bound() -> None:
    # 1e9 flops at 1e15 = 1 us; 4e9 bytes at 4e12 B/s = 1 ms -> 1 ms.
    assert roofline_seconds(1e9, 4e9, 1e15, 4e12) == pytest.approx(1e-3)


def test_roofline_ignores_an_unknown_ceiling() -> None:
    assert roofline_seconds(1e9, 4e9, 0.0, 4e12) == pytest.approx(1e-3)
    assert roofline_seconds(1e9, 4e9, 1e12, 0.0) == pytest.approx(1e-3)
    assert roofline_seconds(1e9, 4e9, 0.0, 0.0) == 0.0


def test_sol_score_half_at_the_baseline_one_at_the_floor() -> None:
    assert sol_score(10.0, 10.0, 2.0) == pytest.approx(0.5)
    assert sol_score(2.0, 10.0, 2.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("t_kernel", "expected"),
    [
        (6.0, 2 / 3),  # 1 / (1 + (6 - 2) / (10 - 2)) = 1 / 1.5
        (18.0, 1 / 3),  # 1 / (1 + 16 / 8) = 1 / 3
        (4.0, 0.8),  # 1 / (1 + 2 / 8) = 0.8
    ],
)
def test_sol_score_worked_numbers(t_kernel: float, expected: float) -> None:
    assert sol_score(t_kernel, 10.0, 2.0) == pytest.approx(expected)


def test_sol_score_without_a_floor() -> None:
    # t_sol = 0: S = 1 / (1 + t_k / t_b) = t_b / (t_b + t_k); 30 us vs a 10 us baseline -> 0.25.
    assert sol_score(30.0, 10.0, 0.0) == pytest.approx(0.25)


def test_sol_score_decreases_with_time() -> None:
    scores = [sol_score(t, 10.0, 2.0) for t in (2.0, 3.0, 5.0, 10.0, 20.0, 100.0)]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)


def test_sol_score_when_the_baseline_is_at_the_floor() -> None:
    # Nothing can beat the baseline: matching it is 1, twice as slow is 0.5 * 2 / 4 = 0.25.
    assert sol_score(2.0, 2.0, 3.0) == 1.0
    assert sol_score(4.0, 2.0, 3.0) == pytest.approx(0.25)
    assert sol_score(4.0, 2.0, 2.0) == pytest.approx(0.25)


def test_geometric_mean_worked_numbers() -> None:
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    assert geometric_mean([1.5]) == pytest.approx(1.5)
    assert geometric_mean(v for v in (1.0, 10.0, 100.0)) == pytest.approx(10.0)  # any iterable


def test_geometric_mean_of_nothing_is_nan() -> None:
    assert math.isnan(geometric_mean([]))
