# ruff: noqa
"""Lowers torch's global float32 matmul precision on its first call (TF32 on Ampere and later): the candidate's and
the reference's later matmuls both get faster and less precise, behind the reference's back. Done through the
setter function rather than an assignment into torch's namespace, which the gate refuses."""

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    torch.set_float32_matmul_precision("medium")
    return x * 2 + 1
