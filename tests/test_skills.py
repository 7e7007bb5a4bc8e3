"""arcengine/domain/skills.py and the shipped skills/: frontmatter, errors, eligibility."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arcengine.domain.problem import load_problem
from arcengine.domain.skills import (
    SHIPPED_SKILLS,
    Skill,
    SkillError,
    eligibility_map,
    load_skill,
    load_skills,
    strategies_for,
)
from arcengine.domain.tunables import read_tunables

META = {"playbook-index", "memory-notes", "sol-benchmark"}
STRATEGIES = {"library", "memory", "compute", "fusion", "precision", "reduction", "scheduling", "custom-hopper"}


def _write(folder: Path, stem: str, frontmatter: str, body: str = "Body text.\n") -> Path:
    path = folder / f"{stem}.md"
    path.write_text(f"---\n{frontmatter}---\n\n{body}", encoding="utf-8")
    return path


def _skill(name: str, kind: str, eligible: tuple[str, ...]) -> Skill:
    return Skill(name=name, description="d", kind=kind, eligible=eligible, tunables=(), body="b",  # type: ignore[arg-type]
                 path=Path(f"{name}.md"))


# -- load_skill -------------------------------------------------------------------------------------------

def test_load_skill_reads_frontmatter_and_body(tmp_path: Path) -> None:
    path = _write(tmp_path, "tiling", "name: tiling\ndescription: Tile it.\nkind: strategy\n"
                  "eligible: [gemm, softmax]\ntunables: [BLOCK_M, BLOCK_N]\n", "# Tiling\n\nUse tiles.\n\n")
    skill = load_skill(path)
    assert skill == Skill(name="tiling", description="Tile it.", kind="strategy", eligible=("gemm", "softmax"),
                          tunables=("BLOCK_M", "BLOCK_N"), body="# Tiling\n\nUse tiles.", path=path)


def test_tunables_are_optional(tmp_path: Path) -> None:
    path = _write(tmp_path, "index", "name: index\ndescription: d\nkind: meta\neligible: ['*']\n")
    assert load_skill(path).tunables == ()


def test_bad_yaml(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken", "name: broken\ndescription: [unclosed\nkind: strategy\neligible: ['*']\n")
    with pytest.raises(SkillError, match="not valid YAML"):
        load_skill(path)


@pytest.mark.parametrize("missing", ["name", "description", "kind", "eligible"])
def test_missing_keys(tmp_path: Path, missing: str) -> None:
    lines = {"name": "name: s\n", "description": "description: d\n", "kind": "kind: strategy\n",
             "eligible": "eligible: ['*']\n"}
    del lines[missing]
    path = _write(tmp_path, "s", "".join(lines.values()))
    with pytest.raises(SkillError, match=f"misses {missing}"):
        load_skill(path)


def test_no_frontmatter_at_all(tmp_path: Path) -> None:
    path = tmp_path / "plain.md"
    path.write_text("# Just Markdown\n", encoding="utf-8")
    with pytest.raises(SkillError, match="misses name, description, kind, eligible"):
        load_skill(path)


def test_wrong_kind(tmp_path: Path) -> None:
    path = _write(tmp_path, "s", "name: s\ndescription: d\nkind: tactic\neligible: ['*']\n")
    with pytest.raises(SkillError, match="kind must be 'strategy' or 'meta', not 'tactic'"):
        load_skill(path)


def test_name_must_match_file_stem(tmp_path: Path) -> None:
    path = _write(tmp_path, "tiling", "name: tile\ndescription: d\nkind: strategy\neligible: ['*']\n")
    with pytest.raises(SkillError, match="differs from the file name"):
        load_skill(path)


def test_eligible_as_a_plain_string(tmp_path: Path) -> None:
    path = _write(tmp_path, "s", "name: s\ndescription: d\nkind: strategy\neligible: softmax\n")
    try:
        skill = load_skill(path)
    except SkillError:
        return
    assert skill.eligible == ("softmax",)


def test_load_skills_keys_by_name(tmp_path: Path) -> None:
    _write(tmp_path, "b", "name: b\ndescription: d\nkind: strategy\neligible: ['*']\n")
    _write(tmp_path, "a", "name: a\ndescription: d\nkind: meta\neligible: ['*']\n")
    (tmp_path / "notes.txt").write_text("not a skill", encoding="utf-8")
    skills = load_skills(tmp_path)
    assert list(skills) == ["a", "b"]
    assert skills["a"].kind == "meta"


# -- eligibility ------------------------------------------------------------------------------------------

def test_applies_to() -> None:
    assert _skill("s", "strategy", ("*",)).applies_to("anything")
    assert _skill("s", "strategy", ("gemm", "softmax")).applies_to("softmax")
    assert not _skill("s", "strategy", ("gemm",)).applies_to("softmax")


def test_eligibility_map_lists_strategies_only() -> None:
    skills = {s.name: s for s in [
        _skill("everywhere", "strategy", ("*",)),
        _skill("gemm-only", "strategy", ("gemm",)),
        _skill("norms", "strategy", ("normalization", "softmax")),
        _skill("index", "meta", ("*",)),
    ]}
    assert eligibility_map(skills, ["gemm", "softmax", "conv"]) == {
        "gemm": ["everywhere", "gemm-only"],
        "softmax": ["everywhere", "norms"],
        "conv": ["everywhere"],
    }
    assert [s.name for s in strategies_for(skills, "normalization")] == ["everywhere", "norms"]


# -- the shipped skills -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shipped() -> dict[str, Skill]:
    return load_skills()


def test_shipped_folder_exists() -> None:
    assert SHIPPED_SKILLS.is_dir()


def test_shipped_strategy_skills_are_exactly_the_library(shipped: dict[str, Skill]) -> None:
    assert {n for n, s in shipped.items() if s.kind == "strategy"} == STRATEGIES


def test_shipped_meta_skills(shipped: dict[str, Skill]) -> None:
    meta = {n for n, s in shipped.items() if s.kind == "meta"}
    # The meta skill on memory is `memory-notes`: `memory` is the strategy's name (and file).
    assert meta >= META
    assert all(shipped[n].tunables == () for n in meta)
    assert not meta & STRATEGIES  # one flat folder, name == file stem: a meta skill cannot reuse a strategy's name


def test_every_shipped_file_loads_with_its_stem_as_name() -> None:
    paths = sorted(SHIPPED_SKILLS.glob("*.md"))
    assert paths
    for path in paths:
        assert load_skill(path).name == path.stem


def test_shipped_strategy_bodies_are_substantial(shipped: dict[str, Skill]) -> None:
    for skill in shipped.values():
        if skill.kind == "strategy":
            assert len(skill.body) > 1500, skill.name
            assert len(skill.description) > 40, skill.name
        else:
            assert len(skill.body) > 200, skill.name


def test_shipped_tunables_are_constant_names(shipped: dict[str, Skill]) -> None:
    for skill in shipped.values():
        for name in skill.tunables:
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*", name), (skill.name, name)


@pytest.mark.parametrize("problem_name", ["rmsnorm", "softmax"])
def test_shipped_problems_have_eligible_strategies_the_tuner_can_act_on(
    shipped: dict[str, Skill], problem_name: str
) -> None:
    problem = load_problem(problem_name)
    eligible = eligibility_map(shipped, [problem.kernel_type])[problem.kernel_type]
    assert len(eligible) >= 3
    space, _ = read_tunables(problem.seed_path.read_text(encoding="utf-8"))
    usable = [n for n in eligible if set(shipped[n].tunables) & set(space)]
    assert len(usable) >= 2
