"""arcengine replay: a recorded campaign re-driven from its event log (recorded replies and decisions, no guard
child) reproduces its decisions per agent; an altered log is reported at its first difference."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arcengine.engine.campaign import Campaign
from arcengine.engine.config import CampaignConfig
from arcengine.recording.recorded import ReplayError, read_recording
from arcengine.tools.replay import replay_run
from tests.conftest import SCALE

# One worker runs the whole module, so the recorded campaign (the slow part) is made once per run.
pytestmark = pytest.mark.xdist_group("replay_recording")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recorded campaign for the module (a guard child per candidate: the slow part)."""
    import anyio

    # Three candidates per agent: a KEEP with a later candidate built on it (altered below) and the seed plus
    # three candidates to cut at; more only lengthens the slowest setup in the suite.
    config = CampaignConfig(problem=str(SCALE), device="cpu", out=tmp_path_factory.mktemp("rec"), agents=2,
                            budget=6, plateau=None, candidate_timeout_s=60.0)
    return Path(anyio.run(Campaign(config).run).run_dir)


@pytest.fixture
def recorded(recording: Path, tmp_path: Path) -> Path:
    """A test's own copy of the recording, to alter or cut as it likes."""
    copy = tmp_path / "rec" / recording.name
    shutil.copytree(recording, copy)
    return copy


def alter_first_keep(run_dir: Path) -> str:
    log = run_dir / "events.jsonl"
    lines = log.read_text().splitlines()
    for number, line in enumerate(lines):
        event = json.loads(line)
        if event["type"] == "candidate_decided" and event["agent_id"] != "seed" and event["decision"] == "KEEP":
            event["decision"] = "REVERT"
            lines[number] = json.dumps(event)
            log.write_text("\n".join(lines) + "\n")
            return event["candidate_id"]
    raise AssertionError("the recorded campaign has no KEEP to alter")


async def test_replay_reproduces_the_recorded_decisions(recorded: Path, tmp_path: Path) -> None:
    result = await replay_run(recorded, tmp_path / "replays")
    assert result.divergence is None
    original, replayed = read_recording(recorded), read_recording(Path(result.summary.run_dir))
    for agent, steps in original.steps.items():
        assert [s.decided.decision for s in replayed.steps[agent]] == [s.decided.decision for s in steps]
    assert all(replayed.memory(agent) == original.memory(agent) for agent in original.steps)
    assert any(original.memory(agent) for agent in original.steps)


async def test_an_altered_log_is_reported_at_the_first_difference(recorded: Path, tmp_path: Path) -> None:
    altered = alter_first_keep(recorded)
    result = await replay_run(recorded, tmp_path / "replays")
    assert result.divergence is not None
    # The next candidate of that agent was built on the KEEP: after a REVERT its parent is another one.
    assert "parent was" in result.divergence or altered in result.divergence


async def test_a_cut_last_line_and_until(recorded: Path, tmp_path: Path) -> None:
    with (recorded / "events.jsonl").open("a") as log:
        log.write('{"v": 1, "seq": 99999, "type": "candidate_dec')  # a crash mid-write
    full = await replay_run(recorded, tmp_path / "replays")
    assert full.divergence is None
    decided = [s.decided.seq for steps in read_recording(recorded).steps.values() for s in steps]
    until = sorted(decided)[3]  # the seed and three candidates
    part = await replay_run(recorded, tmp_path / "replays", until_seq=until)
    assert part.summary.candidates == 3 and part.divergence is None


def test_replay_of_nothing_says_so(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="no event log"):
        read_recording(tmp_path)


def test_cli_exit_status_tells_reproduced_from_diverged(recorded: Path, tmp_path: Path) -> None:
    def replay() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "arcengine.cli", "replay", str(recorded), "--out",
                               str(tmp_path / "cli"), "--json"], capture_output=True, text=True, check=False)

    same = replay()
    assert same.returncode == 0 and json.loads(same.stdout)["divergence"] is None
    alter_first_keep(recorded)
    differs = replay()
    assert differs.returncode == 1 and json.loads(differs.stdout)["divergence"]


async def test_reflections_follow_their_candidate_when_memory_dropped_one() -> None:
    """Memory may drop a conclusion at once (a win weaker than all it keeps), leaving no event: the replayed
    reflections must still go to the candidates they were about, not shift by one."""
    from types import SimpleNamespace

    from arcengine.domain.events import CampaignStarted, CandidateDecided, CandidateProposed, MemoryRecorded
    from arcengine.providers.replay import ReplayProvider
    from arcengine.recording.recorded import Recording, Step

    def step(n: int) -> Step:
        proposed = CandidateProposed(candidate_id=f"c{n}", agent_id="a1", position=n, parent_id=None,
                                     strategy="s", rationale="r", source=f"SPEED = {n}\n")
        return Step(proposed, CandidateDecided(candidate_id=f"c{n}", agent_id="a1", decision="KEEP", reason="",
                                               correct=True))

    def conclusion(n: int) -> MemoryRecorded:
        return MemoryRecorded(entry_id=f"m{n}", kind="win", kernel_type="k", owner=None, agent_id="a1",
                              candidate_id=f"c{n}", strategy="s", speedup=float(n), context="", summary=f"on c{n}",
                              reflection="")

    started = CampaignStarted(campaign_id="x", problem="p", problem_dir="/p", kernel_type="k", config={},
                              device="cpu")
    recording = Recording(started, [], steps={"a1": [step(1), step(2), step(3)]},
                          conclusions={"a1": [conclusion(1), conclusion(3)]})  # c2's was dropped
    provider = ReplayProvider("run", recording=recording)
    context: Any = SimpleNamespace(agent_id="a1")
    summaries = []
    for n in (1, 2, 3):
        proposal = await provider.propose(context)
        summaries.append((await provider.reflect(context, proposal, recording.steps["a1"][n - 1].decided)).summary)
    assert summaries[0] == "on c1" and summaries[2] == "on c3"
    assert summaries[1] not in ("on c1", "on c3")  # c2 gets a reflection of its own, not c3's
