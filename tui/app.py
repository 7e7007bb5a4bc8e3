"""The campaign TUI: a Textual app that folds events into a ``CampaignView`` and redraws on a timer.

Events come from ``events.jsonl`` (an ``EventFollower`` polled every ``refresh_s``, so a campaign in another
process never waits on the terminal) or from the campaign's own process (``queue_event``, folded together at the
next tick; ``push_events`` folds at once). Widgets are redrawn at most once per tick, so a burst of events costs
one redraw.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from arcengine_tui import render
from arcengine_tui.detail import CandidateScreen
from arcengine_tui.follow import EventFollower
from arcengine_tui.state import CampaignView
from arcengine_tui.table import RowTable
from rich.cells import cell_len
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Header, Sparkline, Static

from arcengine.domain.events import SEED_AGENT, Event

AGENT_COLUMNS = ("agent", "strategy", "phase", "plateau", "cands", "K/A/R/X", "best", "last", "tokens", "cost")
LEADER_COLUMNS = ("#", "agent", "best", "×base", "×seed", "candidate", "strategy")
FEED_COLUMNS = ("pos", "agent", "decision", "speedup", "candidate", "reason")
REASON_WIDTH = 90
CATCH_UP_S = 0.05  # reading time per tick while a long log is caught up on: the screen stays responsive
# At most this share of the loop's time goes to redrawing: the wait after a redraw grows with what it cost (up to
# REDRAW_WAIT_MAX_S), so a campaign whose events pour in, with a 64-agent table to redraw, is slowed by its screen
# by a few percent at most, while a quiet one still redraws several times a second.
REDRAW_SHARE = 0.02
REDRAW_WAIT_MAX_S = 2.5
FEED_ROWS = 500  # decisions the feed table holds at most while following the newest
FEED_KEPT = 100  # the newest it keeps when it would hold more: rebuilt once per 400 decisions, not per redraw
TRAJECTORY_POINTS = 512  # the sparkline gets at most these (it has a column per point it can show, about 170)
MAIN_ONLY = ("open", "open_best", "toggle_follow")  # actions that make sense on the main screen only


class CampaignApp(App[None]):
    """Live view of one campaign's run folder (or of events pushed to it)."""

    TITLE = "arcengine"
    CSS = """
    #budget { height: auto; padding: 0 1; background: $boost; }
    .pane { border: round $primary-darken-2; }
    .pane:focus, .pane:focus-within { border: round $accent; }
    #agents { height: auto; max-height: 40%; }
    #middle { height: 1fr; }
    #feed { width: 5fr; height: 100%; }
    #side { width: 3fr; }
    #leaderboard { height: auto; max-height: 50%; }
    #memory-pane { height: 1fr; padding: 0 1; }
    #trajectory-pane { height: 4; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("tab", "focus_next", "next pane", show=True),
        Binding("shift+tab", "focus_previous", "previous pane", show=False),
        Binding("o", "open", "open candidate"),
        Binding("b", "open_best", "best"),
        Binding("f", "toggle_follow", "follow newest"),
    ]

    def __init__(self, run_dir: Path | None = None, refresh_s: float = 0.25,
                 drive: Callable[[], Awaitable[Any]] | None = None) -> None:
        """``run_dir`` None: no file is followed and only ``push_events`` feeds the view. ``drive``: a coroutine
        (the campaign itself, for ``arcengine run --tui``) run on the app's loop; its result lands in ``result``."""
        super().__init__()
        self.drive = drive
        self.result: Any = None
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.refresh_s = refresh_s
        self.view = CampaignView()
        self.follower = EventFollower(self.run_dir / "events.jsonl") if self.run_dir is not None else None
        self.follow = True  # keep the feed's cursor on the newest decision
        self.read_error: str | None = None
        self._dirty = True
        self._queued: list[Event] = []  # handed over by the campaign, folded at the next tick
        self._next_redraw = 0.0  # monotonic time before which no redraw starts
        self._redraws = 0
        self._drawn: dict[str, object] = {}  # what each widget last showed, so an unchanged one is not touched
        self._feed_rows = 0  # feed entries drawn so far
        self._feed_first = 0  # the first one the feed table still holds
        # the main screen's widgets, held so a redraw reaches them while the detail screen is on top
        self.budget_bar = Static(id="budget")
        self.agents_table = self._table("agents", "agents", AGENT_COLUMNS)
        self.leaderboard_table = self._table("leaderboard", "leaderboard", LEADER_COLUMNS)
        self.feed_table = self._table("feed", "decisions", FEED_COLUMNS)
        self.memory_panel = Static(id="memory")
        self.trajectory_label = Static(id="trajectory-label")
        self.trajectory = Sparkline([], id="trajectory")

    # -- layout ------------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.budget_bar
        yield self.agents_table
        with Horizontal(id="middle"):
            yield self.feed_table
            with Vertical(id="side"):
                yield self.leaderboard_table
                with VerticalScroll(id="memory-pane", classes="pane") as memory:
                    memory.border_title = "memory"
                    yield self.memory_panel
        with Vertical(id="trajectory-pane", classes="pane") as trajectory:
            trajectory.border_title = "trajectory"
            yield self.trajectory_label
            yield self.trajectory
        yield Footer()

    @staticmethod
    def _table(widget_id: str, title: str, columns: tuple[str, ...]) -> RowTable:
        table = RowTable(columns, id=widget_id, classes="pane")
        table.border_title = title
        return table

    def on_mount(self) -> None:
        self.feed_table.focus()
        self.poll()
        self.set_interval(self.refresh_s, self.poll)

    def on_ready(self) -> None:
        """The screen is laid out and drawn: the campaign starts now, so the first layout (a tenth of a second, the
        costliest frame there is) is not paid for by its first candidates."""
        if self.drive is not None:
            self.run_worker(self._drive(), name="campaign", exit_on_error=False)

    async def _drive(self) -> None:
        try:
            self.result = await self.drive()  # type: ignore[misc]
        except Exception as error:  # shown, not raised: the view of what happened stays on screen
            self.notify(f"campaign failed: {error}", severity="error", timeout=30)
            return
        self.notify("campaign stopped; q quits", timeout=30)

    # -- feeding the view --------------------------------------------------------------------------------------

    def push_events(self, events: Iterable[Event]) -> None:
        """Fold events from the campaign's own process (call on the app's loop; from another thread use
        ``app.call_from_thread(app.push_events, events)``). Widgets catch up at the next tick."""
        if self.view.apply_all(events):
            self._dirty = True

    def queue_event(self, event: Event) -> None:
        """Hand over an event, folded with the others at the next tick: in a 64-agent campaign, folding each on its
        own in the campaign's step took a quarter more of the loop's time (the screen shows them at a tick
        anyway)."""
        self._queued.append(event)

    def poll(self) -> None:
        """One tick: fold what was handed over and read what the file gained, then redraw if anything changed."""
        if self._queued:
            queued, self._queued = self._queued, []
            self.push_events(queued)
        if self.follower is not None:
            started = time.monotonic()
            while True:  # a long log is caught up on in bounded reads, within a slice of each tick
                self._read_once(self.follower)
                if not self.follower.pending or time.monotonic() - started > CATCH_UP_S:
                    break
        # The campaign's end is drawn at the next tick, not after the wait a busy campaign's redraws keep to.
        if self._dirty and (self.view.status == "stopped" or time.monotonic() >= self._next_redraw):
            self.refresh_view()

    def _read_once(self, follower: EventFollower) -> None:
        try:
            events = follower.read()
            if self.read_error is not None:
                self.read_error, self._dirty = None, True
        except OSError as error:  # e.g. permissions: say so instead of crashing the screen
            events, self.read_error = [], f"{type(error).__name__}: {error}"
            self._dirty = True
        if follower.restarted:  # the log was replaced: start the view over
            self.view = CampaignView()
            self._reset_widgets()
        self.push_events(events)

    def _reset_widgets(self) -> None:
        for table in (self.agents_table, self.leaderboard_table, self.feed_table):
            table.clear()
        self._feed_rows = self._feed_first = 0
        self._drawn.clear()
        self._dirty = True
        if self.detail is not None:
            # Once it is on screen: a detail opened a moment ago may still be mounting, and popping it now would
            # remove the parts its own mounting is about to fill.
            self.call_after_refresh(self._pop_if_shown, self.detail)

    def _pop_if_shown(self, screen: CandidateScreen) -> None:
        if self.screen_stack[-1] is screen:
            self.pop_screen()

    # -- drawing -----------------------------------------------------------------------------------------------

    def refresh_view(self) -> None:
        """Redraw every widget from the view now (the timer calls it when events arrived, spaced by their cost)."""
        self._dirty = False
        started = time.monotonic()
        self._next_redraw = started + self.refresh_s
        self._redraws += 1
        view = self.view
        # Each screen's own subtitle, not the app's: every Header watches the app's, and one on a detail screen
        # being popped (a replaced log) would be asked to redraw after its parts were gone.
        self.screen_stack[0].sub_title = render.subtitle(view)
        budget = render.budget_line(view)
        if self.read_error:
            budget.append(f"  {self.read_error}", style="bold red")
        if self.follower is not None and self.follower.errors:
            budget.append(f"  ({len(self.follower.errors)} unreadable lines; last: {self.follower.errors[-1]})",
                          style="red")
        self._update_static(self.budget_bar, budget)
        self._draw_agents()
        self._draw_leaderboard()
        self._draw_feed()
        if self._changed("memory", tuple(view.memory)):
            self._update_static(self.memory_panel, render.memory_text(view))
        if self._changed("trajectory", (len(view.trajectory), len(view.best_curve))):
            self._update_static(self.trajectory_label, render.trajectory_label(view))
            self.trajectory.data = render.curve_points(view.best_curve, TRAJECTORY_POINTS)
        if self.detail is not None and self.detail.view is view:
            self.detail.sub_title = self.screen_stack[0].sub_title
            self.detail.refresh_view()
        self.call_after_refresh(self._space_redraws, started)

    def _space_redraws(self, started: float) -> None:
        """The redraw is on screen: wait long enough that redrawing keeps to its share of the time. (The first
        one lays the screen out, a cost paid once.)"""
        if self._redraws == 1:
            return
        now = time.monotonic()
        wait = min(REDRAW_WAIT_MAX_S, (now - started) * (1 - REDRAW_SHARE) / REDRAW_SHARE)
        self._next_redraw = max(self._next_redraw, now + wait)

    def _update_static(self, widget: Static, text: Text) -> None:
        """Show ``text``, with a layout of the screen (which renders every widget on it) only when its height may
        change: a redraw of a busy campaign asked for three. The height is known only while no line wraps."""
        width, lines = widget.content_size.width, text.plain.split("\n")
        height = len(lines) if width and all(cell_len(line) <= width for line in lines) else None
        widget.update(text, layout=self._changed(f"{widget.id} height", height) or height is None)

    def _changed(self, widget: str, shown: object) -> bool:
        """Whether ``widget`` must be redrawn to show ``shown`` (and remember that it will)."""
        if self._drawn.get(widget) == shown:
            return False
        self._drawn[widget] = shown
        return True

    def _draw_agents(self) -> None:
        table = self.agents_table
        for agent in self.view.agents.values():
            d = agent.decisions
            counts = "/".join(str(d.get(k, 0)) for k in ("KEEP", "ACCEPT", "REVERT", "REJECT"))
            row = (
                Text(agent.agent_id, style="bold"),
                Text(agent.strategy),
                render.phase_text(agent.phase),
                Text(str(agent.plateau), justify="right"),
                Text(str(agent.candidates), justify="right"),
                Text(counts),
                Text(render.speedup(agent.best_speedup), justify="right"),
                Text(agent.last_candidate_id or render.DASH),
                Text(render.tokens(agent.tokens), justify="right"),
                Text(render.dollars(agent.cost_usd), justify="right"),
            )
            # Only the rows that changed: each is drawn again.
            if not self._changed(f"agent {agent.agent_id}", [text.plain for text in row]):
                continue
            if agent.agent_id in table:
                table.update_row(agent.agent_id, *row)
            else:
                table.add_row(*row, key=agent.agent_id)

    def _draw_leaderboard(self) -> None:
        table = self.leaderboard_table
        if not self._changed("leaderboard", [(r.agent_id, r.speedup, r.candidate_id) for r in self.view.leaderboard]):
            return
        cursor = table.cursor_row
        table.clear()
        for rank, row in enumerate(self.view.leaderboard, start=1):
            style = "dim" if row.agent_id == SEED_AGENT else ""
            table.add_row(
                Text(str(rank), justify="right"),
                Text(row.agent_id, style=style or "bold"),
                Text(render.speedup(row.speedup, 3), justify="right", style=style),
                Text(render.speedup(row.over_baseline), justify="right", style=style),
                Text(render.speedup(row.over_seed), justify="right", style=style),
                Text(row.candidate_id or render.DASH, style=style),
                Text(row.strategy, style=style),
                key=row.agent_id,
            )
        if table.row_count:
            table.move_cursor(row=min(cursor, table.row_count - 1), animate=False, scroll=False)

    def _draw_feed(self) -> None:
        table = self.feed_table
        feed = self.view.feed
        start = self._feed_rows
        if self.follow and len(feed) - self._feed_first > FEED_ROWS:
            # Keep the newest rows only (all decisions are in the log and `arcengine report`): a table's new row
            # costs a measure of every cell, and a fast campaign brings thousands between two redraws.
            start = self._feed_first = len(feed) - FEED_KEPT
            table.clear()
        for index in range(start, len(feed)):
            entry = feed[index]
            verdict, position = entry.verdict, entry.candidate.position
            where = "seed" if position == 0 else f"#{position}" if position > 0 else "?"
            best = Text(render.speedup(verdict.speedup), justify="right",
                        style="bold green" if entry.campaign_best else "")
            if entry.campaign_best:
                best.append(" ★", style="bold yellow")
            table.add_row(
                Text(where, justify="right"),
                Text(verdict.agent_id, style="bold"),
                render.decision_text(verdict.decision),
                best,
                Text(verdict.candidate_id),
                Text(render.clip(verdict.reason, REASON_WIDTH)),
                key=str(index),
            )
        grew = len(feed) > self._feed_rows
        self._feed_rows = len(feed)
        if grew and self.follow:
            self._jump_to_newest()
        self._feed_subtitle()

    def _feed_subtitle(self) -> None:
        shown = f"newest {self.feed_table.row_count} of {self._feed_rows} · " if self._feed_first else ""
        following = "following newest" if self.follow else "paused (f: follow newest)"
        self.feed_table.border_subtitle = shown + following

    def _jump_to_newest(self) -> None:
        table = self.feed_table
        if table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)

    # -- interaction -------------------------------------------------------------------------------------------

    def on_row_table_row_highlighted(self, event: RowTable.RowHighlighted) -> None:
        """Moving the feed's cursor off the newest row by hand pauses following. (A highlight that is no longer
        where the cursor is, e.g. row 0 as the first rows arrive, is stale: the app has moved it since.)"""
        table = event.table
        if (table.id == "feed" and self.follow and event.cursor_row == table.cursor_row
                and event.cursor_row != table.row_count - 1):
            self.follow = False
            self._feed_subtitle()

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        candidate_id = self._candidate_at(event.table, event.row_key)
        if candidate_id is not None:
            self.open_candidate(candidate_id)

    def _candidate_at(self, table: RowTable, key: str | None) -> str | None:
        """The candidate a row of a main-screen table stands for."""
        if key is None:
            return None
        if table.id == "feed":
            return self.view.feed[int(key)].verdict.candidate_id
        if table.id == "agents":
            agent = self.view.agents.get(key)
            return agent.last_candidate_id if agent else None
        if table.id == "leaderboard":
            row = next((r for r in self.view.leaderboard if r.agent_id == key), None)
            return row.candidate_id if row else None
        return None

    @property
    def detail(self) -> CandidateScreen | None:
        """The candidate detail screen, when it is the one shown."""
        top = self.screen_stack[-1] if self.screen_stack else None
        return top if isinstance(top, CandidateScreen) else None

    def open_candidate(self, candidate_id: str) -> bool:
        """Show a candidate's detail screen; False if the view has no such candidate."""
        if candidate_id not in self.view.candidates:
            return False
        if self.detail is not None:
            self.pop_screen()
        screen = CandidateScreen(self.view, candidate_id)
        screen.sub_title = self.screen_stack[0].sub_title
        self.push_screen(screen)
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The main screen's keys are hidden and inert while a candidate's detail is shown."""
        return action not in MAIN_ONLY or self.detail is None

    def action_open(self) -> None:
        """Open the candidate under the focused table's cursor."""
        table = self.focused
        if isinstance(table, RowTable) and table.row_count:
            candidate_id = self._candidate_at(table, table.cursor_key)
            if candidate_id is not None:
                self.open_candidate(candidate_id)

    def action_open_best(self) -> None:
        best = self.view.best
        if best is not None:
            self.open_candidate(best.candidate_id)

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self._jump_to_newest()
        self._feed_subtitle()


class PushToView:
    """The display a campaign in the same process feeds: every event is pushed to the view, and a resumed
    campaign's past too."""

    def __init__(self, view: CampaignApp) -> None:
        self.view = view

    async def on_event(self, event: Event) -> None:
        self.view.queue_event(event)

    async def restore(self, events: list[Event]) -> None:
        self.view.push_events(events)
