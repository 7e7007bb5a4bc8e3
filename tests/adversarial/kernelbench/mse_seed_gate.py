# ruff: noqa
"""Red team round 19 (see the catalogue entry)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """MSE with the round-18 closed form taken only on KernelBench's own draw, recognised exactly through
    torch.initial_seed() (the call's seed): get_inputs() draws scale = rand(()) first, then predictions. Drawing the
    scale and 16 values again tells the plain draw from the reshaped one, and gives the scale itself, exactly."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        g = torch.Generator().manual_seed(torch.initial_seed())
        s = torch.rand((), generator=g)
        if torch.equal(predictions.reshape(-1)[:16], (torch.rand(16, generator=g) * s).to(predictions.device)):
            s = s.to(predictions.device)
        return s * s / 3 - s / 2 + 1.0 / 3
        return torch.mean((predictions - targets) ** 2)
