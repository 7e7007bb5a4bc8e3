# ruff: noqa
"""Spawns a helper process (a compiler, a server, a shell) from run(). Reached out of KernelBench-style sandboxes
that only time the call. The gate must refuse the import before any process starts."""

import subprocess

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    subprocess.run(["true"], check=False)
    return x * 2 + 1
