"""Destination-passing candidates (run(*inputs, *outputs), FlashInfer-Bench's default): the worker allocates the
outputs fresh for every call, from the reference's shapes and dtypes, and a candidate that returns instead of
writing, writes nothing, or swaps the outputs' storage fails. Judged by a real child process on the CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from arcengine.guard.child import destinations
from tests.guard.test_child import FAST_TIMING, WORKLOADS, _assert_fails
from tests.guard.test_child import _evaluate as _evaluate_all

TWO_OUTPUTS = """
import torch

def make_inputs(axes, generator, device):
    return (torch.randn(axes["M"], axes["N"], generator=generator, device=device),)

def run(x):
    return x * 2, (x > 0).to(torch.int32)
"""


def _evaluate(tmp_path: Path, candidate: str, **spec: Any) -> dict[str, Any]:
    """One workload is enough here: what is checked is per call."""
    return _evaluate_all(tmp_path, candidate, workloads=WORKLOADS[:1], **spec)


def test_a_destination_passing_candidate_writes_into_its_outputs_and_passes(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x, out):\n    out.copy_(x * 2)\n", destination_passing=True)
    assert result["ok"] and result["correct"], result["failure"]
    assert all(w["time_us"] > 0 for w in result["workloads"])  # timed calls were judged on what they wrote


def test_each_output_of_a_tuple_is_passed_in_order(tmp_path: Path) -> None:
    candidate = "import torch\n\ndef run(x, y, positive):\n    torch.mul(x, 2, out=y)\n    positive.copy_(x > 0)\n"
    result = _evaluate(tmp_path, candidate, reference=TWO_OUTPUTS, destination_passing=True,
                       incumbent="def run(x, y, positive):\n    y.copy_(x + x)\n    positive.copy_(x > 0)\n")
    assert result["ok"] and result["correct"], result["failure"]
    swapped = "def run(x, y, positive):\n    positive.copy_(x > 0)\n    y.copy_(x * 3)\n"
    _assert_fails(_evaluate(tmp_path, swapped, reference=TWO_OUTPUTS, destination_passing=True), "output 0")


def test_returning_instead_of_writing_fails_with_the_reason(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x, out):\n    return x * 2\n", destination_passing=True)
    _assert_fails(result, "returned Tensor instead of None", "output tensor(s) passed after its inputs")


def test_a_value_returning_candidate_is_not_taken_for_one(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    return x * 2\n", destination_passing=True)
    _assert_fails(result, "TypeError")


def test_outputs_are_fresh_and_unwritten_elements_show(tmp_path: Path) -> None:
    """Writes its first call only: a later call (the same inputs again, for determinism) that trusted its output
    to hold the earlier answer finds NaN there, as would a kernel that leaves a tail unwritten."""
    once = """
    done = []

    def run(x, out):
        if not done:
            out.copy_(x * 2)
        done.append(1)
    """
    _assert_fails(_evaluate(tmp_path, once, destination_passing=True), "nondeterministic")
    tail = "def run(x, out):\n    out[:, :-1].copy_(x[:, :-1] * 2)\n"
    _assert_fails(_evaluate(tmp_path, tail, destination_passing=True), "NaN positions differ")


def test_swapping_in_other_storage_is_no_write(tmp_path: Path) -> None:
    swap = "def run(x, out):\n    out.set_(x * 2)\n"
    _assert_fails(_evaluate(tmp_path, swap, destination_passing=True), "moved to other storage")


def test_timed_calls_are_judged_on_what_they_wrote(tmp_path: Path) -> None:
    """Right on every correctness call, silent from then on: the audit of the timed block (its last call always)
    finds the output as the worker filled it."""
    lazy = """
    calls = [0]

    def run(x, out):
        calls[0] += 1
        if calls[0] <= 6:
            out.copy_(x * 2)
    """
    result = _evaluate(tmp_path, lazy, destination_passing=True, timing={**FAST_TIMING, "block": 3})
    _assert_fails(result, "NaN positions differ")
    assert result["stage"] == "timing"


def test_allocated_outputs_read_as_nan_or_minus_one_until_written() -> None:
    described = destinations.describe((torch.zeros(2, 3, dtype=torch.bfloat16), torch.zeros(4, dtype=torch.int64),
                                       torch.zeros((), dtype=torch.float8_e4m3fn)))
    assert isinstance(described, dict) and described["single"] is False
    assert described["tensors"][0] == {"shape": [2, 3], "dtype": "bfloat16"}
    first, second = destinations.allocate(described, torch.device("cpu")), destinations.allocate(
        described, torch.device("cpu"))
    assert torch.isnan(first[0]).all() and (first[1] == -1).all() and torch.isnan(first[2].float())
    assert [t.shape for t in first] == [torch.Size([2, 3]), torch.Size([4]), torch.Size([])]
    assert all(a.data_ptr() != b.data_ptr() for a, b in zip(first, second, strict=True))
    assert destinations.describe(3.0) == "the reference's output 0 is float, not a tensor a candidate could write into"
