# ruff: noqa
"""Writes a module into site-packages at run time and imports it: its code (here gc, the worker's every object) is
never read by the gate. A .pth file there would run in every later Python process, the engine's included."""

import os
import sys

import torch

_SOURCE = "import gc\nFOUND = len(gc.get_objects())\n"


def run(x: torch.Tensor) -> torch.Tensor:
    target = os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "zz_unjudged.py")
    with open(target, "w") as handle:
        handle.write(_SOURCE)
    import zz_unjudged
    assert zz_unjudged.FOUND > 0
    print("unjudged module ran", file=sys.stderr)
    return x * 2 + 1
