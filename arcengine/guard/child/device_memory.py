"""Device memory an untrusted worker keeps across its calls, seen from the judge.

Native code allocates outside PyTorch's allocator (``cudaMalloc``), where no setting of PyTorch bounds it: a
candidate that allocates on every call and never frees ends up holding the GPU that the reference's, the
incumbent's and the baseline's workers (and any other child on that GPU) share. The judge reads the device's
memory in use before each request it sends such a worker and after its reply, and adds up the difference: what
the worker's calls kept. Past a quarter of the device's memory the worker is first told to hand PyTorch's cache of
freed blocks back to the driver (what that gives back counts as freed: torch.compile's autotuning leaves gigabytes
there), and lost, with the reason, if it is still past it.

What is read is the whole device's (``cudaMemGetInfo``), so allocations by other processes during the worker's
calls count too: the judge's own reference runs and the next child's loading in a campaign. Those are bounded by
a problem's working set and a few CUDA contexts, far under the limit; a leak is not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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

    def before_request(self) -> None:
        self._before = self.in_use()

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


def watch(device: torch.device) -> DeviceMemoryWatch | None:
    """A watch for one worker on ``device``; None off the GPU (host memory has its own limit)."""
    if device.type != "cuda":
        return None

    def in_use() -> int:
        free, total = torch.cuda.mem_get_info(device)
        return total - free

    total = torch.cuda.mem_get_info(device)[1]
    return DeviceMemoryWatch(in_use, int(total * LEAK_FRACTION))
