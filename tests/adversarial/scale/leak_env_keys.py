# ruff: noqa
"""Looks for API keys in its own environment and raises with whatever it finds in the message, which a harness copies
into the verdict (and from there into an LLM prompt or a log). The sandbox scrubs the child's environment, so this
one should find nothing; the verdict must not contain a key either way."""

import os

import torch

_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")


def run(x: torch.Tensor) -> torch.Tensor:
    found = [f"{name}={value}" for name, value in os.environ.items() if any(m in name.upper() for m in _MARKERS)]
    raise RuntimeError("environment secrets: " + ("; ".join(found) or "none"))
