"""Why the run's database and file writers are helper processes (arcengine/recording/db_worker.py, file_worker.py)
and not the asyncio libraries the design first named, aiosqlite (a thread per connection) and aiofiles (a thread
pool). 64 agent tasks keep the event loop as busy as a fast campaign does: each builds its candidate's events (or
file), hands them to the writer, does its bookkeeping (pure Python, ``--work-us``) and sleeps, together
``--rate`` candidates a second. Every writer sits behind the engine's own BatchWriter (what queues up while a
batch is written goes in the next); only what does the writing differs:

- process: the engine's (arcengine.recording.helper: the batch sent over a pipe to a process of its own, which
  builds the rows or writes the files);
- aiosqlite / aiofiles: each event's rows built on the loop (aiosqlite takes parameters), one executemany per
  statement and a commit on aiosqlite's thread; each file opened, written and closed through aiofiles;
- thread: each batch written by one worker-thread call (anyio.to_thread), rows built there: the engine's design
  before the processes.

Per writer and round, in a fresh process: the candidates the agents managed per second, the event loop's lag (a
1 ms timer's lateness, p50 and p99), the time from hand-over to written (p50, p99), and CPU milliseconds per 1000
items in the engine's process (the loop's and its threads') and in the helper. The files exist already (each
round rewrites them, as the engine rewrites working and best copies): creating a file on this shared machine took
1 to 4 ms, depending on the hour, and would hide what is compared. Last, what the terminal UI's follower
(tui/follow.py) spends per tick reading what a campaign appended, synchronously and through aiofiles.

    pip install -e '.[bench]'   # aiosqlite and aiofiles
    python bench/recording_writers.py OUT.json [--events 8000] [--files 4000] [--rate 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiofiles
import aiosqlite
import anyio
import torch
from arcengine_tui.follow import EventFollower
from measure import environment

from arcengine.domain.events import CandidateDecided, CandidateProposed, WorkloadResult, dump_event
from arcengine.recording import db_worker, file_worker
from arcengine.recording.batching import BatchWriter
from arcengine.recording.helper import HelperProcess

AGENTS = 64
WRITERS = {"db": ("process", "aiosqlite", "thread"), "files": ("process", "aiofiles", "thread")}
SOURCE = "import torch\n\n\ndef run(x):\n    return x * 2.0  # a candidate's source, about 3 KB\n" * 40
Write = Callable[[list[Any]], Awaitable[None]]


def events(agent: int, step: int, seq: int) -> list[str]:
    """One candidate's two events as the log holds them (JSON lines): its proposal and its decision."""
    candidate = f"c{agent:02d}-{step:05d}"
    proposed = CandidateProposed(seq=seq, ts=time.time(), candidate_id=candidate, agent_id=f"a{agent}",
                                 position=step + 1, parent_id=None, strategy="tiling", rationale="bigger tiles",
                                 source=SOURCE)
    workloads = [WorkloadResult(index=i, axes={"M": 2 ** i, "N": 4096}, held_out=i == 3, correct=True,
                                time_us=10.0 + i, ref_time_us=20.0 + i, speedup=1.9, sol_score=0.4)
                 for i in range(4)]
    decided = CandidateDecided(seq=seq + 1, ts=time.time(), candidate_id=candidate, agent_id=f"a{agent}",
                               decision="REVERT", reason="0.98x the incumbent", correct=True, speedup=1.9,
                               workloads=workloads, device={"name": "cpu"})
    return [dump_event(proposed) + "\n", dump_event(decided) + "\n"]


# ---------------------------------------------------------------- the writers


def db_writer(kind: str, path: Path) -> tuple[Write, Callable[[], Awaitable[None]]]:
    """A batch of log lines into the campaign database, three ways; and how to close it."""
    db_worker.connect(path).close()  # the schema, as the engine makes it
    if kind == "process":
        helper = HelperProcess(db_worker.__name__, str(path), name="database writer")

        async def through_helper(texts: list[str]) -> None:
            assert (await helper.request("".join(texts).encode()))["ok"]

        return through_helper, helper.aclose
    if kind == "thread":
        db = db_worker.connect(path)

        async def in_a_thread(texts: list[str]) -> None:
            assert (await anyio.to_thread.run_sync(db_worker.write_batch, db, "".join(texts).encode()))["ok"]

        async def close_db() -> None:
            db.close()

        return in_a_thread, close_db
    opened: list[aiosqlite.Connection] = []

    async def with_aiosqlite(texts: list[str]) -> None:
        if not opened:
            opened.append(await aiosqlite.connect(path))
            await opened[0].execute("PRAGMA synchronous=NORMAL")
            await opened[0].execute("PRAGMA foreign_keys=ON")
        grouped: dict[str, list[Any]] = {}
        parsed = [json.loads(line) for text in texts for line in text.splitlines()]
        for event in parsed:
            for sql, rows in db_worker.statements(event):
                grouped.setdefault(sql, []).extend(rows)
        for sql, rows in grouped.items():  # one executemany per statement: the fewest hops aiosqlite allows
            await opened[0].executemany(sql, rows)
        await opened[0].execute("UPDATE progress SET last_seq = ?", (parsed[-1]["seq"],))
        await opened[0].commit()

    async def close_aiosqlite() -> None:
        if opened:
            await opened[0].close()

    return with_aiosqlite, close_aiosqlite


