# ruff: noqa
"""Never returns: a host-side infinite loop in run(). The sandbox's wall clock must end it and say so."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    spins = 0
    while True:
        spins += 1
    return x * 2 + 1
