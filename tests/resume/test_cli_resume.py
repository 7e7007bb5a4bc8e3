"""The real thing: ``arcengine run`` with the real guard, kill -9 while a candidate is in a guard child, then
``arcengine run --resume``; and what resuming refuses, in one line each."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from arcengine.domain.events import SEED_AGENT, CampaignResumed, CampaignStopped, CandidateDecided, CandidateProposed
from arcengine.recording.eventlog import read_events
from tests.conftest import SCALE

ARCENGINE = [sys.executable, "-m", "arcengine.cli"]


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose environment names ``text`` (guard children get the run folder's kernel cache)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.heavy
def test_the_cli_resumes_a_campaign_killed_while_the_guard_judged_a_candidate(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    engine = subprocess.Popen([*ARCENGINE, "run", str(SCALE), "--agents", "2", "--budget", "4", "--device", "cpu",
                               "--seeds", "1", "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    logs = lambda: list(out.glob("*/events.jsonl"))  # noqa: E731

    def first_candidate_proposed() -> bool:
        return bool(logs()) and b'"candidate_id":"c0001"' in logs()[0].read_bytes()

    assert _wait_for(first_candidate_proposed, 300), engine.stderr.read().decode() if engine.stderr else ""
    time.sleep(0.3)  # its guard child is starting or running
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    run_dir = logs()[0].parent
    # The guard's processes die with the engine: none is left to load the GPU of the resumed campaign.
    assert _wait_for(lambda: not _processes_mentioning(str(run_dir)), 30), _processes_mentioning(str(run_dir))

    resumed = subprocess.run([*ARCENGINE, "run", "--resume", str(run_dir)], capture_output=True, text=True,
                             timeout=600, check=False)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed after event" in resumed.stdout
    events = list(read_events(run_dir / "events.jsonl"))
    resumes = [e for e in events if isinstance(e, CampaignResumed)]
    assert len(resumes) == 1 and resumes[0].interrupted  # c0001 (at least) was in flight
    proposals = [e for e in events if isinstance(e, CandidateProposed) and e.agent_id != SEED_AGENT]
    decided = Counter(e.candidate_id for e in events if isinstance(e, CandidateDecided) and e.agent_id != SEED_AGENT)
    assert sorted(e.position for e in proposals) == [1, 2, 3, 4]
    assert decided == Counter({e.candidate_id: 1 for e in proposals})
    assert [e.reason for e in events if isinstance(e, CampaignStopped)] == ["candidate budget spent"]

    again = subprocess.run([*ARCENGINE, "run", "--resume", str(run_dir)], capture_output=True, text=True,
                           check=False)
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        f"arcengine: error: {run_dir.name} already finished (candidate budget spent); start a new campaign instead"]


@pytest.mark.parametrize(("args", "message"), [
    (["run", "--resume", "{tmp}"], "is not a run folder (no events.jsonl)"),
    (["run", "--resume", "{tmp}", "--budget", "9"], "--resume continues with the recorded settings; drop budget"),
    (["run", "rmsnorm", "--resume", "{tmp}"], "--resume continues with the recorded settings; drop problem"),
    (["run"], "give a PROBLEM to start a campaign, or --resume RUN_DIR to continue one"),
])
def test_what_resume_refuses_is_said_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run([*ARCENGINE, *(a.format(tmp=tmp_path) for a in args)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_a_log_damaged_before_its_last_line_is_not_resumed(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text('{"v":1,"seq":1,"type":"campaign_started"}\nnot json\n{}\n')
    before = (tmp_path / "events.jsonl").read_bytes()
    done = subprocess.run([*ARCENGINE, "run", "--resume", str(tmp_path)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"arcengine: error: cannot resume: {tmp_path / 'events.jsonl'}:1: not a valid event")
    assert line.endswith("the log is damaged before its last line")
    assert (tmp_path / "events.jsonl").read_bytes() == before  # nothing recorded is touched
