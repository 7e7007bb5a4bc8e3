"""The disk filling up: a clear STOP naming the file, nothing recorded corrupted, and the campaign resumable once
there is room again."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arcengine.domain.events import AgentFailed, CampaignStopped, CandidateDecided
from arcengine.recording.bus import Bus, RecordingError
from arcengine.recording.eventlog import EventLogWriter, read_events

PROCESS = Path(__file__).with_name("campaign_process.py")


async def test_a_full_disk_under_the_event_log_is_a_recording_error(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    (tmp_path / "events.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    writer = EventLogWriter(tmp_path / "events.jsonl")
    await writer.open()
    bus = Bus(writer)
    with pytest.raises(RecordingError, match="No space left on device"):
        await bus.publish(AgentFailed(agent_id="a1", error="x", relaunch=False))
    with pytest.raises(RecordingError):  # and nothing is attempted after it
        await bus.publish(AgentFailed(agent_id="a1", error="y", relaunch=False))
    await writer.close()


def _file_size_limit(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # so a write past the limit fails (EFBIG) instead of killing


def test_a_campaign_that_runs_out_of_room_stops_clearly_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    limited = subprocess.run([sys.executable, str(PROCESS), "start", str(out), "300"], capture_output=True,
                             text=True, timeout=300, preexec_fn=lambda: _file_size_limit(200_000), check=False)
    assert limited.returncode == 1
    (line,) = limited.stderr.strip().splitlines()  # one line, no traceback
    run_dir = next(out.iterdir())
    # The database's WAL or the log reaches the limit first, depending on the moment.
    assert line.startswith((f"arcengine: error: stopped: cannot write {run_dir / 'events.jsonl'}: File too large",
                            f"arcengine: error: stopped: cannot write the database {run_dir / 'campaign.db'}: "))
    assert f"arcengine run --resume {run_dir}" in line
    events = list(read_events(run_dir / "events.jsonl"))  # whatever was written parses (a cut last line aside)
    assert not any(isinstance(e, CampaignStopped) for e in events)
    with sqlite3.connect(run_dir / "campaign.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        decided_before = set(db.execute("SELECT candidate_id, decision FROM decisions").fetchall())

    resumed = subprocess.run([sys.executable, str(PROCESS), "resume", str(run_dir)], capture_output=True,
                             text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    events = list(read_events(run_dir / "events.jsonl"))
    decided = {(e.candidate_id, e.decision) for e in events if isinstance(e, CandidateDecided)}
    assert decided >= decided_before
    assert [e.reason for e in events if isinstance(e, CampaignStopped)] == ["candidate budget spent"]
