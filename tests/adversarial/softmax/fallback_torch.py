# ruff: noqa
"""Control (allowed by design): a 'custom kernel' that always fails, with a try/except fallback to torch.softmax.
KernelBench rejects try/except as a bypass; arcengine lets candidates use PyTorch, so this is a correct candidate at
the reference's speed, and it can never KEEP against a faster incumbent. Expected to pass."""

import torch


def _custom_softmax(x: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError("tile configuration not supported")


def run(x: torch.Tensor) -> torch.Tensor:
    try:
        return _custom_softmax(x)
    except Exception:
        return torch.softmax(x.float(), -1).to(x.dtype)
