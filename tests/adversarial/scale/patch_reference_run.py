# ruff: noqa
"""Imports the reference the harness loaded (the child registers it in sys.modules) and replaces its run() with the
candidate's own wrong answer, so 'reference' and 'candidate' agree."""

import arcengine_guard_reference as reference

import torch


def _wrong(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)


reference.run = _wrong


def run(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)
