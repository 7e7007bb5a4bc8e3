"""The worked example in docs/problems.md is a real problem: its four files, as printed, pass the guard."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "problems.md"


def test_the_worked_example_passes_problems_check(tmp_path: Path) -> None:
    blocks = re.findall(r"```(toml|python)\n(.*?)```", DOC.read_text(), re.DOTALL)
    folder = tmp_path / "swish"
    folder.mkdir()
    for name, (_, text) in zip(("problem.toml", "reference.py", "seed.py", "baseline.py"), blocks[:4], strict=True):
        (folder / name).write_text(text)
    result = subprocess.run([sys.executable, "-m", "arcengine.cli", "problems", "check", str(folder), "--device",
                             "cpu"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.startswith("swish: ok on cpu"), result.stdout + result.stderr
    assert "baseline silu" in result.stdout, result.stdout  # the library route was checked and timed


def test_every_file_the_architecture_names_exists() -> None:
    """docs/architecture.md names modules by path (under arcengine/, or from the top: tui/, bench/): none is stale."""
    root = DOC.parent.parent
    run_folder = {"best.py", "working.py"}  # what a run writes, not modules
    named = set(re.findall(r"`([\w/]+\.py)`", (DOC.parent / "architecture.md").read_text())) - run_folder
    assert len(named) > 40
    missing = sorted(path for path in named
                     if not (root / "arcengine" / path).is_file() and not (root / path).is_file()
                     and not any((root / "arcengine" / layer / path).is_file()
                                 for layer in ("domain", "recording", "engine", "tools", "providers", "guard",
                                               "guard/child")))
    assert missing == []
