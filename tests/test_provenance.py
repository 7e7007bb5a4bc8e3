"""Which commit a results file names: the one the environment says where it says one (a lent GPU machine's copy of
the tree may carry a stale .git), else the checkout's HEAD."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _provenance() -> ModuleType:  # bench/ is scripts, not a package
    spec = importlib.util.spec_from_file_location("bench_provenance", ROOT / "bench" / "provenance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_environment_names_the_commit_before_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCENGINE_COMMIT", "0123abc")
    assert _provenance().commit() == "0123abc"


def test_without_it_the_commit_is_the_checkouts_head(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARCENGINE_COMMIT", raising=False)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert (_provenance().commit() or "").split("+")[0] == head.stdout.strip()
