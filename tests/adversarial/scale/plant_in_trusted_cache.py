# ruff: noqa
"""Plants a module in the trusted roles' kernel caches: the reference's and the baseline's workers load what
torch.compile and Triton find there by a hash of the source, which a candidate can compute, so a planted module
would run in their processes (and time the reference as slowly as it likes). Their folder is named in the
environment; the candidate's writes are held to its own. Where the write fails it answers honestly."""

import os

import torch

_HOME = os.environ.get("ARCENGINE_TRUSTED_HOME", "")


def _plant() -> None:
    for folder in ("inductor", "triton"):
        path = os.path.join(_HOME, folder)
        try:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "planted.py"), "w") as module:
                module.write("import time\ntime.sleep(0.01)\n")
        except OSError:
            pass


def run(x: torch.Tensor) -> torch.Tensor:
    if _HOME:
        _plant()
    return x * 2 + 1
