"""The baseline's times in a campaign: what a user would otherwise run, measured beside the reference.

A child that times the baseline (see arcengine.guard.child.baselines) does so in the same interleaved rounds as the
reference and the candidate, so its ratio to each is paired. Compiling every route for every workload in every
child would cost more than judging the candidate, so by default (``once``) a campaign times the baseline in its
first child on each GPU and keeps, per workload, the fastest route's time and the reference's time beside it.
A later child then reads its candidate's gain over the baseline through the reference it times itself:
baseline/candidate = (reference/candidate, paired here) x (baseline/reference, paired there). That holds only
while the reference runs as it did then: each child's reference must agree with the kept one within the noise,
or the kept times are dropped and the next child times the baseline again (``every`` times it in every child).
"Within the noise" is two tests (see ``chain_holds``): over the workloads, the reference moved by under DRIFT (per
device) on the whole, and on each workload by under OUTLIER (each, or three standard errors where those are
larger). On an H200 two children's medians of a 20 us reference differ by up to 5% while those of 200 us and more
agree within 1% (a campaign's 25 children): one workload at 5% is the noise of small kernels, all of them at 5% is
the device.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from arcengine.guard.contract import WorkloadOutcome

BaselineMode = Literal["once", "every", "off"]
BASELINE_MODES: tuple[BaselineMode, ...] = ("once", "every", "off")
# The reference's geometric mean move over the workloads beyond which the kept times are stale, per device: two
# H200 children agree within 5% (see above); two children on a two-core CPU machine move by 10% together.
DRIFT = {"cuda": 0.05, "cpu": 0.15}
OUTLIER = 0.15  # one workload's move (or three combined standard errors, if more) beyond which they are too


@dataclass(frozen=True)
class BaselineTime:
    """A workload's baseline as one child measured it: the fastest correct route, and the reference beside it."""

    route: str
    time_us: float
    ref_time_us: float
    ref_rel_se: float = 0.0

    def drift(self, ref_time_us: float | None) -> float | None:
        """The log ratio of another child's reference time to this one's (None: no time to compare)."""
        if not ref_time_us or ref_time_us <= 0:
            return None
        return math.log(ref_time_us / self.ref_time_us)

    def agrees(self, ref_time_us: float | None, ref_rel_se: float | None) -> bool:
        """Whether another child's reference ran as this one's did on this workload (within its noise)."""
        moved = self.drift(ref_time_us)
        noise = max(OUTLIER, 3 * math.hypot(self.ref_rel_se, ref_rel_se or 0.0))
        return moved is not None and abs(moved) <= math.log1p(noise)


def chain_holds(kept: Mapping[int, BaselineTime], workloads: Sequence[WorkloadOutcome],
                drift: float = DRIFT["cuda"]) -> bool:
    """Whether a child's references agree with those timed beside the kept baseline: each workload within its
    noise, and all of them together within ``drift`` (no kept times: nothing to contradict)."""
    drifts, variances = [], []
    for entry in workloads:
        time = kept.get(entry.index)
        if time is None or not entry.ref_time_us:
            continue
        if not time.agrees(entry.ref_time_us, entry.ref_rel_se):
            return False
        drifts.append(time.drift(entry.ref_time_us) or 0.0)
        variances.append(time.ref_rel_se ** 2 + (entry.ref_rel_se or 0.0) ** 2)
    if not drifts:
        return True
    # Within a child the standard errors are small; between children the same reference moves by about as much as
    # one workload's error (a noisy CPU: several percent), so the allowance is three typical errors, not the mean's.
    noise = max(drift, 3 * math.sqrt(math.fsum(variances) / len(variances)))
    return abs(math.fsum(drifts) / len(drifts)) <= math.log1p(noise)


def measured(workloads: Sequence[WorkloadOutcome]) -> dict[int, BaselineTime]:
    """The baseline times a child's result holds, per workload index."""
    return {entry.index: BaselineTime(entry.baseline_route, entry.baseline_time_us, entry.ref_time_us,
                                      entry.ref_rel_se or 0.0)
            for entry in workloads if entry.baseline_route and entry.baseline_time_us and entry.ref_time_us}


class BaselineCache:
    """Per GPU (None: the CPU), the baseline times later children read theirs through."""

    def __init__(self, mode: BaselineMode, declared: bool, device: str = "cuda") -> None:
        self.mode = mode
        self.declared = declared  # routes exist for this device: otherwise the reference is the baseline
        self.drift = DRIFT.get(device, DRIFT["cpu"])
        self._kept: dict[int | None, dict[int, BaselineTime]] = {}

    def wanted(self, gpu: int | None) -> bool:
        """Whether the next child on ``gpu`` times the baseline itself."""
        if not self.declared or self.mode == "off":
            return False
        return self.mode == "every" or gpu not in self._kept

    def kept(self, gpu: int | None) -> dict[int, BaselineTime]:
        return self._kept.get(gpu, {})

    def learn(self, gpu: int | None, workloads: Sequence[WorkloadOutcome], timed: bool) -> None:
        """After a child: keep what it measured, or drop the kept times if its reference no longer agrees."""
        if timed:
            found = measured(workloads)
            if found:
                self._kept[gpu] = found
            return
        if not chain_holds(self._kept.get(gpu, {}), workloads, self.drift):
            self._kept.pop(gpu, None)  # the next child on this GPU times the baseline again
