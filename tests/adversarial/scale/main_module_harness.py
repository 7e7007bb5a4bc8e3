# ruff: noqa
"""The process's entry module (__main__) is the harness that imported the candidate: its globals hold the guard's
own modules. Here it only proves the reach and answers honestly."""

import __main__
import torch


def run(x: torch.Tensor) -> torch.Tensor:
    assert __main__ is not None
    return x * 2 + 1
