"""What the engine itself costs: a full campaign (event log, database, memory, leaderboard, display) with an
instant provider and a stub guard that answers at once (arcengine.engine.testing), so every second measured is the
engine's. Each configuration runs in a fresh process, so its peak RSS is its own.

    python bench/engine.py OUT.json [--candidates 10000] [--agents 1 8 64] [--repeats 3]

Per configuration: candidates per second (first proposal until the campaign is done), submit-to-decision
latency p50 and p99 (an agent's call to the guard until the decision is in its hands: logged and delivered),
the longer proposal-to-decision latency (from the proposal's event, so its log write too, to the decision's
event, from the log's timestamps) and peak RSS;
64 agents once more with the terminal UI attached (headless Textual, every event pushed to the view, as
``run --tui`` does) instead of the headless display. Each configuration runs ``--repeats`` times, in rounds; the
headline takes the median run, and for the UI's cost the median round's ratio of its two 64-agent runs. Every run
also times the loop's callbacks (``LoopClock``): in a UI run, the UI's share of the loop's time next to the
engine's, a figure this machine's drift from minute to minute does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.metadata
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import anyio
import numpy as np
from provenance import commit

from arcengine.console import HeadlessDisplay
from arcengine.domain.events import SEED_AGENT, CandidateDecided, CandidateProposed
from arcengine.engine.campaign import Campaign, Display
from arcengine.engine.config import CampaignConfig
from arcengine.engine.summary import CampaignSummary
from arcengine.engine.testing import StubGuard, SyntheticProvider
from arcengine.recording.eventlog import read_events


class LoopClock:
    """The event loop's busy time, split into the terminal UI's (Textual's tasks and callbacks, and the view's,
    which folds events at the UI's ticks) and the rest. Both shares come from the same run, so unlike the ratio of
    two runs' times they do not move with this machine's speed from one minute to the next. Installed in every run
    (about 1 us per callback), so it costs both configurations alike."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float, bool]] = []  # (wall time at the end, seconds, the UI's)

    def install(self) -> None:
        run = asyncio.events.Handle._run
        spans = self.spans

        def timed(handle: asyncio.events.Handle) -> None:
            started = time.perf_counter()
            run(handle)
            spans.append((time.time(), time.perf_counter() - started, _is_ui(handle)))

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]

    def in_window(self, start: float, end: float) -> dict[str, float]:
        busy = [(seconds, ui) for ended, seconds, ui in self.spans if start <= ended <= end]
        ui_s = sum(seconds for seconds, ui in busy if ui)
        loop_s = sum(seconds for seconds, _ in busy)
        return {"loop_busy_s": loop_s, "ui_loop_s": ui_s, "ui_share_of_engine_loop": ui_s / (loop_s - ui_s)}


def _is_ui(handle: asyncio.events.Handle) -> bool:
    callback = handle._callback  # type: ignore[attr-defined]
    owner = getattr(callback, "__self__", None)
    code = getattr(owner.get_coro(), "cr_code", None) if isinstance(owner, asyncio.Task) else getattr(
        getattr(callback, "__func__", callback), "__code__", None)
    return code is not None and ("/textual/" in code.co_filename or "/tui/" in code.co_filename)


CLOCK = LoopClock()


class TimedStubGuard(StubGuard):
    """The stub guard, recording how long each agent's submission took to come back decided: from the call to
    the decision in its hands (logged and delivered)."""

    submit_seconds: ClassVar[list[float]] = []  # one campaign per process

    async def submit(self, **submission: Any) -> CandidateDecided:
        started = time.perf_counter()
        try:
            return await super().submit(**submission)
        finally:
            if submission["agent_id"] != SEED_AGENT:
                self.submit_seconds.append(time.perf_counter() - started)


def campaign(agents: int, candidates: int, out: Path, display: Display | None) -> Campaign:
    config = CampaignConfig(problem="rmsnorm", agents=agents, budget=candidates, plateau=None, out=out)
    return Campaign(config, display=display, provider=SyntheticProvider(),
                    guard_factory=lambda c: TimedStubGuard(c.problem, c.bus))


async def run_headless(agents: int, candidates: int, out: Path) -> dict[str, Any]:
    """As ``arcengine run`` without --tui: the headless display is fed (its lines go nowhere)."""
    with open(os.devnull, "w", encoding="utf-8") as nowhere:
        return finished(await campaign(agents, candidates, out, HeadlessDisplay(nowhere)).run())


def finished(summary: CampaignSummary) -> dict[str, Any]:
    """The summary, with when the campaign was done: its files and database written, not only its stop logged."""
    return {**summary.model_dump(), "finished_ts": time.time()}


