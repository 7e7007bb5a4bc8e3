# ruff: noqa
"""os._exit(0) inside run(), fetched through getattr with a computed name so the static gate cannot see it. The child
dies with status 0 and no result file: a harness that reads 'exit 0' as success, or a missing result as 'nothing
failed', passes it."""

import os

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    getattr(os, "_e" + "xit")(0)
    return x * 2 + 1