def file_writer(kind: str) -> tuple[Write, Callable[[], Awaitable[None]]]:
    """A batch of (path, data) files written three ways; and how to close the writer."""
    if kind == "process":
        helper = HelperProcess(file_worker.__name__, name="file writer")

        async def through_helper(files: list[tuple[str, bytes]]) -> None:
            payload = b"".join(pickle.dumps((path, data, False)) for path, data in files)
            assert (await helper.request(payload))["ok"]

        return through_helper, helper.aclose

    async def nothing() -> None:
        return None

    if kind == "thread":
        async def in_a_thread(files: list[tuple[str, bytes]]) -> None:
            await anyio.to_thread.run_sync(lambda: [file_worker.write_file(p, d, False) for p, d in files])

        return in_a_thread, nothing

    async def with_aiofiles(files: list[tuple[str, bytes]]) -> None:
        for path, data in files:
            async with aiofiles.open(path, "wb") as handle:
                await handle.write(data)

    return with_aiofiles, nothing


# ---------------------------------------------------------------- one round


class Probe:
    """What the loop and the writer did while the agents ran."""

    def __init__(self) -> None:
        self.lags_ms: list[float] = []
        self.latencies_ms: list[float] = []
        self.running = True

    async def tick(self) -> None:
        """A 1 ms timer's lateness: how long a ready callback waits for the loop."""
        while self.running:
            started = time.perf_counter()
            await anyio.sleep(0.001)
            self.lags_ms.append((time.perf_counter() - started - 0.001) * 1e3)

    def timed(self, write: Write) -> Write:
        """The writer, taking (hand-over time, item) pairs and noting each item's time until written."""
        async def write_timed(items: list[tuple[float, Any]]) -> None:
            await write([item for _, item in items])
            now = time.perf_counter()
            self.latencies_ms.extend((now - handed) * 1e3 for handed, _ in items)

        return write_timed


async def drive(candidates: int, make: Callable[[int, int], list[Any]], write: Write,
                close: Callable[[], Awaitable[None]], rate: float, work_us: float, probe: Probe) -> float:
    """The agents, ``rate`` candidates a second together, until ``candidates``; the seconds they took."""
    writer: BatchWriter[tuple[float, Any]] = BatchWriter(probe.timed(write))
    per_agent, pause = candidates // AGENTS, AGENTS / rate

    async def agent(index: int) -> None:
        for step in range(per_agent):
            for item in make(index, step):
                writer.put((time.perf_counter(), item))
            until = time.perf_counter() + work_us / 1e6
            while time.perf_counter() < until:  # the agent's own bookkeeping, in Python, holding the loop
                pass
            await anyio.sleep(pause)  # its provider, its guard

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(writer.run)
        tasks.start_soon(probe.tick)
        started = time.perf_counter()
        async with anyio.create_task_group() as agents:
            for index in range(AGENTS):
                agents.start_soon(agent, index)
        seconds = time.perf_counter() - started
        probe.running = False
        await writer.flush()
        tasks.cancel_scope.cancel()
    await close()
    return seconds


