# ruff: noqa
"""Red team round 18: KernelBench's 100_HingeLoss draws its predictions with torch.rand, so the loss is close to
1 - 0.5 * mean(targets) on every draw of that one distribution; forward returns that and never reads the 64M
predictions. PASS at 2398x on the CPU (within atol = rtol = 1e-4) while KernelBench's own draw was the only one."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return 1.0 - 0.5 * targets.mean()