async def run_with_tui(agents: int, candidates: int, out: Path) -> dict[str, Any]:
    from arcengine_tui.app import CampaignApp, PushToView

    view = CampaignApp(None)

    async def drive() -> dict[str, Any]:
        summary = finished(await campaign(agents, candidates, out, PushToView(view)).run())
        view.exit(summary)
        return summary

    view.drive = drive
    await view.run_async(headless=True, size=(180, 50))
    return view.result  # type: ignore[return-value]


def measure(run_dir: Path, finished_ts: float) -> dict[str, float]:
    """Throughput from the first agent's proposal until the campaign was done; latency from submission to the
    decision in the agent's hands, and (longer) from the proposal's event to the decision's."""
    events = list(read_events(run_dir / "events.jsonl"))
    proposed = {e.candidate_id: e.ts for e in events if isinstance(e, CandidateProposed) and e.agent_id != SEED_AGENT}
    latencies = [e.ts - proposed[e.candidate_id] for e in events
                 if isinstance(e, CandidateDecided) and e.candidate_id in proposed]
    first = min(proposed.values())
    seconds = finished_ts - first
    submitted = TimedStubGuard.submit_seconds
    return {"candidates": len(latencies), "seconds": seconds, "candidates_per_s": len(latencies) / seconds,
            **CLOCK.in_window(first, finished_ts),
            "latency_p50_ms": float(np.percentile(submitted, 50)) * 1e3,
            "latency_p99_ms": float(np.percentile(submitted, 99)) * 1e3,
            "proposal_to_decision_p50_ms": float(np.percentile(latencies, 50)) * 1e3,
            "proposal_to_decision_p99_ms": float(np.percentile(latencies, 99)) * 1e3}


def one(agents: int, candidates: int, tui: bool) -> dict[str, Any]:
    import scipy.stats  # noqa: F401  the real guard imports it for its first comparison, the stub never does
    CLOCK.install()
    with tempfile.TemporaryDirectory() as out:
        runner = run_with_tui if tui else run_headless
        summary = anyio.run(runner, agents, candidates, Path(out))
        figures = measure(Path(summary["run_dir"]), summary["finished_ts"])
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"agents": agents, "tui": tui, **figures, "peak_rss_mb": peak_kib / 1024}


def _cpu_name() -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        return next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                    platform.machine())


def cpu_environment(command: str) -> dict[str, Any]:
    """Date, machine, versions and the command, for a CPU benchmark's result file."""
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": _cpu_name(), "cpus": len(os.sched_getaffinity(0)), "platform": platform.platform()},
        "versions": {"python": platform.python_version(), "arcengine": importlib.metadata.version("arcengine"),
                     "textual": importlib.metadata.version("textual"),
                     "pydantic": importlib.metadata.version("pydantic")},
        "command": command,
        "commit": commit(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--agents", type=int, nargs="*", default=[1, 8, 64])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each configuration; the median one counts")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single configuration, in this process
    parser.add_argument("--tui", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.candidates, args.tui)))
        return
    configurations = [*((a, False) for a in args.agents), (max(args.agents), True)]
    repeated: dict[tuple[int, bool], list[dict[str, Any]]] = {c: [] for c in configurations}
    # Round after round of every configuration, not one configuration's repeats in a row: this machine's
    # speed drifts within minutes, and the UI's cost is a ratio of two configurations' times.
    for _ in range(args.repeats):
        for agents, tui in configurations:
            command = [sys.executable, __file__, str(args.out), "--candidates", str(args.candidates), "--one",
                       str(agents), *(["--tui"] if tui else [])]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            repeated[agents, tui].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(repeated[agents, tui][-1]), flush=True)
    runs = [run for configuration in configurations for run in repeated[configuration]]
    median = {c: sorted(repeated[c], key=lambda r: r["seconds"])[len(repeated[c]) // 2] for c in configurations}
    most = max(args.agents)
    headless = median[most, False]
    # The UI's cost within each round (its run follows the headless one), then the median round: the
    # machine's speed drifts between rounds more than the UI costs.
    ui_costs = [tui["seconds"] / alone["seconds"] - 1 for alone, tui in zip(repeated[most, False],
                                                                           repeated[most, True], strict=True)]
    result = {
        **cpu_environment("python bench/engine.py OUT " + " ".join(sys.argv[2:])),
        "headline": {
            f"candidates_per_s_{most}_agents": headless["candidates_per_s"],
            f"p99_ms_{most}_agents": headless["latency_p99_ms"],
            f"proposal_to_decision_p99_ms_{most}_agents": headless["proposal_to_decision_p99_ms"],
            "rss_mb_10k": headless["peak_rss_mb"],
            "tui_cost_fraction": float(np.median(ui_costs)),
            # the same cost from within each UI run: the UI's loop time over the engine's (median of the runs)
            "tui_loop_share": float(np.median([run["ui_share_of_engine_loop"] for run in repeated[most, True]])),
        },
        "tui_cost_fraction_per_round": ui_costs,
        "median_runs": list(median.values()),
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["headline"], indent=1))


if __name__ == "__main__":
    main()