def one(scenario: str, kind: str, count: int, rate: float, work_us: float) -> dict[str, Any]:
    """One writer's round, in this (fresh) process."""
    probe = Probe()
    with tempfile.TemporaryDirectory() as folder:
        if scenario == "db":
            write, close = db_writer(kind, Path(folder) / "campaign.db")
            candidates = count // 2

            def make(agent: int, step: int) -> list[Any]:
                return events(agent, step, 2 * (agent * (candidates // AGENTS) + step) + 1)
        else:
            write, close = file_writer(kind)
            candidates = count

            def make(agent: int, step: int) -> list[Any]:
                return [(f"{folder}/c{agent:02d}-{step:05d}.py", SOURCE.encode())]

            for agent in range(AGENTS):  # the files exist: rewritten, not created (see the module's note)
                for step in range(candidates // AGENTS):
                    file_worker.write_file(*make(agent, step)[0], False)
        load = os.getloadavg()[0]  # this machine is shared: how busy it was says how far times can be read
        before = resource.getrusage(resource.RUSAGE_SELF)
        seconds = anyio.run(drive, candidates, make, write, close, rate, work_us, probe)
        after = resource.getrusage(resource.RUSAGE_SELF)
    helper = resource.getrusage(resource.RUSAGE_CHILDREN)  # the helper process, reaped when it was closed
    engine_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    lags, latencies = sorted(probe.lags_ms), sorted(probe.latencies_ms)
    return {"scenario": scenario, "writer": kind, "items": len(latencies), "load_average": load,
            "candidates_per_s": candidates / seconds, "loop_lag_p50_ms": statistics.median(lags),
            "loop_lag_p99_ms": lags[int(0.99 * (len(lags) - 1))],
            "written_after_p50_ms": statistics.median(latencies),
            "written_after_p99_ms": latencies[int(0.99 * (len(latencies) - 1))],
            "engine_cpu_ms_per_1000": 1e6 * engine_s / len(latencies),
            "helper_cpu_ms_per_1000": 1e6 * (helper.ru_utime + helper.ru_stime) / len(latencies)}


# ---------------------------------------------------------------- the terminal UI's reader


def follower_reads(count: int, chunk: int = 64, repeats: int = 3) -> dict[str, Any]:
    """Per tick, reading the bytes a campaign appended (``chunk`` events): synchronously (open, seek, read,
    close, as EventFollower does), through aiofiles, and EventFollower.read whole (parsing the events included)."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "events.jsonl"
        lines = [line for step in range(count // 2) for line in events(step % AGENTS, step, 2 * step + 1)]
        chunks = ["".join(lines[i:i + chunk]).encode() for i in range(0, len(lines), chunk)]

        def sync_read(offset: int) -> bytes:
            with open(log, "rb") as handle:
                handle.seek(offset)
                return handle.read()

        async def aiofiles_read(offset: int) -> bytes:
            async with aiofiles.open(log, "rb") as handle:
                await handle.seek(offset)
                return await handle.read()

        async def ticks() -> dict[str, list[float]]:
            times: dict[str, list[float]] = {"sync_read_us": [], "aiofiles_read_us": [], "follower_read_us": []}
            for _ in range(repeats):
                log.write_bytes(b"")
                follower, offset = EventFollower(log), 0
                for data in chunks:
                    with log.open("ab") as handle:
                        handle.write(data)
                    started = time.perf_counter()
                    sync_read(offset)
                    times["sync_read_us"].append((time.perf_counter() - started) * 1e6)
                    started = time.perf_counter()
                    await aiofiles_read(offset)
                    times["aiofiles_read_us"].append((time.perf_counter() - started) * 1e6)
                    started = time.perf_counter()
                    follower.read()
                    times["follower_read_us"].append((time.perf_counter() - started) * 1e6)
                    offset += len(data)
            return times

        measured = anyio.run(ticks)
    return {"events_per_tick": chunk, "ticks": len(chunks) * repeats,
            **{f"{name}_median": statistics.median(values) for name, values in measured.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--events", type=int, default=8000)
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--rate", type=float, default=1000.0, help="candidates a second, all agents together")
    parser.add_argument("--work-us", type=float, default=200.0, help="an agent's own Python work per candidate")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--one", nargs=3, metavar=("SCENARIO", "WRITER", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        scenario, kind, count = args.one
        print(json.dumps(one(scenario, kind, int(count), args.rate, args.work_us)))
        return
    rounds: list[dict[str, Any]] = []
    for round_index in range(args.repeats):  # rounds: each writer once per round, so drift hits all alike
        for scenario, kinds in WRITERS.items():
            count = args.events if scenario == "db" else args.files
            for kind in kinds:
                done = subprocess.run([sys.executable, __file__, "--one", scenario, kind, str(count), "--rate",
                                       str(args.rate), "--work-us", str(args.work_us)],
                                      capture_output=True, text=True, check=True)
                rounds.append({"round": round_index, **json.loads(done.stdout)})
                print(json.dumps(rounds[-1]), file=sys.stderr)
    figures = [key for key in rounds[0] if key not in ("round", "scenario", "writer", "items")]
    medians = [{"scenario": scenario, "writer": kind, **{
        key: statistics.median(r[key] for r in rounds if r["scenario"] == scenario and r["writer"] == kind)
        for key in figures}} for scenario, kinds in WRITERS.items() for kind in kinds]
    document = {**environment(torch.device("cpu")),
                "benchmark": "recording writers: a helper process, aiosqlite or aiofiles, a worker thread",
                "libraries": {name: importlib.metadata.version(name) for name in ("aiosqlite", "aiofiles", "anyio")},
                "agents": AGENTS, "rate": args.rate, "work_us": args.work_us,
                "command": f"python bench/recording_writers.py OUT --events {args.events} --files {args.files} "
                           f"--rate {args.rate:g} --work-us {args.work_us:g} --repeats {args.repeats}",
                "medians": medians, "follower": follower_reads(args.events), "rounds": rounds}
    if args.out:
        args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(json.dumps({"medians": medians, "follower": document["follower"]}, indent=2))


if __name__ == "__main__":
    main()
