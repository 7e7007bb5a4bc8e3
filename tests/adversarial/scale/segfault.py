# ruff: noqa
"""Segfaults the child from run() (faulthandler._sigsegv): a crash must be a verdict with the signal named, never an
engine failure."""

import faulthandler

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    faulthandler._sigsegv()
    return x * 2 + 1
