"""Text for the TUI's widgets, from a ``CampaignView``: pure functions, so their wording is unit-testable and
every rendered time comes from event timestamps (snapshots stay deterministic)."""

from __future__ import annotations

from arcengine_tui.state import CampaignView, CandidateView, MemoryEntry
from rich.text import Text

from arcengine.domain.events import WorkloadResult
from arcengine.domain.run import Phase

DECISION_STYLES = {"KEEP": "bold green", "ACCEPT": "cyan", "REVERT": "yellow", "REJECT": "red"}
PHASE_STYLES = {Phase.PROPOSING: "cyan", Phase.DRAFTING: "bold cyan", Phase.JUDGING: "yellow",
                Phase.REFLECTING: "magenta", Phase.RELAUNCHING: "bold yellow", Phase.EXHAUSTED: "dim yellow",
                Phase.FAILED: "bold red", Phase.DONE: "dim"}
DASH = "—"


def speedup(value: float | None, digits: int = 2) -> str:
    return DASH if value is None else f"{value:.{digits}f}x"


def duration(seconds: float) -> str:
    """``M:SS`` under an hour, ``H:MM:SS`` above."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def tokens(count: int | float) -> str:
    """A compact count: 950, 12.3k, 1.25M."""
    if count < 1000:
        return f"{int(count)}"
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def dollars(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


def clip(text: str, limit: int) -> str:
    """One line, at most ``limit`` characters (the cut marked)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def decision_text(decision: str | None) -> Text:
    if decision is None:
        return Text("pending", style="dim")
    return Text(decision, style=DECISION_STYLES.get(decision, ""))


def phase_text(phase: str) -> Text:
    return Text(phase, style=PHASE_STYLES.get(phase, ""))


def budget_line(view: CampaignView) -> Text:
    """Candidates, time, tokens and dollars spent, each against its limit where the config sets one."""
    b = view.budget
    parts = [f"candidates {b.proposed}/{b.budget or '?'} ({b.decided} decided)"]
    parts.append(duration(b.elapsed_s) + (f"/{duration(b.time_limit_s)}" if b.time_limit_s else ""))
    used = f"tokens {tokens(b.tokens)}" + (f"/{tokens(b.max_tokens)}" if b.max_tokens else "")
    if b.cached_tokens:
        used += f" ({tokens(b.cached_tokens)} cached)"
    parts.append(used)
    parts.append(dollars(b.cost_usd) + (f"/{dollars(b.max_cost_usd)}" if b.max_cost_usd else ""))
    best = view.best
    if best is not None:
        parts.append(f"best {speedup(best.speedup, 3)} ({best.agent_id} {best.candidate_id})")
    line = Text(" · ".join(parts))
    line.append("  ")
    if view.status == "stopped":
        line.append(f"STOPPED: {view.stop_reason}", style="bold")
    elif view.status == "running":
        line.append("running", style="green")
    else:
        line.append("waiting for events", style="dim")
    return line


def subtitle(view: CampaignView) -> str:
    """Header subtitle: which campaign, on what, with which provider."""
    if not view.campaign_id:
        return "waiting for campaign_started"
    return f"{view.campaign_id} · {view.problem} ({view.kernel_type}) · {view.device} · {view.model}"


