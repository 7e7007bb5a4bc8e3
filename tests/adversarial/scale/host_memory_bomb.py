# ruff: noqa
"""Allocates host memory until something gives: 1 GiB bytearrays (zero-filled, so really resident) up to 64 GiB.
Only safe where the sandbox limits the child's memory (RLIMIT_DATA or a cgroup), when it must end in a MemoryError
verdict instead of the OOM killer picking a victim on the machine. Skipped by default."""

import torch

_CHUNK = 1 << 30


def run(x: torch.Tensor) -> torch.Tensor:
    hoard = []
    for _ in range(64):
        hoard.append(bytearray(_CHUNK))
    return x * 2 + 1
