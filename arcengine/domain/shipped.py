"""Where the problems and skills that ship with arcengine are.

An install holds them as the packages ``arcengine_problems`` and ``arcengine_skills`` (the repository's ``problems/``
and ``skills/`` folders, mapped in pyproject.toml, so a wheel carries them). A source tree put on PYTHONPATH without
an install (a GPU machine's copy of the repository) has only the folders, beside ``arcengine/``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def shipped_folder(package: str, folder: str) -> Path:
    """The folder of ``package`` if it is installed (found, not imported), else ``folder`` of the source tree."""
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parents[2] / folder


SHIPPED_PROBLEMS = shipped_folder("arcengine_problems", "problems")
SHIPPED_SKILLS = shipped_folder("arcengine_skills", "skills")
