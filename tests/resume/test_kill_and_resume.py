"""kill -9 at random points, ``run --resume`` each time: nothing decided is lost, the log and the database agree.

The campaign runs in its own process with the real engine (bus, event log, SQLite, memory, agents) and stand-ins
for the provider and the guard (arcengine.engine.testing), so a kill can land anywhere in a step; a few kills of the
real CLI with the real guard follow in tests/test_cli.py.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from arcengine.domain.events import (
    SEED_AGENT,
    BestImproved,
    CampaignResumed,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    Event,
    MemoryEvicted,
    MemoryRecorded,
    ProviderCalled,
)
from arcengine.recording.eventlog import read_events

PROCESS = Path(__file__).with_name("campaign_process.py")
KILLS = 24
BUDGET = 800


def _launch(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(PROCESS), *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _wait_until_closed(run_dir: Path, timeout_s: float = 60.0) -> None:
    """Until no process holds a file of ``run_dir`` open (Linux: /proc/*/fd)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        holders = []
        for fd in Path("/proc").glob("[0-9]*/fd/*"):
            try:
                if Path(os.readlink(fd)).parent == run_dir:
                    holders.append(fd)
            except OSError:  # a process or descriptor that went away meanwhile
                continue
        if not holders:
            return
        time.sleep(0.05)
    raise AssertionError(f"files of {run_dir} still open after {timeout_s:g} s")


def _lines(log: Path) -> int:
    return log.read_bytes().count(b"\n") if log.exists() else 0


def _kill_at_a_random_point(process: subprocess.Popen[bytes], log: Path, rng: random.Random) -> bool:
    """SIGKILL once the log grew by a random number of lines, or (one kill in four) after a random moment,
    which may fall in start-up or in the restore; False if the campaign finished first."""
    if rng.random() < 0.25:
        deadline = time.monotonic() + rng.uniform(0.0, 1.2)
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.002)
    else:
        target = _lines(log) + rng.randint(1, 60)
        while _lines(log) < target and process.poll() is None:
            time.sleep(0.002)
    if process.poll() is not None:
        return False
    process.kill()
    process.wait()
    return True


def _kept(events: list[Event]) -> set[tuple[str, str]]:
    return {(e.candidate_id, e.decision) for e in events if isinstance(e, CandidateDecided)
            and e.decision in ("KEEP", "ACCEPT")}


def _check_log_and_database(run_dir: Path, events: list[Event], final: bool) -> None:
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # no gap, no repeat across the restarts
    with sqlite3.connect(run_dir / "campaign.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (last_seq,) = db.execute("SELECT last_seq FROM progress").fetchone()
        decisions = set(db.execute("SELECT candidate_id, decision FROM decisions").fetchall())
        proposed = {row[0] for row in db.execute("SELECT id FROM candidates")}
        memory = {row[0] for row in db.execute("SELECT id FROM memory")}
    seen = [e for e in events if e.seq <= last_seq]  # what the database has applied, exactly
    assert last_seq <= len(events) and (last_seq == len(events) if final else True)
    assert decisions == {(e.candidate_id, e.decision) for e in seen if isinstance(e, CandidateDecided)}
    assert proposed == {e.candidate_id for e in seen if isinstance(e, CandidateProposed)}
    live: dict[str, bool] = {}
    for e in seen:
        if isinstance(e, MemoryRecorded):
            live[e.entry_id] = True
        elif isinstance(e, MemoryEvicted):
            live.pop(e.entry_id, None)
    assert memory == set(live)


@pytest.mark.heavy
def test_a_campaign_killed_at_random_points_resumes_and_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    out = tmp_path / "runs"
    process = _launch("start", str(out), str(BUDGET))
    while not list(out.glob("*/events.jsonl")):  # the first kill needs a run folder to resume
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        time.sleep(0.01)
    run_dir = next(out.iterdir())
    log = run_dir / "events.jsonl"
    kills, kept_so_far, complete_lines = 0, set(), b""
    while kills < KILLS:
        if not _kill_at_a_random_point(process, log, rng):
            break
        kills += 1
        data = log.read_bytes()
        assert data.startswith(complete_lines)  # the log is append-only: nothing written before is changed
        complete_lines = data[: data.rfind(b"\n") + 1]
        events = list(read_events(log))  # a cut last line is skipped, anything else must parse
        kept = _kept(events)
        assert kept >= kept_so_far, f"kill {kills} lost {kept_so_far - kept}"
        kept_so_far = kept
        _check_log_and_database(run_dir, events, final=False)
        process = _launch("resume", str(run_dir))
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr.decode()[-2000:]
    assert kills == KILLS, f"the campaign finished after {kills} kills; raise BUDGET"

    events = list(read_events(log))
    _check_log_and_database(run_dir, events, final=True)
    assert _kept(events) >= kept_so_far
    stopped = [e for e in events if isinstance(e, CampaignStopped)]
    assert [s.reason for s in stopped] == ["candidate budget spent"]
    proposals = [e for e in events if isinstance(e, CandidateProposed) and e.agent_id != SEED_AGENT]
    assert sorted(e.position for e in proposals) == list(range(1, BUDGET + 1))  # every position used once
    decided = Counter(e.candidate_id for e in events if isinstance(e, CandidateDecided) and e.agent_id != SEED_AGENT)
    assert decided == Counter({e.candidate_id: 1 for e in proposals})  # in-flight ones judged once, on resume
    # Budgets count what was spent before the crashes: one provider call per position, no more.
    assert sum(isinstance(e, ProviderCalled) for e in events) == BUDGET
    # Every kept kernel is on disk, and best.py is the campaign's best.
    sources = {e.candidate_id: e.source for e in events if isinstance(e, CandidateProposed)}
    for candidate_id, _ in _kept(events):
        assert (run_dir / "candidates" / f"{candidate_id}.py").read_text() == sources[candidate_id]
    best = [e for e in events if isinstance(e, BestImproved) and e.campaign_best][-1]
    assert (run_dir / "best.py").read_text() == sources[best.candidate_id]
    assert stopped[0].best_candidate_id == best.candidate_id
    print(json.dumps({"kills_survived": kills, "kernels_lost": 0, "candidates": BUDGET,
                      "kept_or_accepted": len(_kept(events))}))


def test_a_damaged_database_is_rebuilt_from_the_log_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    process = _launch("start", str(out), "200")
    while not list(out.glob("*/events.jsonl")) or _lines(next(out.glob("*/events.jsonl"))) < 80:
        assert process.poll() is None
        time.sleep(0.01)
    process.kill()
    process.wait()
    run_dir = next(out.iterdir())
    _wait_until_closed(run_dir)  # the store's helper process outlives the campaign by a moment, and closes the WAL
    for damaged in run_dir.glob("campaign.db*"):  # the database and its write-ahead log: not a database any more
        damaged.write_bytes(b"\x00garbage" * (damaged.stat().st_size // 8 + 1))
    _, stderr = (resumed := _launch("resume", str(run_dir))).communicate(timeout=300)
    assert resumed.returncode == 0, stderr.decode()[-2000:]
    events = list(read_events(run_dir / "events.jsonl"))
    (resume,) = [e for e in events if isinstance(e, CampaignResumed)]
    assert resume.database_damaged and (run_dir / resume.database_damaged).is_file()  # kept, not deleted
    _check_log_and_database(run_dir, events, final=True)
