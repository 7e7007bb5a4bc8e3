# ruff: noqa
"""Asks for a 1 TiB device buffer: CUDA out-of-memory must come back as the candidate's error, and the child must
still be able to report it (GPU only)."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    scratch = torch.empty(1 << 40, dtype=torch.uint8, device=x.device)
    return x * 2 + 1 + scratch[:1].float() * 0
