"""One writer per run folder (an flock, released by the kernel when its holder dies), ``arcengine runs`` (each run's
problem, best, decisions and state) and ``arcengine clean`` (finished runs and the imported-problem cache, never a
live run). Real processes hold the locks; the run folders are real event logs and real SQLite databases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from arcengine.domain.events import CandidateDecided, Event
from arcengine.engine.campaign import Campaign
from arcengine.engine.config import CampaignConfig
from arcengine.engine.testing import StubGuard, SyntheticProvider
from arcengine.recording.db_worker import apply_lines, connect
from arcengine.recording.eventlog import read_events
from arcengine.recording.runlock import LOCK_NAME, RunBusy, RunLock, holder, locked
from arcengine.tools.runs import list_runs
from tests.tui.campaign_log import campaign_events, lines, stop_events

HOLD = ("import sys\nfrom pathlib import Path\nfrom arcengine.recording.runlock import RunLock\n"
        "lock = RunLock.acquire(Path(sys.argv[1]))\nprint('locked', flush=True)\nsys.stdin.read()\n")


def arcengine(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ARCENGINE_")}
    return subprocess.run([sys.executable, "-m", "arcengine.cli", *args], capture_output=True, text=True,
                          env={**environment, **(env or {})}, check=False)


def hold(run_dir: Path) -> subprocess.Popen[str]:
    """Another process that holds the folder's lock until its stdin closes (or it is killed)."""
    holder_process = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
    assert holder_process.stdout is not None and holder_process.stdout.readline() == "locked\n"
    return holder_process


def write_run(run_dir: Path, events: list[Event], database: bool = True, cut: str = "") -> Path:
    """A run folder as a campaign leaves it: the log (with ``cut``, a last line a writer had half written) and the
    database projected from the same events."""
    run_dir.mkdir(parents=True)
    (run_dir / "events.jsonl").write_text(lines(events) + cut, encoding="utf-8")
    if database:
        db = connect(run_dir / "campaign.db")
        apply_lines(db, lines(events).encode().splitlines())
        db.close()
    return run_dir


def finished(run_dir: Path) -> Path:
    events = campaign_events()
    return write_run(run_dir, events + stop_events(events[-1].seq + 1))


# -- the lock ---------------------------------------------------------------------------------------------------------

def test_resume_of_a_live_run_is_refused_in_one_line_and_cuts_nothing(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "live", campaign_events(), cut='{"v":1,"seq":99,"type":"candid')
    before = (run_dir / "events.jsonl").read_bytes()
    writer = hold(run_dir)
    try:
        refused = arcengine("run", "--resume", str(run_dir))
        assert refused.returncode == 2
        (line,) = refused.stderr.strip().splitlines()
        assert line == (f"arcengine: error: {run_dir} is being written by another arcengine process "
                        f"(pid {writer.pid}); wait for it to stop, or stop it first")
        assert (run_dir / "events.jsonl").read_bytes() == before  # the writer's half line is still there
        assert [row.state for row in list_runs(tmp_path)] == ["running"]
    finally:
        writer.kill()
        writer.wait()
    # The kernel released the lock with the process: nothing to clear by hand, and the run reads as crashed.
    assert not locked(run_dir)
    assert [(row.state, row.pid) for row in list_runs(tmp_path)] == [("crashed", None)]
    RunLock.acquire(run_dir).release()


def test_a_lock_held_by_another_process_is_refused_until_it_exits(tmp_path: Path) -> None:
    tmp_path.joinpath("run").mkdir()
    writer = hold(tmp_path / "run")
    with pytest.raises(RunBusy, match=f"pid {writer.pid}"):
        RunLock.acquire(tmp_path / "run")
    assert writer.stdin is not None
    writer.stdin.close()  # it exits on its own
    writer.wait()
    lock = RunLock.acquire(tmp_path / "run")
    assert holder(tmp_path / "run") == {"pid": os.getpid(), "state": "running"}
    lock.release()


def test_a_campaign_holds_its_folder_and_one_stopped_by_the_user_says_so(tmp_path: Path) -> None:
    """The real engine (stand-in provider and guard): while it runs its folder is locked; cancelled (as Ctrl-C and
    q in the terminal UI cancel it) it leaves the folder unlocked and marked stopped, and it resumes."""
    seen: dict[str, bool] = {}
    scopes: list[anyio.CancelScope] = []

    class StopAfterFirstDecision:
        async def on_event(self, event: Event) -> None:
            if isinstance(event, CandidateDecided) and event.agent_id != "seed":
                seen["locked"] = locked(campaign.run_dir)
                scopes[0].cancel()

    config = CampaignConfig(problem="rmsnorm", agents=2, budget=50, plateau=None, out=tmp_path)
    campaign = Campaign(config, display=StopAfterFirstDecision(), provider=SyntheticProvider(),
                        guard_factory=lambda c: StubGuard(c.problem, c.bus))

    async def main() -> None:
        with anyio.CancelScope() as cancel:
            scopes.append(cancel)
            await campaign.run()

    anyio.run(main)
    assert seen == {"locked": True}
    assert not locked(campaign.run_dir) and holder(campaign.run_dir)["state"] == "stopped"
    (row,) = list_runs(tmp_path)
    assert row.state == "stopped" and row.decisions >= 1
    resumed = Campaign.resume(campaign.run_dir, provider=SyntheticProvider(),
                              guard_factory=lambda c: StubGuard(c.problem, c.bus))
    summary = anyio.run(resumed.run)
    assert summary.stop_reason == "candidate budget spent"
    (row,) = list_runs(tmp_path)
    assert row.state == "finished" and row.decisions == 50


