"""``arcengine runs`` and ``arcengine clean``: the run folders under a runs root, what each holds and whether a
process still writes it; and removing the finished ones (and the imported-problem cache) by age.

A run's figures come from its ``campaign.db`` (one small query each; the event log of a long run is hundreds of
megabytes of sources), its state from the log's ends and the folder's lock. Plain ``sqlite3``, not aiosqlite:
each read is a few milliseconds and the command has no event loop to share, where aiosqlite would only add a
thread per database (docs/cli.md).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from arcengine.domain.events import SEED_AGENT
from arcengine.domain.formats import cache_root
from arcengine.domain.run import RunState
from arcengine.recording.eventlog import EventLogError, read_events
from arcengine.recording.runlock import RunBusy, RunLock, holder, locked

State = Literal["running", "finished", "stopped", "crashed"]
SEARCH_DEPTH = 3  # runs/<id>, runs/ablate-P/<config>/<id>: run folders are not searched inside
TAIL_BYTES = 256 * 1024  # enough for the last whole event (a candidate's, with its source, is the longest)


class RunRow(BaseModel):
    """One run folder, as ``arcengine runs`` lists it (and ``--json`` gives it)."""

    run_dir: str
    campaign_id: str
    problem: str
    problem_dir: str | None
    state: State
    started: float  # Unix time of its first event
    last_write: float  # Unix time the event log last changed
    decisions: int  # the agents' decided candidates (the seeds' are not counted)
    budget: int | None
    best: float | None  # the best KEEP's speedup over the reference
    best_candidate: str | None
    stop_reason: str | None
    pid: int | None  # the writer's, while running


class Removal(BaseModel):
    """A folder ``arcengine clean`` removes (or, with --dry-run, would)."""

    path: str
    kind: Literal["run", "imported problem"]
    state: str | None  # a run's
    age_s: float
    bytes: int


def run_folders(root: Path, depth: int = SEARCH_DEPTH) -> Iterator[Path]:
    """Every folder under ``root`` with an event log, not looking inside one (its candidates are thousands)."""
    if (root / "events.jsonl").is_file():
        yield root
        return
    if depth == 0 or not root.is_dir():
        return
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.is_symlink():
            yield from run_folders(child, depth - 1)


def list_runs(root: Path) -> list[RunRow]:
    """The run folders under ``root``, oldest first; one whose log does not begin with a campaign is left out."""
    rows = [row for folder in run_folders(root) if (row := read_run(folder)) is not None]
    return sorted(rows, key=lambda row: row.started)


def read_run(folder: Path) -> RunRow | None:
    log = folder / "events.jsonl"
    first = _first_event(log)
    if first is None or first.get("type") != "campaign_started":
        return None
    last = _last_event(log)
    stop_reason = str(last.get("reason")) if last.get("type") == "campaign_stopped" else None
    state = run_state(folder, stop_reason is not None)
    figures = _from_database(folder / "campaign.db")
    # The database is written in batches after the log: one a stop or a crash left behind is folded from the log
    # instead (a live run's lag of a batch is left as it is: it is gone at the next look).
    if figures is None or (state != "running" and figures.pop("last_seq") < int(last.get("seq") or 0)):
        figures = _from_log(log)
    figures.pop("last_seq", None)
    config = first.get("config") or {}
    return RunRow(run_dir=str(folder), campaign_id=str(first.get("campaign_id", folder.name)),
                  problem=str(first.get("problem", "")), problem_dir=first.get("problem_dir"), state=state,
                  started=float(first.get("ts") or 0.0), last_write=log.stat().st_mtime, budget=config.get("budget"),
                  stop_reason=stop_reason, pid=holder(folder).get("pid") if state == "running" else None, **figures)


def run_state(folder: Path, stopped: bool) -> State:
    """running: a process holds its lock; finished: its log ends with the campaign's STOP; stopped: the user stopped
    it (Ctrl-C, q in the terminal UI); crashed: it ended any other way (killed, a crash). The last two resume."""
    if locked(folder):
        return "running"
    if stopped:
        return "finished"
    return "stopped" if holder(folder).get("state") == "stopped" else "crashed"


def _first_event(log: Path) -> dict | None:
    try:
        with log.open("rb") as f:
            event = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    return event if isinstance(event, dict) else None


def _last_event(log: Path) -> dict:
    """The log's last whole event, read from its end (a line a crash cut is passed over); {} if none."""
    try:
        with log.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - TAIL_BYTES))
            lines = f.read().split(b"\n")[1 if size > TAIL_BYTES else 0:]
    except OSError:
        return {}
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            return event
    return {}


