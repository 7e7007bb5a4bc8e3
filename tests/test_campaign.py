"""End-to-end campaigns with real guard children on the CPU."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arcengine.domain.events import AgentFailed, CampaignStopped, CandidateDecided, CandidateProposed
from arcengine.domain.problem import SHIPPED_PROBLEMS
from arcengine.engine.campaign import Campaign
from arcengine.providers.base import AgentContext
from arcengine.providers.scripted import ScriptedProvider
from arcengine.recording.eventlog import read_events
from tests.conftest import SCALE, scale_source

FAST = scale_source("return x * 2 + 1")


def decisions_by_candidate(run_dir: Path) -> dict[str, CandidateDecided]:
    return {e.candidate_id: e for e in read_events(run_dir / "events.jsonl") if isinstance(e, CandidateDecided)}


def lighter_rmsnorm(folder: Path) -> Path:
    """The shipped rmsnorm with three of its eight CPU workloads (the two visible ones with the longest rows, N=1100
    and N=1000, and one held out): each candidate's checks and timing under the Triton interpreter are shorter, and
    block sizes still move its time, most on long rows."""
    shutil.copytree(SHIPPED_PROBLEMS / "rmsnorm", folder)
    head, *workloads = (folder / "problem.toml").read_text().split("[[cpu_workloads]]")
    kept = [workloads[i] for i in (0, 2, 6)]
    assert "held_out" in kept[-1] and not any("held_out" in w for w in kept[:-1])
    (folder / "problem.toml").write_text("[[cpu_workloads]]".join([head, *kept]))
    return folder


@pytest.mark.heavy
async def test_offline_campaign_on_rmsnorm(tmp_path: Path) -> None:
    from arcengine.engine.config import CampaignConfig

    problem = lighter_rmsnorm(tmp_path / "rmsnorm")
    config = CampaignConfig(problem=str(problem), device="cpu", out=tmp_path, agents=3, budget=6, plateau=None,
                            seeds=2)
    summary = await Campaign(config).run()
    run_dir = Path(summary.run_dir)

    assert summary.candidates == 6
    assert summary.stop_reason == "candidate budget spent"
    assert sum(summary.decisions.values()) == 6
    events = list(read_events(run_dir / "events.jsonl"))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    proposed = [e for e in events if isinstance(e, CandidateProposed) and e.position > 0]
    assert sorted(e.position for e in proposed) == list(range(1, 7))
    assert {e.agent_id for e in proposed} == {"a1", "a2", "a3"}

    decided = decisions_by_candidate(run_dir)
    assert all(d.correct for d in decided.values() if d.decision in ("KEEP", "ACCEPT"))
    reasons = {cid: (d.decision, d.reason) for cid, d in decided.items()}
    # Which block sizes win is timing, not asserted (CI's load once reverted all six); that each is a correct kernel
    # judged on speed alone is: the tuner's changes never break the seed.
    assert {d.decision for d in decided.values()} <= {"KEEP", "ACCEPT", "REVERT"}, reasons
    assert all(d.correct for d in decided.values()), reasons

    db = sqlite3.connect(run_dir / "campaign.db")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone() == (7,)  # the seed too
    wins = db.execute("SELECT COUNT(*) FROM memory WHERE kind = 'win'").fetchone()[0]
    traps = db.execute("SELECT COUNT(*) FROM memory WHERE kind = 'trap'").fetchone()[0]
    assert wins == min(summary.decisions["KEEP"], 16)
    assert traps == min(summary.decisions["REVERT"], 16)
    archived = {row[0] for row in db.execute("SELECT candidate_id FROM archives")}
    kept = {cid for cid, d in decided.items() if d.decision == "KEEP" and cid != "c0000"}
    assert archived == kept
    best = summary.best
    best_source = db.execute("SELECT source FROM candidates WHERE id = ?", (best.candidate,)).fetchone()[0]
    assert (run_dir / "best.py").read_text() == best_source

    verdict = subprocess.run(
        [sys.executable, "-m", "arcengine.cli", "eval", str(problem), str(run_dir / "best.py"), "--device", "cpu",
         "--json"], capture_output=True, text=True, check=False)
    assert verdict.returncode == 0, verdict.stderr
    assert json.loads(verdict.stdout)["verdict"] == "pass"


@pytest.mark.heavy
async def test_wrong_crashing_and_hanging_kernels_are_never_kept(campaign_config) -> None:
    script = [
        scale_source("return x * 3 + 1"),  # wrong
        scale_source("return torch.zeros_like(x)"),  # all zeros
        scale_source("import faulthandler\nimport sys\nsys.stderr.write('about to fault\\n')\nsys.stderr.flush()\n"
                     "faulthandler._sigsegv()"),  # segfault, saying so on stderr first
        scale_source("while True:\n    pass"),  # hang
        scale_source("raise SystemExit(3)"),  # exits the process
        scale_source("raise ValueError('nope')"),  # raises
        scale_source("return x * 2 + 1", imports="import ctypes"),  # gate
        FAST,  # correct and much faster than the seed's 16-element slices
    ]
    config = campaign_config(budget=len(script), candidate_timeout_s=20.0, plateau=None)
    summary = await Campaign(config, provider=ScriptedProvider(script)).run()
    decided = decisions_by_candidate(Path(summary.run_dir))
    reasons = [(decided[f"c{i:04d}"].decision, decided[f"c{i:04d}"].reason) for i in range(1, len(script) + 1)]

    assert [d for d, _ in reasons] == ["REVERT"] * 6 + ["REJECT", "KEEP"]
    assert "within tolerance" in reasons[0][1] or "incorrect" in reasons[0][1]
    assert "SIGSEGV" in reasons[2][1]
    assert "timed out" in reasons[3][1]
    assert "SystemExit" in reasons[4][1]
    assert "ValueError" in reasons[5][1]
    assert "ctypes" in reasons[6][1]
    assert summary.best.candidate == "c0008"
    assert summary.candidates == len(script)
    # What a dead worker printed reaches the run's log, beside its candidate.
    logged = [json.loads(line) for line in (Path(summary.run_dir) / "engine.log").read_text().splitlines()]
    assert any(entry["event"] == "guard.child_stderr" and entry["candidate"] == "c0003"
               and "about to fault" in entry["tail"] for entry in logged)


async def test_agent_that_raises_is_relaunched(campaign_config) -> None:
    calls = {"n": 0}

    def script(context: AgentContext) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("provider bug")
        return FAST

    # One position: had the failed attempt spent it, the relaunched agent would get none (0 candidates).
    config = campaign_config(budget=1, plateau=None)
    summary = await Campaign(config, provider=ScriptedProvider(script)).run()
    events = list(read_events(Path(summary.run_dir) / "events.jsonl"))
    failures = [e for e in events if isinstance(e, AgentFailed)]
    assert len(failures) == 1 and failures[0].relaunch and "provider bug" in failures[0].error
    assert summary.candidates == 1  # the failed attempt gave its position back


async def test_plateau_stops_the_campaign(campaign_config) -> None:
    slow = scale_source("out = torch.empty_like(x)\nfor i in range(x.numel()):\n    out[i] = x[i] * 2 + 1\n"
                        "return out")
    config = campaign_config(agents=2, budget=20, plateau=2)
    summary = await Campaign(config, provider=ScriptedProvider([slow], cycle=True)).run()
    assert summary.stop_reason.startswith("plateau")
    assert summary.candidates < 20
    stopped = [e for e in read_events(Path(summary.run_dir) / "events.jsonl") if isinstance(e, CampaignStopped)]
    assert len(stopped) == 1


async def test_target_speedup_stops_the_campaign(campaign_config) -> None:
    config = campaign_config(budget=6, target_speedup=0.01, plateau=None)
    summary = await Campaign(config, provider=ScriptedProvider([FAST], cycle=True)).run()
    assert summary.stop_reason.startswith("target speedup")
    assert summary.candidates == 1


async def test_the_time_limit_counts_from_the_campaigns_start(campaign_config, tmp_path: Path) -> None:
    # A seed that takes 2 s to import, under a 1 s limit: the seed is still judged (the incumbent), and the agents,
    # which would have had a second of their own had the limit counted from their start, propose nothing.
    problem = tmp_path / "slow_seed"
    shutil.copytree(SCALE, problem)
    seed = problem / "seed.py"
    seed.write_text("import time\n\ntime.sleep(2.0)\n" + seed.read_text())
    config = campaign_config(problem=str(problem), budget=6, time_limit_s=1.0, plateau=None)
    summary = await Campaign(config, provider=ScriptedProvider([FAST], cycle=True)).run()
    assert summary.stop_reason == "time limit reached"
    proposed = [e for e in read_events(Path(summary.run_dir) / "events.jsonl") if isinstance(e, CandidateProposed)]
    assert [e.candidate_id for e in proposed] == ["c0000"]


@pytest.mark.parametrize("scope", ["shared", "private"])
async def test_memory_scope_recorded(campaign_config, scope: str) -> None:
    """Every KEEP and REVERT leaves a conclusion; shared memory owns none of them, private memory its agent's."""
    # Each agent's first FAST beats the seed (a KEEP each); the third candidate is wrong, a REVERT every time. A
    # second FAST per agent (as this test once ran) cost more children and only sometimes gave a REVERT.
    script = [FAST, FAST, scale_source("return x * 3 + 1")]
    config = campaign_config(agents=2, budget=len(script), memory=scope, plateau=None)
    summary = await Campaign(config, provider=ScriptedProvider(script)).run()
    run_dir = Path(summary.run_dir)
    concluded = [e for e in decisions_by_candidate(run_dir).values()
                 if e.decision in ("KEEP", "REVERT") and e.agent_id != "seed"]
    assert concluded  # each agent's first FAST beats the seed: a KEEP at least
    assert sorted(e.decision for e in concluded) == ["KEEP", "KEEP", "REVERT"]
    # The campaign's cache variables are read after the fork: every child comes from the warm zygote.
    assert "guard.cold_spawn" not in (run_dir / "engine.log").read_text()
    rows = sqlite3.connect(run_dir / "campaign.db").execute("SELECT owner, agent_id FROM memory").fetchall()
    assert len(rows) == len(concluded)
    if scope == "shared":
        assert {owner for owner, _ in rows} == {None}
    else:
        assert all(owner == agent for owner, agent in rows)
        assert {owner for owner, _ in rows} == {e.agent_id for e in concluded}


