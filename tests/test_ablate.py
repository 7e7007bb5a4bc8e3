"""arcengine ablate: K campaigns per configuration, the budget split evenly across agents, then the report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from arcengine.domain.events import CandidateProposed
from arcengine.engine.config import ConfigError
from arcengine.recording.eventlog import read_events
from arcengine.tools.ablate import ablate, configurations
from tests.conftest import SCALE


@pytest.mark.heavy
async def test_each_configuration_runs_k_times_with_even_shares_and_one_report(tmp_path: Path) -> None:
    base = {"problem": str(SCALE), "budget": 2, "agents": 2, "device": "cpu", "candidate_timeout_s": 60.0}
    report = await ablate(base, ["single", "multi-bounded"], 2, tmp_path)
    data = json.loads((report / "report.json").read_text())
    groups = {g["configuration"]: g for g in data["comparison"]["groups"]}
    assert set(groups) == {"single model=offline", "multi-bounded model=offline"}
    assert all(len(g["speedups"]) == 2 for g in groups.values())
    assert len(data["comparison"]["tests"]) == 1 and data["comparison"]["tests"][0]["exact"]
    for run_dir in (tmp_path / "multi-bounded").iterdir():
        shares = Counter(e.agent_id for e in read_events(run_dir / "events.jsonl")
                         if isinstance(e, CandidateProposed) and e.agent_id != "seed")
        assert shares == {"a1": 1, "a2": 1}  # budget 2 split evenly over 2 agents


def test_unknown_configuration_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown configuration multi-fancy"):
        configurations("single,multi-fancy")
