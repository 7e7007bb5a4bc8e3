"""Timing shared by the benchmark scripts: several functions of one problem, per workload, in one process with
the guard's own timer (interleaved rounds, L2 flushed, a small pool of fresh inputs)."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from typing import Any

import torch
from provenance import commit

from arcengine.domain.problem import Workload
from arcengine.guard.child import timing
from arcengine.guard.child.ceilings import device_info

TIMING = timing.TimingConfig(warmup=5, min_reps=30, max_reps=400, target_rel_se=0.005,
                             max_seconds_per_workload=2.0)


def input_pool(problem_reference: Any, workload: Workload, device: torch.device, size: int) -> list[Any]:
    """The timing's input sets: fresh ones, so no function sees one set the whole time."""
    generators = [torch.Generator(device=device).manual_seed(7_000_000 + k) for k in range(size)]
    return [problem_reference.make_inputs(dict(workload.axes), generator, device) for generator in generators]


def time_workload(workload: Workload, fns: Mapping[str, Callable[..., object]], pool: list[Any],
                  device: torch.device, audit_role: str) -> dict[str, float]:
    """Median microseconds of each function on this workload, cycling through the input sets of ``pool``."""
    measure = timing.local_measure(fns, pool, timing.make_timer(device))
    measured = timing.time_interleaved(list(fns), measure, TIMING, random.Random(workload.index),
                                       audit_role=audit_role)
    return {role: measured.median_us(role) for role in fns}


class CampaignFailed(Exception):
    """``arcengine run`` exited non-zero; the message is its last line of stderr."""


class CampaignInterrupted(Exception):
    """``arcengine run`` was interrupted at ``interrupt_after``, as Ctrl-C stops it: its run folder can resume."""


def run_campaign(args: list[str], env: Mapping[str, str] | None = None,
                 interrupt_after: float | None = None) -> dict[str, Any]:
    """``arcengine run ARGS --json`` in a process of its own; its summary. Its lines stream to this stderr as they
    come, so a call cut short by its time limit still shows how far it got. With ``interrupt_after`` seconds, it
    gets SIGINT then (CampaignInterrupted), unless it ended before."""
    done, last, interrupted = _streamed(["run", *args, "--json"], env, interrupt_after)
    if interrupted:
        raise CampaignInterrupted(last)
    if done.returncode != 0:
        raise CampaignFailed(last or "no output")
    return json.loads(done.stdout)


def guard_eval(problem: str, candidate: str, device: str) -> dict[str, Any]:
    """``arcengine eval --json`` of one file in a process of its own: the guard's verdict and figures (a failing
    verdict is a figure too, recorded as it is), the baseline checked and timed beside the reference."""
    done, last, _ = _streamed(["eval", problem, candidate, "--device", device, "--json"])
    if not done.stdout.strip():
        raise CampaignFailed(f"eval of {candidate} printed nothing: {last}")
    return json.loads(done.stdout)


def _streamed(args: list[str], env: Mapping[str, str] | None = None, interrupt_after: float | None = None,
              ) -> tuple[subprocess.CompletedProcess[str], str, bool]:
    """An arcengine command: its stdout kept, its stderr copied here line by line; its last stderr line; and
    whether it was interrupted (SIGINT once ``interrupt_after`` seconds have passed)."""
    with tempfile.TemporaryFile("w+") as stdout:
        with subprocess.Popen([sys.executable, "-m", "arcengine.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, **(env or {})}) as process:
            fired = threading.Event()

            def stop() -> None:
                fired.set()
                process.send_signal(signal.SIGINT)

            interrupt = threading.Timer(interrupt_after or 0.0, stop)
            if interrupt_after is not None:
                interrupt.start()
            assert process.stderr is not None
            last = ""
            for line in process.stderr:
                sys.stderr.write(line)
                last = line.strip() or last
            process.wait()
            interrupt.cancel()
        stdout.seek(0)
        interrupted = fired.is_set() and process.returncode != 0
        return subprocess.CompletedProcess(process.args, process.returncode, stdout.read(), None), last, interrupted


def environment(device: torch.device) -> dict[str, Any]:
    """Date, device and versions, as every committed figure carries them."""
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": device_info(device),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "triton": _version("triton")},
        "commit": commit(),
    }




def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
