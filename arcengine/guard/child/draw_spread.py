"""Tolerances for outputs that an input's values barely move.

Where an output is a statistic of many independent values (a mean loss over 67 million elements), it hardly moves
when one input is drawn afresh: an answer made from that input's known statistics, or from a sample of it, lands
within the problem's tolerance without reading most of it (red team rounds 18 and 19: KernelBench's hinge, MSE
and cross-entropy losses at 80-2400x, the last ones computing honestly only on draws they recognised as reshaped).
No reshaping of the draw closes that: the check has to be finer than the output's own movement. So the judge runs
the reference on a draw of the workload's inputs and again with each floating-point input replaced by one of a
second draw (draws no role sees), and where an output moves by less than its tolerance, its tolerance shrinks to
a share of the least movement: the answer has to follow every input's values. Never below a share of the
problem's tolerance or a few units in the last place of the output's dtype, so an honest kernel's rounding (another
summation order) stays well inside. Imports: the standard library and torch, as for the child.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from arcengine.guard.child.correctness import Tolerance, output_tensors, tensor_bytes

PROBED_BYTES = 4 << 20  # outputs heavier than this are maps of the inputs, not statistics: not probed
SPREAD_SHARE = 0.25  # an output's tolerance is at most this share of how far an input's fresh draw moves it
FLOOR_SHARE = 0.1  # ... and at least this share of the problem's tolerance
ROUNDING_ULPS = 4  # ... and at least this many units in the last place of the output's dtype
# How far an output moved, over its elements: a high quantile, as an input of few values (labels of +-1) drawn afresh
# leaves many elements of an elementwise map where they were, and a statistic's elements all move alike.
MOVED_QUANTILE = 0.9


@dataclass(frozen=True)
class Tightened(Tolerance):
    """A problem's tolerance with a share of it per output (the engine's spec knows none: the judge makes it)."""

    scales: tuple[float, ...] = ()

    def for_output(self, index: int) -> Tolerance:
        if index >= len(self.scales) or self.scales[index] >= 1.0:
            return Tolerance(self.atol, self.rtol, self.matched_ratio)
        share = self.scales[index]
        return Tolerance(self.atol * share, self.rtol * share, self.matched_ratio)


def probed(reference: Callable[[Sequence[object]], object], draw: Callable[[int], Sequence[object]],
           tol: Tolerance) -> Tolerance:
    """``tol`` with a share per output (Tightened.scales): the reference run on ``draw(0)``, and on it with each
    floating-point input taken from ``draw(1)`` (a mix the reference refuses tells nothing). The second draw is
    made only for outputs light enough to be statistics: a map's inputs can weigh gigabytes."""
    first = draw(0)
    base = _outputs(reference(first))
    if tensor_bytes(output_tensors(base)) > PROBED_BYTES:
        return tol
    second = draw(1)
    shares = [1.0] * len(base)
    for k, fresh in enumerate(second):
        if not (isinstance(fresh, torch.Tensor) and fresh.is_floating_point()):
            continue
        try:
            moved = _outputs(reference((*first[:k], fresh, *first[k + 1:])))
        except Exception:  # inputs the op relates to each other: this one cannot be drawn alone
            continue
        if len(moved) == len(base):
            shares = [min(share, _share(a, b, tol)) for share, a, b in zip(shares, base, moved, strict=True)]
    if all(share >= 1.0 for share in shares):
        return tol
    return Tightened(tol.atol, tol.rtol, tol.matched_ratio, tuple(shares))


def _outputs(out: object) -> tuple[object, ...]:
    return tuple(out) if isinstance(out, tuple | list) else (out,)


def _share(before: object, after: object, tol: Tolerance) -> float:
    """The share of ``tol`` one output keeps: 1.0 unless it moved by less than its tolerance."""
    if not (isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor) and before.is_floating_point()
            and before.numel() > 0 and after.shape == before.shape):
        return 1.0
    a, b = before.detach().float(), after.detach().float()
    moved = (a - b).abs()
    eps = torch.finfo(before.dtype).eps
    if not bool((moved > ROUNDING_ULPS * eps * a.abs()).any()):
        return 1.0  # an input the output does not read (or within rounding): nothing to say of its statistics
    ratio = moved / (tol.atol + tol.rtol * a.abs()).clamp_min(1e-30)
    ratio = ratio[torch.isfinite(ratio)]
    if ratio.numel() == 0:
        return 1.0
    floor = min(1.0, max(FLOOR_SHARE, ROUNDING_ULPS * eps / max(tol.rtol, tol.atol, 1e-30)))
    return min(1.0, max(floor, SPREAD_SHARE * float(ratio.quantile(MOVED_QUANTILE).item())))