async def test_the_leaderboard_shows_each_best_once_it_is_announced(tmp_path: Path) -> None:
    """The leaderboard is kept one entry at a time: whenever a new best is announced it must be on the board, and
    at the end the board must equal one built afresh from the agents' states, best first."""
    from arcengine.domain.events import BestImproved, Event
    from arcengine.engine.config import CampaignConfig
    from arcengine.engine.testing import StubGuard, SyntheticProvider

    announced: list[BestImproved] = []
    missed: list[BestImproved] = []  # not raised in the subscriber: the campaign would take it for the agent's

    class Checking:
        async def on_event(self, event: Event) -> None:
            if isinstance(event, BestImproved) and event.agent_id != "seed":
                board = {e.agent_id: (e.candidate_id, e.speedup) for e in campaign.leaderboard()}
                announced.append(event)
                if board.get(event.agent_id) != (event.candidate_id, event.speedup):
                    missed.append(event)

    config = CampaignConfig(problem="rmsnorm", agents=3, budget=40, plateau=None, out=tmp_path, leaderboard=True)
    campaign = Campaign(config, display=Checking(), provider=SyntheticProvider(),
                        guard_factory=lambda c: StubGuard(c.problem, c.bus))
    await campaign.run()
    assert len({e.agent_id for e in announced}) >= 2 and not missed  # more than one agent's best moved
    afresh = sorted(((a.id, a.state.best_id, a.state.best_speedup) for a in campaign.agents),
                    key=lambda entry: -(entry[2] or 0.0))
    assert [(e.agent_id, e.candidate_id, e.speedup) for e in campaign.leaderboard()] == afresh
    assert all(e.agent_id != "a1" for e in campaign.leaderboard(exclude="a1"))