def _from_database(path: Path) -> dict | None:
    """Decisions, the best and the STOP's reason from the run's database, read only (None: no readable database)."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return None
    try:
        (decisions,) = db.execute("SELECT COUNT(*) FROM decisions WHERE agent_id != ?", (SEED_AGENT,)).fetchone()
        best = db.execute("SELECT speedup, candidate_id FROM decisions WHERE decision = 'KEEP' AND speedup IS NOT NULL"
                          " ORDER BY speedup DESC, seq LIMIT 1").fetchone()
        (last_seq,) = db.execute("SELECT last_seq FROM progress").fetchone()
    except (sqlite3.Error, TypeError):  # damaged, or written before its schema: the log says the same
        return None
    finally:
        db.close()
    return {"decisions": int(decisions), "best": best[0] if best else None, "best_candidate": best[1] if best else None,
            "last_seq": int(last_seq)}


def _from_log(log: Path) -> dict:
    """The same figures folded from the event log (a run without a readable database)."""
    state = RunState()
    with contextlib.suppress(OSError, EventLogError):  # what was read before the damage stands
        state.apply_all(read_events(log))
    best = state.best
    return {"decisions": state.budget.decided, "best": best.speedup if best else None,
            "best_candidate": best.candidate_id if best else None}


# -- clean ----------------------------------------------------------------------------------------------------------

def clean_plan(root: Path, older_than_s: float | None, *, unfinished: bool = False, runs: bool = True,
               cache: bool = True, now: float | None = None) -> list[Removal]:
    """What ``clean`` removes: run folders under ``root`` that finished (and, with ``unfinished``, the stopped and
    crashed ones) and imported problems, last used more than ``older_than_s`` ago (None: any). Never a running
    run, nor an imported problem that a run under ``root`` that may still resume was started on."""
    now = time.time() if now is None else now
    plan: list[Removal] = []
    listed = list_runs(root) if root.is_dir() else []
    if runs:
        for row in listed:
            age = now - row.last_write
            if (row.state == "finished" or (unfinished and row.state in ("stopped", "crashed"))) and (
                    older_than_s is None or age > older_than_s):
                plan.append(Removal(path=row.run_dir, kind="run", state=row.state, age_s=age,
                                    bytes=_size(Path(row.run_dir))))
    if cache and cache_root().is_dir():
        kept = ("running",) if runs and unfinished else ("running", "stopped", "crashed")  # runs that stay
        needed = {Path(row.problem_dir).resolve() for row in listed if row.problem_dir and row.state in kept}
        for folder in sorted(cache_root().iterdir()):
            age = now - folder.stat().st_mtime
            if folder.is_dir() and folder.resolve() not in needed and (older_than_s is None or age > older_than_s):
                plan.append(Removal(path=str(folder), kind="imported problem", state=None, age_s=age,
                                    bytes=_size(folder)))
    return plan


def remove(plan: list[Removal]) -> tuple[list[Removal], list[str]]:
    """Remove what ``plan`` names; a run folder only while holding its lock (a resume that started since the plan
    was made keeps its folder). Returns what was removed and a line for each that was not."""
    removed: list[Removal] = []
    skipped: list[str] = []
    for item in plan:
        path = Path(item.path)
        if item.kind != "run":
            shutil.rmtree(path, ignore_errors=True)
            removed.append(item)
            continue
        try:
            lock = RunLock.acquire(path)
        except RunBusy as busy:
            skipped.append(str(busy))
            continue
        except OSError as error:
            skipped.append(f"{path}: {error.strerror or error}")
            continue
        try:
            shutil.rmtree(path)
            removed.append(item)
        except OSError as error:
            skipped.append(f"{path}: {error.strerror or error}")
        finally:
            lock.release()
    return removed, skipped


def _size(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            pass
    return total
