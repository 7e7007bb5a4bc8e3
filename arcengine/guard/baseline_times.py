"""The baseline's times in a campaign: what a user would otherwise run, measured beside the reference.

A child that times the baseline (see arcengine.guard.baselines) does so in the same interleaved rounds as the
reference and the candidate, so its ratio to each is paired. Compiling every route for every workload in every
child would cost more than judging the candidate, so by default (``once``) a campaign times the baseline in its
first child on each GPU and keeps, per workload, the fastest route's time and the reference's time beside it.
A later child then reads its candidate's gain over the baseline through the reference it times itself:
baseline/candidate = (reference/candidate, paired here) x (baseline/reference, paired there). That holds only
while the reference runs as it did then: each child's reference must agree with the kept one within the noise,
or the kept times are dropped and the next child times the baseline again (``every`` times it in every child).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

BaselineMode = Literal["once", "every", "off"]
BASELINE_MODES: tuple[BaselineMode, ...] = ("once", "every", "off")
# Two children's medians of the same reference differ by a few percent (allocation, clocks) beyond their
# standard errors; within this, or three combined standard errors if more, they agree.
DRIFT = 0.05
REFERENCE_ROUTE = "reference"  # the baseline's name where none is declared, or none of its routes was correct


@dataclass(frozen=True)
class BaselineTime:
    """A workload's baseline as one child measured it: the fastest correct route, and the reference beside it."""

    route: str
    time_us: float
    ref_time_us: float
    ref_rel_se: float = 0.0

    def agrees(self, ref_time_us: float | None, ref_rel_se: float | None) -> bool:
        """Whether another child's reference ran as this one's did (within the noise)."""
        if not ref_time_us or ref_time_us <= 0:
            return False
        noise = max(DRIFT, 3 * math.hypot(self.ref_rel_se, ref_rel_se or 0.0))
        return abs(math.log(ref_time_us / self.ref_time_us)) <= math.log1p(noise)


def measured(workloads: Sequence[Mapping[str, Any]]) -> dict[int, BaselineTime]:
    """The baseline times a child's result holds, per workload index."""
    found = {}
    for entry in workloads:
        route, time_us, ref_us = entry.get("baseline_route"), entry.get("baseline_time_us"), entry.get("ref_time_us")
        if route and time_us and ref_us:
            found[int(entry["index"])] = BaselineTime(str(route), float(time_us), float(ref_us),
                                                      float(entry.get("ref_rel_se") or 0.0))
    return found


class BaselineCache:
    """Per GPU (None: the CPU), the baseline times later children read theirs through."""

    def __init__(self, mode: BaselineMode, declared: bool) -> None:
        self.mode = mode
        self.declared = declared  # routes exist for this device: otherwise the reference is the baseline
        self._kept: dict[int | None, dict[int, BaselineTime]] = {}

    def wanted(self, gpu: int | None) -> bool:
        """Whether the next child on ``gpu`` times the baseline itself."""
        if not self.declared or self.mode == "off":
            return False
        return self.mode == "every" or gpu not in self._kept

    def kept(self, gpu: int | None) -> dict[int, BaselineTime]:
        return self._kept.get(gpu, {})

    def learn(self, gpu: int | None, workloads: Sequence[Mapping[str, Any]], timed: bool) -> None:
        """After a child: keep what it measured, or drop the kept times if its reference no longer agrees."""
        if timed:
            found = measured(workloads)
            if found:
                self._kept[gpu] = found
            return
        kept = self._kept.get(gpu, {})
        for entry in workloads:
            time = kept.get(int(entry["index"]))
            if time is not None and entry.get("ref_time_us") and not time.agrees(
                    entry.get("ref_time_us"), entry.get("ref_rel_se")):
                self._kept.pop(gpu, None)  # the next child on this GPU times the baseline again
                return
