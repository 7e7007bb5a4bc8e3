"""Device memory an untrusted worker keeps across its calls, seen from the judge.

Native code allocates outside PyTorch's allocator (``cudaMalloc``), where no setting of PyTorch bounds it: a
candidate that allocates on every call and never frees ends up holding the GPU that the reference's, the
incumbent's and the baseline's workers (and any other child on that GPU) share. The judge reads the device's
memory in use before each request it sends such a worker and after its reply, and adds up the difference: what
the worker's calls kept. Past a quarter of the device's memory the worker is first told to hand PyTorch's
cache of freed blocks back to the driver (what that gives back counts as freed: torch.compile's autotuning leaves
gigabytes there), and lost, with the reason, if it is still past it.

What is read is the whole device's (``cudaMemGetInfo``), so whatever other processes allocate during a counted
request counts too. So only the requests of a workload's steady state count (``counts``): its timed blocks after
the warm-up block, their audits and trims. By then every role has met the workload's shapes, and an honest
process's allocator reuses what it holds, while the judge visits the roles one at a time; in the checks before,
the reference's, the baseline's and the judge's first allocations for a case run beside the candidate's call, and
a KernelBench problem with 8 GiB inputs (47_Sum_reduction_over_a_dimension) made them 32 GiB there on an H100,
past the limit, for an honest seed. A leak grows with the calls, and the timed blocks are most of them. Over every
request, the checks' included, the limit is three quarters of the device: memory grabbed once and kept past that
would leave the next child on this GPU (a campaign prepares one while another is timed) too little to load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

LEAK_FRACTION = 0.25  # of the device's memory, over a workload's steady state: a leak takes what the others need
HOG_FRACTION = 0.75  # of it, over every request: the others' first allocations count there too (see above)
_GIB = 1 << 30


@dataclass
class DeviceMemoryWatch:
    """One worker's account: what its calls left allocated on the device, net, since the watch began: over its
    steady-state requests (``kept``, against ``limit``) and over all of them (``kept_all``, against ``hog_limit``:
    memory grabbed once in the checks and kept would take what the next child on this GPU needs)."""

    in_use: Callable[[], int]  # the device's bytes in use now
    limit: int  # bytes the worker's steady-state calls may keep
    hog_limit: int  # bytes all its calls may keep
    kept: int = 0
    kept_all: int = 0
    _before: int | None = field(default=None, repr=False)
    _counted: bool = field(default=False, repr=False)

    def before_request(self, command: Mapping[str, Any]) -> None:
        self._before, self._counted = self.in_use(), counts(command)

    def after_reply(self, held: int = 0) -> str | None:
        """Why the worker is lost once its calls have kept more than a limit; None while they have not. ``held``:
        the bytes its harness keeps for the judge's audit (held calls' inputs and outputs, as its reply says), which
        are not the module's to free: a 6 GB output held for four calls is no leak."""
        if self._before is None:
            return None
        change, self._before = self.in_use() - self._before, None
        self.kept_all += change
        self.kept += change if self._counted else 0
        for kept, limit, share, calls in ((self.kept, self.limit, "a quarter", "its timed calls"),
                                          (self.kept_all, self.hog_limit, "three quarters", "its calls")):
            if kept - held > limit:
                of_it = f", {held / _GIB:.1f} GiB of it held for the audit" if held else ""
                return (f"kept {kept / _GIB:.1f} GiB more device memory after {calls} than before them{of_it} (limit "
                        f"{limit / _GIB:.1f} GiB, {share} of the device's): memory it never frees, which the other "
                        f"roles on this GPU need")
        return None


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
    return DeviceMemoryWatch(in_use, int(total * LEAK_FRACTION), int(total * HOG_FRACTION))
