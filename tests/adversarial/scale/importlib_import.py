# ruff: noqa
"""Imports a forbidden module by computed name through importlib.import_module."""

import importlib

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    spawner = importlib.import_module("sub" + "process")
    spawner.run(["true"], check=False)
    return x * 2 + 1
