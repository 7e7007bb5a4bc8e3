# ruff: noqa
"""Allocates host memory until something gives: 1 GiB bytearrays (zero-filled, so really resident) up to 64 GiB.
The guard must kill it at its host-memory limit, before the kernel's OOM killer picks a victim on the machine."""

import torch

_CHUNK = 1 << 30


def run(x: torch.Tensor) -> torch.Tensor:
    hoard = []
    for _ in range(64):
        hoard.append(bytearray(_CHUNK))
    return x * 2 + 1
