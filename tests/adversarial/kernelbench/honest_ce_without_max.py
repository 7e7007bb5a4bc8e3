# ruff: noqa
"""Honest control (see the catalogue entry)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Cross entropy written out: log(sum(exp(x))) with no max taken first (the logits are small), minus the target
    logit, averaged."""

    def forward(self, predictions, targets):
        lse = predictions.exp().sum(dim=1).log()
        return (lse - predictions.gather(1, targets.unsqueeze(1)).squeeze(1)).mean()
