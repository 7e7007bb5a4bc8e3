"""The guard as a campaign sees it: the one interface the engine, ``eval`` and replay talk to.

``GuardService`` (service.py) is the real one: the gate, the queue, a worker per device and guard children. The
stand-ins implement the same interface: ``StubGuard`` (engine/testing.py) decides from a candidate's stated
speed, ``RecordedGuard`` (tools/replay.py) answers from a recorded campaign.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import anyio

from arcengine.domain.events import CandidateDecided, DeviceProfiled
from arcengine.domain.problem import Workload
from arcengine.guard.service import Slot


class Guard(Protocol):
    device: str  # "cuda" or "cpu", once profiled
    slots: list[Slot]  # one per worker (a GPU, or the CPU), once profiled

    @property
    def workloads(self) -> list[Workload]:
        """The problem's workloads on this device, held-out ones included."""
        ...

    async def profile(self, requested: str, gpus: str | None = None) -> list[DeviceProfiled]:
        """Choose the device ('auto': the GPU if there is one) and the GPUs, measure them, publish the profiles."""
        ...

    async def work(self) -> None:
        """Judge what is submitted, until cancelled."""
        ...

    async def submit(self, *, candidate_id: str, agent_id: str, source: str, candidate_path: Path,
                     incumbent_path: Path | None, written: anyio.Event | None = None) -> CandidateDecided:
        """Judge one candidate against its incumbent (None: the seed); returns the published decision."""
        ...

    async def refuse(self, *, candidate_id: str, agent_id: str, reason: str) -> CandidateDecided:
        """A position that brought no candidate: a REJECT, published."""
        ...
