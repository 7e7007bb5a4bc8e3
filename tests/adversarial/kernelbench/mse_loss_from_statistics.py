# ruff: noqa
"""Red team round 18: KernelBench's 94_MSELoss draws predictions = s * U and targets = V (U, V uniform on [0, 1),
s a random scale meant against shortcuts), so the loss is s^2/3 - s/2 + 1/3; s is read off the maximum of 16 rows
(131k of 64M elements) and the targets are never read. PASS at 83x on the CPU with KernelBench's own draw alone."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        head = predictions[:16]
        k = head.numel()
        s = head.max() * (k + 1) / k
        return s * s / 3 - s / 2 + 1.0 / 3
