"""Skill files: Markdown with YAML frontmatter (name, description, kind, eligible, tunables)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import frontmatter
import yaml

from arcengine.domain.errors import UserError
from arcengine.domain.shipped import SHIPPED_SKILLS


class SkillError(UserError):
    pass


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    kind: Literal["strategy", "meta"]
    eligible: tuple[str, ...]  # kernel types, or ("*",)
    tunables: tuple[str, ...]  # TUNABLES names the offline tuner may touch under this strategy
    body: str
    path: Path

    def applies_to(self, kernel_type: str) -> bool:
        return "*" in self.eligible or kernel_type in self.eligible


def load_skill(path: Path) -> Skill:
    try:
        post = frontmatter.load(path)
    except yaml.YAMLError as error:
        raise SkillError(f"{path}: frontmatter is not valid YAML: {error}") from None
    meta = post.metadata
    missing = [key for key in ("name", "description", "kind", "eligible") if key not in meta]
    if missing:
        raise SkillError(f"{path}: frontmatter misses {', '.join(missing)}")
    if meta["kind"] not in ("strategy", "meta"):
        raise SkillError(f"{path}: kind must be 'strategy' or 'meta', not {meta['kind']!r}")
    if meta["name"] != path.stem:
        raise SkillError(f"{path}: name {meta['name']!r} differs from the file name")
    for key in ("eligible", "tunables"):
        if key in meta and meta[key] is not None and not isinstance(meta[key], list):
            raise SkillError(f"{path}: {key} must be a list, like [{meta[key]}]")
    return Skill(
        name=str(meta["name"]),
        description=str(meta["description"]),
        kind=meta["kind"],
        eligible=tuple(str(k) for k in meta["eligible"]),
        tunables=tuple(str(t) for t in meta.get("tunables") or ()),
        body=post.content.strip(),
        path=path,
    )


def load_skills(directory: Path = SHIPPED_SKILLS) -> dict[str, Skill]:
    skills = [load_skill(path) for path in sorted(directory.glob("*.md"))]
    return {skill.name: skill for skill in skills}


def eligibility_map(skills: dict[str, Skill], kernel_types: list[str]) -> dict[str, list[str]]:
    """Kernel type -> names of the strategy skills that apply to it."""
    return {
        kernel_type: [s.name for s in skills.values() if s.kind == "strategy" and s.applies_to(kernel_type)]
        for kernel_type in kernel_types
    }


def strategies_for(skills: dict[str, Skill], kernel_type: str) -> list[Skill]:
    return [s for s in skills.values() if s.kind == "strategy" and s.applies_to(kernel_type)]
