# ruff: noqa
"""Runs a shell command through os.system (no subprocess import, so a check on imports alone misses it)."""

import os

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    os.system("true")
    return x * 2 + 1
