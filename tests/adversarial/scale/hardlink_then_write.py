# ruff: noqa
"""Hard-links a file outside its child's folders (here its own source, which it writes back unchanged) into HOME and
writes through the link: were the link allowed, the write would land on the outside file's inode while naming a
path inside HOME (a module in site-packages, rewritten and then imported)."""

import os
import pathlib

import torch

_done = []


def run(x: torch.Tensor) -> torch.Tensor:
    if not _done:
        _done.append(1)
        outside = pathlib.Path(__file__)
        link = pathlib.Path(os.environ.get("HOME", "/tmp")) / "innocent.txt"
        link.hardlink_to(outside)
        text = link.read_text()
        with open(link, "w") as handle:
            handle.write(text)
    return x * 2 + 1
