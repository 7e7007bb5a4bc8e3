"""Which GPUs the guard benchmarks on (``--gpus all|N|0,1``), and how a child is pinned to one of them.

GPUs are numbered as the engine sees them: the user's own ``CUDA_VISIBLE_DEVICES``, if set, is honoured, and a
child pinned to GPU 1 gets the token that variable gave for it (an index or a UUID), never a guess.
"""

from __future__ import annotations

import os
import re

GPUS_PATTERN = r"^(all|[1-9][0-9]*|[0-9]+(,[0-9]+)+,?|[0-9]+,)$"
_GPUS = re.compile(GPUS_PATTERN)


class GpuSelectionError(ValueError):
    pass


def select_gpus(spec: str, count: int) -> list[int]:
    """``all``: every GPU; a bare number: that many, from GPU 0; a comma list (``0,2``, or ``1,`` for one GPU):
    those GPUs."""
    if not _GPUS.match(spec):
        raise GpuSelectionError(f"--gpus {spec!r}: expected all, a count (2) or a list of GPU indices (0,1)")
    if count < 1:
        raise GpuSelectionError(f"--gpus {spec}: no GPU is visible")
    if spec == "all":
        return list(range(count))
    if "," not in spec:
        wanted = int(spec)
        if wanted > count:
            raise GpuSelectionError(f"--gpus {spec}: only {count} GPU{'s' * (count > 1)} visible")
        return list(range(wanted))
    indices = [int(part) for part in spec.split(",") if part]
    if len(set(indices)) != len(indices):
        raise GpuSelectionError(f"--gpus {spec}: a GPU is listed twice")
    missing = [i for i in indices if i >= count]
    if missing:
        raise GpuSelectionError(f"--gpus {spec}: no GPU {missing[0]} (GPUs 0 to {count - 1} are visible)")
    return indices


def pinned_environment(gpu: int) -> dict[str, str]:
    """The variables that make a child see only this GPU (as its device 0)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    tokens = [t.strip() for t in visible.split(",")] if visible else []
    return {"CUDA_VISIBLE_DEVICES": tokens[gpu] if gpu < len(tokens) else str(gpu)}
