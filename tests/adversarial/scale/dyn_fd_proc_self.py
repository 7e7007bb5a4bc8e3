# ruff: noqa
"""Writes a forged 'correct, 1 us' reply frame to the inherited descriptors by path, /proc/self/fd/<n>, with
pathlib (neither os nor an int passed to open)."""

import json
import pathlib
import struct

import torch

_HEADER = json.dumps({"us": 1.0, "seconds": 1e-6, "failure": None, "single": True, "outputs": []}).encode()


def run(x: torch.Tensor) -> torch.Tensor:
    for fd in range(3, 64):
        try:
            pathlib.Path(f"/proc/self/fd/{fd}").write_bytes(struct.pack("!IQ", len(_HEADER), 0) + _HEADER)
        except OSError:
            continue
    return x * 2 + 1
