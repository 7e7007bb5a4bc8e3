"""Device memory an untrusted worker keeps across its calls, seen from the judge.

Native code allocates outside PyTorch's allocator (``cudaMalloc``), where no setting of PyTorch bounds it: a
candidate that allocates on every call and never frees ends up holding the GPU that the reference's, the
incumbent's and the baseline's workers (and any other child on that GPU) share. The judge reads the device's
memory in use before each counted request it sends such a worker and after its reply, and adds up the difference:
what the worker's calls kept. Past a quarter of the device's memory the worker is first told to hand PyTorch's
cache of freed blocks back to the driver (what that gives back counts as freed: torch.compile's autotuning leaves
gigabytes there), and lost, with the reason, if it is still past it.

What is read is the whole device's (``cudaMemGetInfo``), so whatever other processes allocate during a counted
request counts too. So only the requests of a workload's steady state count (``counts``): its timed blocks after
the warm-up block, their audits and trims. By then every role has met the workload's shapes, and an honest
process's allocator reuses what it holds, while the judge visits the roles one at a time; in the checks before,
the reference's, the baseline's and the judge's first allocations for a case run beside the candidate's call, and
a KernelBench problem with 8 GiB inputs (47_Sum_reduction_over_a_dimension) made them 32 GiB there on an H100,
past the limit, for an honest seed. A leak grows with the calls, and the timed blocks are most of them; memory
grabbed once in the checks and kept only takes what the others need next, and a role that then fails for want of
it fails the candidate's judgement (the reference's, the harness's) or drops itself with the reason said (the
incumbent's: the candidate is then held to the incumbent's record; a baseline route's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

LEAK_FRACTION = 0.25  # of the device's memory: a leak's whole harm is to take what the others need
_GIB = 1 << 30


@dataclass
class DeviceMemoryWatch:
    """One worker's account: what its calls left allocated on the device, net, since the watch began."""

    in_use: Callable[[], int]  # the device's bytes in use now
    limit: int  # bytes the worker's calls may keep
    kept: int = 0
    _before: int | None = field(default=None, repr=False)

    def before_request(self, command: Mapping[str, Any]) -> None:
        self._before = self.in_use() if counts(command) else None

    def after_reply(self, held: int = 0) -> str | None:
        """Why the worker is lost once its calls have kept more than the limit; None while they have not. ``held``:
        the bytes its harness keeps for the judge's audit (held calls' inputs and outputs, as its reply says), which
        are not the module's to free: a 6 GB output held for four calls is no leak."""
        if self._before is None:
            return None
        self.kept += self.in_use() - self._before
        self._before = None
        if self.kept - held <= self.limit:
            return None
        of_it = f", {held / _GIB:.1f} GiB of it held for the audit" if held else ""
        return (f"kept {self.kept / _GIB:.1f} GiB more device memory after its calls than before them{of_it} (limit "
                f"{self.limit / _GIB:.1f} GiB, a quarter of the device's): memory it never frees, which the "
                f"other roles on this GPU need")


def counts(command: Mapping[str, Any]) -> bool:
    """Whether a request's device memory counts: a workload's steady state only (see the module's docstring)."""
    op = command.get("op")
    return op in ("audit", "trim") or (op == "time" and not command.get("warm"))


def watch(device: torch.device) -> DeviceMemoryWatch | None:
    """A watch for one worker on ``device``; None off the GPU (host memory has its own limit)."""
    if device.type != "cuda":
        return None

    def in_use() -> int:
        free, total = torch.cuda.mem_get_info(device)
        return total - free

    total = torch.cuda.mem_get_info(device)[1]
    return DeviceMemoryWatch(in_use, int(total * LEAK_FRACTION))