# -- arcengine runs -----------------------------------------------------------------------------------------------

def test_runs_lists_problem_best_decisions_and_state(tmp_path: Path) -> None:
    finished(tmp_path / "a-finished")
    write_run(tmp_path / "b-crashed", campaign_events())
    write_run(tmp_path / "ablate-scale" / "single" / "c-no-database", campaign_events(), database=False)
    (tmp_path / "not-a-run").mkdir()
    result = arcengine("runs", "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    rows = {Path(row["run_dir"]).name: row for row in json.loads(result.stdout)}
    assert set(rows) == {"a-finished", "b-crashed", "c-no-database"}
    assert rows["a-finished"]["state"] == "finished"
    assert rows["a-finished"]["stop_reason"] == "candidate budget spent"
    assert rows["b-crashed"]["state"] == "crashed" and rows["b-crashed"]["stop_reason"] is None
    for row in rows.values():  # the database and the log (where there is no database) say the same
        assert (row["problem"], row["decisions"], row["best"], row["best_candidate"]) == ("scale", 5, 1.4, "c0001")
        assert row["budget"] == 6
    table = arcengine("runs", "--out", str(tmp_path))
    assert table.returncode == 0
    assert any("a-finished" in line and "1.400x" in line and "5/6" in line and line.endswith("finished")
               for line in table.stdout.splitlines())


def test_runs_reads_the_folder_named_by_its_variable(tmp_path: Path) -> None:
    finished(tmp_path / "one")
    result = arcengine("runs", "--json", env={"ARCENGINE_OUT": str(tmp_path)})
    assert [Path(row["run_dir"]).name for row in json.loads(result.stdout)] == ["one"]


# -- arcengine clean ----------------------------------------------------------------------------------------------

def _age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_clean_removes_old_finished_runs_and_cache_never_a_live_or_resumable_one(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old = finished(runs / "old")
    new = finished(runs / "new")
    crashed = write_run(runs / "crashed", campaign_events())
    live = finished(runs / "live")  # finished by its log, but a process holds it (a resume starting)
    for folder in (old, crashed, live):
        _age(folder / "events.jsonl", 10)
    cache = tmp_path / "cache" / "arcengine" / "imported"
    (cache / "stale-0123456789").mkdir(parents=True)
    (cache / "fresh-0123456789").mkdir()
    _age(cache / "stale-0123456789", 10)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    writer = hold(live)
    try:
        planned = arcengine("clean", "--out", str(runs), "--older-than", "7d", "--dry-run", "--json", env=env)
        assert planned.returncode == 0, planned.stderr
        plan = json.loads(planned.stdout)
        assert plan["dry_run"] is True
        assert sorted(Path(item["path"]).name for item in plan["removed"]) == ["old", "stale-0123456789"]
        assert old.is_dir() and (cache / "stale-0123456789").is_dir()  # a dry run removes nothing

        done = arcengine("clean", "--out", str(runs), "--older-than", "7d", env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1].startswith("removed 2 folders")
        assert not old.exists() and not (cache / "stale-0123456789").exists()
        assert new.is_dir() and crashed.is_dir() and live.is_dir() and (cache / "fresh-0123456789").is_dir()

        everything = arcengine("clean", "--out", str(runs), "--all", "--unfinished", "--no-cache", "--json", env=env)
        removed = {Path(item["path"]).name for item in json.loads(everything.stdout)["removed"]}
        assert removed == {"new", "crashed"} and live.is_dir()  # never a running one
    finally:
        writer.kill()
        writer.wait()
    assert list((live / "events.jsonl").parent.iterdir())  # its files are all there
    assert list(read_events(live / "events.jsonl"))


def test_clean_keeps_an_imported_problem_a_resumable_run_needs(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "arcengine" / "imported"
    needed = cache / "kb-0123456789"
    needed.mkdir(parents=True)
    events = campaign_events()
    started = events[0].model_copy(update={"problem_dir": str(needed)})
    write_run(tmp_path / "runs" / "crashed", [started, *events[1:]])
    result = arcengine("clean", "--out", str(tmp_path / "runs"), "--all", "--json",
                       env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert json.loads(result.stdout)["removed"] == [] and needed.is_dir()


@pytest.mark.parametrize(("args", "needle"), [
    ([], "say what to remove: --older-than AGE (e.g. 7d) or --all"),
    (["--all", "--older-than", "1d"], "say what to remove"),
    (["--older-than", "soon"], "'soon' is not an age such as 30m, 12h or 7d"),
])
def test_clean_needs_an_age_or_all(tmp_path: Path, args: list[str], needle: str) -> None:
    result = arcengine("clean", "--out", str(tmp_path), *args)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert needle in line


def test_a_holder_killed_with_sigkill_leaves_no_stale_lock(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    writer = hold(tmp_path / "run")
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert (tmp_path / "run" / LOCK_NAME).is_file() and not locked(tmp_path / "run")
