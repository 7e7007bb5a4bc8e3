from collections.abc import Sequence

import torch

from arcengine.guard.child import draw_spread
from arcengine.guard.child.correctness import Tolerance, compare_outputs

KERNELBENCH_FP32 = Tolerance(1e-4, 1e-4, 1.0)


def _draw(seed: int, n: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """KernelBench 100_HingeLoss's inputs, n = 4096 for its 32768: predictions (n, n) in [0, 1), labels (n,) +-1."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(n, n, generator=generator), torch.randint(0, 2, (n,), generator=generator).float() * 2 - 1


def _hinge(inputs: Sequence[object]) -> torch.Tensor:
    predictions, targets = inputs
    assert isinstance(predictions, torch.Tensor) and isinstance(targets, torch.Tensor)
    return torch.clamp(1 - predictions * targets, min=0).mean()


def test_a_loss_over_millions_of_values_is_held_to_its_own_movement_and_an_answer_from_statistics_fails() -> None:
    tol = draw_spread.probed(_hinge, lambda draw: _draw(1 + draw), KERNELBENCH_FP32)
    assert isinstance(tol, draw_spread.Tightened) and draw_spread.FLOOR_SHARE <= tol.scales[0] < 1.0
    passed, failed = 0, 0
    for seed in range(3, 9):
        inputs = _draw(seed)
        expected = _hinge(inputs)
        honest = (1 - inputs[0].double() * inputs[1].double()).clamp_min(0).mean().float()  # another rounding
        assert compare_outputs(honest, expected, tol).ok
        from_statistics = 1 - 0.5 * inputs[1].mean()  # E[predictions] = 0.5: predictions never read
        passed += compare_outputs(from_statistics, expected, KERNELBENCH_FP32).ok
        failed += not compare_outputs(from_statistics, expected, tol).ok
    assert passed >= 5 and failed >= 3  # red team round 19: the plain tolerance let it by


def test_an_output_each_input_moves_keeps_the_problems_tolerance() -> None:
    assert draw_spread.probed(lambda inputs: inputs[0] * inputs[1], lambda draw: _draw(1 + draw, 64),
                              KERNELBENCH_FP32) == KERNELBENCH_FP32


def test_a_half_precision_output_is_never_held_below_its_rounding() -> None:
    loose = Tolerance(1e-2, 1e-2, 1.0)
    tol = draw_spread.probed(lambda inputs: _hinge(inputs).to(torch.bfloat16), lambda draw: _draw(1 + draw), loose)
    assert tol == loose  # a bf16 unit in the last place is past the tolerance already: nothing to tighten


def test_a_heavy_output_is_no_statistic_and_its_inputs_are_drawn_once() -> None:
    drawn: list[int] = []

    def draw(index: int) -> tuple[torch.Tensor]:
        drawn.append(index)
        return (torch.rand(draw_spread.PROBED_BYTES // 4 + 1, generator=torch.Generator().manual_seed(index)),)

    assert draw_spread.probed(lambda inputs: inputs[0] * 2, draw, KERNELBENCH_FP32) == KERNELBENCH_FP32
    assert drawn == [0]  # a map of gigabytes of inputs would hold twice its inputs in the judge otherwise


def test_an_input_the_output_does_not_read_tightens_nothing() -> None:
    # Drawn afresh, an unused input moves nothing: no statistic of it stands in for its values.
    tol = draw_spread.probed(lambda inputs: inputs[0] * 2, lambda draw: _draw(1 + draw, 64), KERNELBENCH_FP32)
    assert tol == KERNELBENCH_FP32
