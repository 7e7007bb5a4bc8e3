# ruff: noqa
"""Writes a module into torch's package at run time and imports it: its code (here gc, the worker's every object) is
never read by the gate. A .pth file there would run in every later Python process, the engine's included."""

import os
import sys

import torch

_SOURCE = "import gc\nFOUND = len(gc.get_objects())\n"


def run(x: torch.Tensor) -> torch.Tensor:
    target = os.path.join(os.path.dirname(torch.__file__), "zz_unjudged.py")  # inside a package the gate admits
    with open(target, "w") as handle:
        handle.write(_SOURCE)
    import torch.zz_unjudged as unjudged

    assert unjudged.FOUND > 0
    print("unjudged module ran", file=sys.stderr)
    return x * 2 + 1
