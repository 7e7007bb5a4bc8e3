# ruff: noqa
"""Honest control (see the catalogue entry)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Binary cross entropy written out, with the clamp of its logs at -100 as torch's."""

    def forward(self, predictions, targets):
        log_p = predictions.log().clamp_min(-100)
        log_q = (1 - predictions).log().clamp_min(-100)
        return -(targets * log_p + (1 - targets) * log_q).mean()