def curve_points(curve: list[float], most: int) -> list[float]:
    """At most ``most`` points of a rising curve (the campaign's best after each decision), each the curve's value at
    the end of its stretch: the sparkline's columns, each the highest of its points, come out the same, and a
    10,000-decision campaign no longer hands it 10,000 points at every redraw."""
    if len(curve) <= most:
        return list(curve)
    step = -(-len(curve) // most)  # ceiling division
    return curve[step - 1::step] if len(curve) % step == 0 else [*curve[step - 1::step], curve[-1]]


def trajectory_label(view: CampaignView, points: int = 6) -> Text:
    """The last few rises of the campaign's best, oldest first."""
    text = Text("best so far: ", style="bold")
    if not view.trajectory:
        text.append("no KEEP yet", style="dim")
        return text
    shown = view.trajectory[-points:]
    if len(view.trajectory) > points:
        text.append("… → ")
    for number, point in enumerate(shown):
        if number:
            text.append(" → ")
        where = "seed" if point.position == 0 else f"#{point.position} {point.agent_id}"
        text.append(speedup(point.speedup), style="bold green")
        text.append(f" ({where})")
    return text


def _memory_line(entry: MemoryEntry, width: int) -> Text:
    line = Text()
    if entry.kind == "win":
        line.append(f"{speedup(entry.speedup):>6} ", style="green")
    line.append(f"{entry.agent_id} ", style="bold")
    line.append(clip(entry.summary, width))
    return line


def memory_text(view: CampaignView, width: int = 200) -> Text:
    """Wins (best first) then traps (oldest first), one line each."""
    wins, traps = view.wins, view.traps
    text = Text()
    text.append(f"WINS ({len(wins)})\n", style="bold green")
    for entry in wins:
        text.append_text(_memory_line(entry, width))
        text.append("\n")
    text.append(f"TRAPS ({len(traps)})\n", style="bold red")
    for entry in traps:
        text.append_text(_memory_line(entry, width))
        text.append("\n")
    text.rstrip()
    return text


def diff_text(diff: str) -> Text:
    """A unified diff, coloured as ``git diff`` does."""
    text = Text()
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(line + "\n", style=style)
    text.rstrip()
    return text


def candidate_head(view: CampaignView, candidate: CandidateView) -> Text:
    """Who proposed the candidate, from what, why, and what the guard decided."""
    c, proposal, d = candidate, candidate.proposal, candidate.verdict
    text = Text()
    text.append(c.candidate_id, style="bold")
    where = "seed" if c.position == 0 else f"position {c.position}" if c.position > 0 else "position ?"
    text.append(f" · agent {c.agent_id} ({c.strategy or '?'}) · {where}")
    text.append(f" · parent {c.parent_id}" if c.parent_id else " · no parent")
    if proposal is not None and proposal.drafting:
        text.append(" · drafted", style="bold cyan")
    if c.tokens or c.cost_usd:
        text.append(f" · {tokens(c.tokens)} tokens, {dollars(c.cost_usd)}")
    text.append("\n")
    text.append_text(decision_text(d.decision) if d is not None else Text("waiting for the guard", style="yellow"))
    if d is not None:
        facts = [f"{speedup(d.speedup, 3)} the reference" if d.speedup is not None
                 else "incorrect" if d.correct is False else "no speedup measured"]
        if d.speedup_over_baseline is not None:
            facts.append(f"{speedup(d.speedup_over_baseline, 3)} the baseline")
        if d.held_out_speedup is not None:
            facts.append(f"held-out {speedup(d.held_out_speedup, 3)}")
        if d.vs_incumbent is not None:
            interval = d.vs_incumbent_interval
            ci = f" (95% CI {interval[0]:.3f}-{interval[1]:.3f})" if interval else ""
            facts.append(f"{d.vs_incumbent:.3f}x the incumbent{ci}")
        if d.confirmed is not None:
            checked = "suspicious, " if d.suspicious else ""
            facts.append(checked + ("confirmed" if d.confirmed else "not confirmed"))
        facts.append(f"guard {d.guard_seconds:.1f} s" + (f" on GPU {d.gpu}" if d.gpu is not None else ""))
        text.append("  " + " · ".join(facts))
        text.append("\nreason: ", style="bold")
        text.append(d.reason)
        if d.warnings:
            text.append("\nwarnings: ", style="bold yellow")
            text.append("; ".join(d.warnings))
    text.append("\nrationale: ", style="bold")
    text.append(clip(proposal.rationale if proposal is not None else "", 400))
    return text


def workload_row(w: WorkloadResult) -> tuple[Text, ...]:
    """One guard finding, as a row of the workloads table."""
    shape = ", ".join(f"{k}={v}" for k, v in w.axes.items())

    def us(value: float | None) -> str:
        return DASH if value is None else f"{value:.1f}"

    return (
        Text(str(w.index)),
        Text(shape),
        Text("held-out" if w.held_out else "visible", style="magenta" if w.held_out else ""),
        Text("yes", style="green") if w.correct else Text("NO", style="bold red"),
        Text(us(w.time_us), justify="right"),
        Text(us(w.ref_time_us), justify="right"),
        Text(speedup(w.speedup), justify="right"),
        Text(w.baseline_route or DASH),
        Text(speedup(w.speedup_over_baseline), justify="right"),
        Text(DASH if w.sol_score is None else f"{w.sol_score:.2f}", justify="right"),
        Text(clip(w.failure or "", 80), style="red"),
    )
