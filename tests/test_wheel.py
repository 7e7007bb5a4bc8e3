"""A non-editable install carries everything: the wheel built from this tree, installed on its own into a fresh
folder and run from elsewhere, lists the nine shipped problems and runs a demo campaign (problems, skills and the
terminal UI are packages of the wheel, not folders of the checkout)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from arcengine.domain.problem import shipped_problem_names

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "arcengine", "tui", "problems", "skills")

# One worker runs the whole module, so the wheel is built once per run.
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built offline by setuptools from a copy of the tree and unpacked into a folder of its own."""
    work = tmp_path_factory.mktemp("wheel")
    tree = work / "tree"
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy(source, tree / name)
    subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                    "build_meta.build_wheel(sys.argv[1])", str(work / "dist")],
                   cwd=tree, check=True, capture_output=True)
    wheel = next((work / "dist").glob("arcengine-*.whl"))
    site = work / "site"
    with zipfile.ZipFile(wheel) as archive:  # a pure-Python wheel installs by unpacking
        archive.extractall(site)
    return site


def arcengine(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed command, with the wheel's folder first on the path and the checkout nowhere on it."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "arcengine.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)


def test_the_wheel_holds_the_problems_the_skills_and_the_tui(installed: Path) -> None:
    assert {p.parent.name for p in (installed / "arcengine_problems").glob("*/problem.toml")} == set(
        shipped_problem_names())
    assert len(list((installed / "arcengine_skills").glob("*.md"))) == len(list((ROOT / "skills").glob("*.md")))
    assert (installed / "arcengine_tui" / "app.py").is_file()
    assert (installed / "arcengine" / "guard" / "child" / "judge.py").is_file()
    assert (installed / "arcengine" / "tools" / "report" / "templates" / "report.html.j2").is_file()  # report --html


@pytest.mark.heavy
def test_an_installed_wheel_lists_the_problems_and_runs_the_demo(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run([sys.executable, "-c", "import arcengine, arcengine_problems; "
                            "print(arcengine.__file__, arcengine_problems.__file__)"],
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(installed)}, capture_output=True,
                           text=True, check=True).stdout
    assert str(ROOT) not in where and where.count(str(installed)) == 2
    listed = arcengine(installed, tmp_path, "problems", "list")
    assert listed.returncode == 0, listed.stderr
    assert sorted(line.split()[0] for line in listed.stdout.splitlines()) == shipped_problem_names()
    assert len(shipped_problem_names()) == 9
    demo = arcengine(installed, tmp_path, "run", "rmsnorm", "--agents", "1", "--budget", "1", "--device", "cpu",
                     "--out", str(tmp_path / "runs"), "--json")
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert json.loads(demo.stdout)["stop_reason"] == "candidate budget spent"
