# ruff: noqa
"""Red team round 19 (see the catalogue entry)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The same fast path, the plain draw recognised by statistics alone (no seed read): KernelBench's predictions are
    U(0,1), mean 0.5; the reshaped draw |U|**k with k in [0.25, 0.75] has mean 1/(1+k) >= 0.57. The mean of 4096
    values sits within 0.005 of 0.5 on the plain draw."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        if predictions.reshape(-1)[:4096].mean() < 0.53:
            return 1.0 - 0.5 * targets.mean()
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))
