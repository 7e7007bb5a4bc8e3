"""arcengine/engine/config.py: defaults, file + flags merging, and one-line errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from arcengine.engine.config import CampaignConfig, ConfigError, build_config


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _error(file: Path | None, overrides: dict) -> str:
    with pytest.raises(ConfigError) as info:
        build_config(file, overrides)
    message = str(info.value)
    assert "\n" not in message.strip()
    return message


def test_defaults() -> None:
    config = build_config(None, {"problem": "rmsnorm"})
    assert config == CampaignConfig(problem="rmsnorm")
    assert (config.agents, config.budget, config.model) == (3, 24, "offline")
    assert (config.memory, config.memory_cap, config.leaderboard) == ("shared", 16, True)
    assert (config.device, config.out) == ("auto", Path("runs"))
    assert (config.margin, config.near_band, config.r_draft, config.plateau) == (0.02, 0.05, 4, 12)
    assert config.suspicious_speedup == 10.0
    assert config.target_speedup is None and config.time_limit_s is None
    assert (config.seeds, config.rng_seed, config.max_relaunches) == (5, 0, 3)


def test_file_values_are_read(tmp_path: Path) -> None:
    path = _file(tmp_path, 'problem = "softmax"\nagents = 4\nbudget = 60\nmemory = "private"\nmargin = 0.03\n'
                           'out = "elsewhere"\nleaderboard = false\nsuspicious_speedup = 50.0\n')
    config = build_config(path, {})
    assert (config.problem, config.agents, config.budget, config.memory) == ("softmax", 4, 60, "private")
    assert config.margin == 0.03 and config.out == Path("elsewhere") and config.leaderboard is False
    assert config.suspicious_speedup == 50.0


def test_flags_override_file_values(tmp_path: Path) -> None:
    path = _file(tmp_path, 'problem = "softmax"\nagents = 4\nbudget = 60\n')
    config = build_config(path, {"agents": 2, "problem": "rmsnorm"})
    assert (config.problem, config.agents, config.budget) == ("rmsnorm", 2, 60)


def test_none_overrides_are_ignored(tmp_path: Path) -> None:
    path = _file(tmp_path, 'problem = "softmax"\nagents = 4\nbudget = 60\nmemory_cap = 8\n')
    config = build_config(path, {"agents": None, "budget": None, "memory_cap": None, "target_speedup": None})
    assert (config.agents, config.budget, config.memory_cap) == (4, 60, 8)


@pytest.mark.parametrize("spelling", ["none", "None", "NONE"])
def test_memory_cap_none_keeps_everything(spelling: str) -> None:
    assert build_config(None, {"problem": "p", "memory_cap": spelling}).memory_cap is None


def test_memory_cap_none_from_file(tmp_path: Path) -> None:
    path = _file(tmp_path, 'problem = "p"\nmemory_cap = "none"\n')
    assert build_config(path, {}).memory_cap is None


def test_unknown_key_names_it(tmp_path: Path) -> None:
    path = _file(tmp_path, 'problem = "p"\nagentz = 3\n')
    assert _error(path, {}).startswith("agentz:")


@pytest.mark.parametrize(
    ("field", "value"),
    [("agents", "many"), ("budget", 2.5), ("margin", "wide"), ("memory", "global"), ("device", "tpu"),
     ("memory_cap", "unbounded"), ("leaderboard", "perhaps"), ("plateau", [3])],
)
def test_wrong_type_names_the_field(field: str, value: object) -> None:
    message = _error(None, {"problem": "p", field: value})
    assert message.startswith(f"{field}:")


@pytest.mark.parametrize(
    ("field", "value"),
    [("agents", 0), ("agents", 257), ("memory_cap", 0), ("margin", 1.0), ("margin", -0.1), ("seeds", 0),
     ("near_band", 1.5), ("candidate_timeout_s", 0), ("target_speedup", 0), ("suspicious_speedup", 1.0)],
)
def test_out_of_range_names_the_field(field: str, value: object) -> None:
    assert _error(None, {"problem": "p", field: value}).startswith(f"{field}:")


def test_missing_problem_names_it() -> None:
    assert _error(None, {}).startswith("problem:")


def test_budget_smaller_than_agents() -> None:
    message = _error(None, {"problem": "p", "agents": 5, "budget": 4})
    assert "budget" in message and "(4)" in message and "(5)" in message


def test_budget_equal_to_agents_is_fine() -> None:
    assert build_config(None, {"problem": "p", "agents": 5, "budget": 5}).budget == 5


def test_missing_file(tmp_path: Path) -> None:
    message = _error(tmp_path / "nope.toml", {"problem": "p"})
    assert "nope.toml" in message and "does not exist" in message


def test_bad_toml(tmp_path: Path) -> None:
    path = _file(tmp_path, 'problem = "p"\nagents = = 3\n')
    message = _error(path, {})
    assert str(path) in message
