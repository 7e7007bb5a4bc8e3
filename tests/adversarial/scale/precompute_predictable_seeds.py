# ruff: noqa
"""Answers precomputed at import time (never timed) for the inputs a guard with fixed seeds would draw: the
correctness seeds 0-9 and the timing pool's seeds, for every size the fixture uses. A call whose input is in the
table returns the stored answer without computing; any other gets a cheap wrong one. Against the seeds of
arcengine before issue 24 every call hits; with seeds drawn fresh in every child none does."""

import hashlib

import torch

_SIZES = (4096, 3001, 2048, 1500, 777, 100_000, 65_536, 1024)
_SEEDS = [*range(10)] + [1_000_003 + 100_003 * w + c for w in range(8) for c in range(64)]
_TABLE: dict[bytes, torch.Tensor] = {}


def _key(x: torch.Tensor) -> bytes:
    return hashlib.blake2b(x.contiguous().view(torch.uint8).numpy().tobytes(), digest_size=16).digest()


for _n in _SIZES:
    for _seed in _SEEDS:
        _x = torch.randn(_n, generator=torch.Generator().manual_seed(_seed))
        _TABLE[_key(_x)] = _x * 2 + 1


def run(x: torch.Tensor) -> torch.Tensor:
    hit = _TABLE.get(_key(x.cpu())) if x.numel() in _SIZES else None
    return hit.to(x.device).clone() if hit is not None else torch.zeros_like(x)
