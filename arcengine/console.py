"""The headless display: a line per decision and a progress line, written to a text stream."""

from __future__ import annotations

import time
from typing import TextIO

from arcengine.domain.events import (
    AgentFailed,
    CampaignResumed,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
)
from arcengine.domain.problem import DEFAULT_SEEDS
from arcengine.domain.run import RunState
from arcengine.guard.child.baselines import REFERENCE_ROUTE
from arcengine.recording.redact import printable

PROGRESS_EVERY = 5


class HeadlessDisplay:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.state = RunState()  # the run's fold: counts, spending and the best, by the engine's own rules
        self.quiet = False
        self.devices = 0  # profiled; with several GPUs each decision line says which one measured it
        self.on_cpu = False  # interpreted Triton against native PyTorch: gains are shown over the seed
        self.started = time.monotonic()
        self._proposed: dict[str, CandidateProposed] = {}

    def share(self, state: RunState) -> None:
        """Read the campaign's own fold (its subscriber runs first; applying an event twice is a no-op)."""
        self.state = state

    def _print(self, line: str) -> None:
        """One line on the terminal, of printable characters only: a reason quotes what a candidate raised, and a
        terminal escape or a carriage return in it could erase this line and print another (red team round 9)."""
        if not self.quiet:
            print(printable(line), file=self.stream, flush=True)

    async def restore(self, events: list[Event]) -> None:
        """A resumed campaign's past, folded without printing it again: the progress lines go on from it."""
        self.quiet = True
        try:
            for event in events:
                await self.on_event(event)
        finally:
            self.quiet = False

    async def on_event(self, event: Event) -> None:
        self.state.apply(event)
        match event:
            case CampaignStarted():
                self._print(f"campaign {event.campaign_id}: {event.problem} ({event.kernel_type}), "
                            f"{event.config.get('agents')} agents, budget {self.state.budget.budget}, "
                            f"provider {event.config.get('model')}")
            case CampaignResumed():
                self.devices = 0  # profiled again
                decided = self.state.budget.decided
                self._print(f"resumed after event {event.after_seq}: {decided} candidates were decided"
                            + (f"; judging {', '.join(event.interrupted)} first (in flight at the crash)"
                               if event.interrupted else ""))
                if event.database_damaged:
                    self._print(f"the database was damaged: rebuilt from the event log ({event.database_damaged} "
                                "kept beside it)")
            case DeviceProfiled():
                gpu = f" (GPU {event.gpu})" if event.gpu is not None else ""
                self.devices += 1
                self._print(f"device {event.device.get('name')}{gpu}: {event.bandwidth_bytes_per_s / 1e9:.0f} GB/s, "
                            f"{event.flops_per_s / 1e12:.1f} TFLOP/s measured")
                if event.device.get("kind") == "cpu" and not self.on_cpu:
                    self.on_cpu = True
                    self._print("on the CPU, Triton kernels run in its interpreter against PyTorch's native ones, so "
                                "their ratio to the reference is far below 1: the lines show the gain over the seed")
            case CandidateProposed():
                self._proposed[event.candidate_id] = event
            case CandidateDecided():
                self._decided(event)
            case AgentFailed():
                self._print(f"agent {event.agent_id} failed: {event.error}"
                            + (" (relaunched)" if event.relaunch else " (not relaunched)"))
            case CampaignStopped():
                self._progress()
                self._print(f"STOP: {event.reason}")

    def _decided(self, event: CandidateDecided) -> None:
        proposed = self._proposed.pop(event.candidate_id, None)
        speed = f"{event.speedup:6.3f}x ref" if event.speedup else " " * 10
        if self.on_cpu and event.speedup and self.state.seed_speedup:
            speed = f"{event.speedup / self.state.seed_speedup:6.3f}x seed"
        elif self._baseline_shown(event):
            speed += f" {event.speedup_over_baseline:6.3f}x base"
        if proposed is None or proposed.position == 0:  # a seed: one of several is named by its file
            which = f" {proposed.seed_file}" if proposed and proposed.seed_file not in (None, DEFAULT_SEEDS[0]) else ""
            self._print(f"[seed{which}] {event.decision:<6} {speed}  {event.reason}")
            return
        note = proposed.rationale.split(" (", 1)[0] if event.decision in ("KEEP", "ACCEPT") else event.reason
        if event.suspicious and event.decision in ("KEEP", "ACCEPT"):  # a REVERT's reason already says why
            note = f"[suspicious speedup, confirmed by a fresh child] {note}"
        gpu = f" gpu{event.gpu}" if self.devices > 1 and event.gpu is not None else ""
        self._print(f"[{proposed.position:>4}/{self.state.budget.budget}] {event.agent_id:<4} {proposed.strategy:<14} "
                    f"{event.decision:<6} {speed}  {event.candidate_id}{gpu}  {note[:120]}")
        if self.state.budget.decided % PROGRESS_EVERY == 0:
            self._progress()

    @staticmethod
    def _baseline_shown(event: CandidateDecided) -> bool:
        """A decision line shows the gain over the baseline where one was measured (not the reference standing in)."""
        return event.speedup_over_baseline is not None and any(
            w.baseline_route not in (None, REFERENCE_ROUTE) for w in event.workloads)

    def _progress(self) -> None:
        state, spent = self.state, self.state.budget
        gain, over = state.best.speedup if state.best else None, ""
        if gain is not None and self.on_cpu and state.seed_speedup:
            gain, over = gain / state.seed_speedup, " the seed"
        best = f"best {gain:.3f}x{over} ({state.best.agent_id} {state.best.candidate_id})" if state.best \
            else "no best yet"
        tokens = f", {spent.tokens} tokens, ${spent.cost_usd:.2f}" if spent.tokens else ""
        elapsed = time.monotonic() - self.started
        self._print(f"-- {spent.decided}/{spent.budget} decided, {best}, {elapsed:.0f} s{tokens}")
