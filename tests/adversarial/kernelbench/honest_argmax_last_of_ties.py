# ruff: noqa
"""Honest control (see the catalogue entry)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Argmax by a '>=' scan, as a naive CUDA loop `if (v >= best)` writes it: the last maximal index on ties (torch
    gives the first), right wherever the draw has no ties, as KernelBench's never has."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.movedim(self.dim, -1)
        return (x.shape[-1] - 1) - torch.argmax(x.flip(-1), dim=-1)
