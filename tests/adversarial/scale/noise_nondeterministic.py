# ruff: noqa
"""Adds small random noise that changes on every call (as an unsynchronised atomic reduction would), 1e-3 relative:
tiny to the eye, 100 times the problem's tolerance."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    out = x * 2 + 1
    return out + 1e-3 * out.abs() * torch.randn_like(out)
