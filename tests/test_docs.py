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
