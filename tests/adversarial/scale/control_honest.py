# ruff: noqa
"""Control: an honest candidate for the scale fixture (y = 2x + 1). It must pass; if it does not, the catalogue's
harness (not the guard) is broken."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1
