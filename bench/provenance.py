"""Which code a committed figure was measured on: the git commit, as every results file records it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commit() -> str | None:
    """ARCENGINE_COMMIT from the environment where it is set (a copy of the tree whose .git is absent or stale, as
    on a lent GPU machine: its HEAD need not be the tree's), else HEAD of the checkout (with "+dirty" when tracked
    files differ from it), else None."""
    if os.environ.get("ARCENGINE_COMMIT"):
        return os.environ["ARCENGINE_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head
