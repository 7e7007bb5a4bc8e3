"""Generated problem.toml files are written by tomli-w and read back by tomllib as written: an emoji in a
description once came out as JSON's surrogate escapes ("\\ud83d\\ude80"), which tomllib rejects, and the imported
problem could not be loaded."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from arcengine.domain.formats import toml_text, toml_value
from arcengine.domain.problem import load_problem

KERNELBENCH = Path(__file__).parent / "fixtures" / "kernelbench" / "1_Add.py"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_an_emoji_in_a_file_name_makes_a_loadable_problem(tmp_path: Path) -> None:
    problem = tmp_path / "1_Add_🚀.py"
    problem.write_text(KERNELBENCH.read_text())
    loaded = load_problem(problem)
    assert "1_Add_🚀.py" in loaded.description


def test_an_undecodable_file_name_makes_a_loadable_problem(tmp_path: Path) -> None:
    """A byte that is not UTF-8 in a file name is a lone surrogate in Python's str: written as U+FFFD."""
    problem = tmp_path / os.fsdecode(b"2_Add_\xff.py")
    problem.write_text(KERNELBENCH.read_text())
    assert "2_Add_\ufffd.py" in load_problem(problem).description


def test_values_round_trip_through_tomllib() -> None:
    document = {"description": "fast 🚀 \"quoted\" \\ back\nline", "tags": ["a", "ü"], "n": 1e-4,
                "baseline": {"routes": ["eager", "compile"]}, "workloads": [{"axes": {"M": 7}}]}
    assert tomllib.loads(toml_text(document)) == document
    line = "\n".join(f"{key} = {toml_value(value)}" for key, value in document.items() if key != "workloads")
    assert tomllib.loads(line) == {k: v for k, v in document.items() if k != "workloads"}
    lone = "lone \ud83d"  # half of an emoji's surrogate pair, as json.loads makes of a "\\ud83d" escape
    assert tomllib.loads("d = " + toml_value(lone)) == {"d": "lone \ufffd"}
