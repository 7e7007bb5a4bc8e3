"""The candidate detail screen: what the guard found per workload, and the source or its diff against the parent."""

from __future__ import annotations

from typing import ClassVar

from arcengine_tui import render
from arcengine_tui.state import CampaignView, CandidateView
from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

WORKLOAD_COLUMNS = ("#", "shape", "set", "correct", "time µs", "ref µs", "×ref", "baseline", "×base", "SOL",
                    "failure")


class TitleBar(Static):
    """The screen's title line. Not Textual's Header: a Header queues its first title update on the app as it
    mounts, and when its screen is popped at once (the log was replaced just after a candidate was opened) the
    update runs after the header's parts are gone and stops the app."""

    DEFAULT_CSS = """
    TitleBar { dock: top; width: 100%; height: 1; background: $panel; color: $foreground;
               content-align: center middle; text-wrap: nowrap; text-overflow: ellipsis; }
    """


class CandidateScreen(Screen[None]):
    """One candidate; it follows the view, so a candidate still at the guard fills in when it is decided."""

    DEFAULT_CSS = """
    CandidateScreen #detail-head { height: auto; padding: 0 1; background: $boost; }
    CandidateScreen .pane { border: round $primary-darken-2; }
    CandidateScreen .pane:focus, CandidateScreen .pane:focus-within { border: round $accent; }
    CandidateScreen #workloads { height: auto; max-height: 14; }
    CandidateScreen #code { height: 1fr; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("d", "toggle_code", "diff/source"),
        Binding("p", "parent", "parent"),
    ]

    def __init__(self, view: CampaignView, candidate_id: str) -> None:
        super().__init__()
        self.view = view
        self.candidate_id = candidate_id
        self.show_diff = True  # the diff is what a reviewer wants first; the seed has none and shows its source
        self._shown: tuple[str, str | None, bool] | None = None  # (candidate, decision, diff) now on screen
        self._ready = False  # mounted: its table has its columns

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Static(id="detail-head")
        table: DataTable[object] = DataTable(id="workloads", classes="pane", cursor_type="row",
                                                zebra_stripes=True)
        table.border_title = "guard: per workload"
        yield table
        with VerticalScroll(id="code", classes="pane") as code:
            code.border_title = "diff"
            yield Static(id="code-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#workloads", DataTable).add_columns(*WORKLOAD_COLUMNS)
        self._ready = True
        self.watch_sub_title()
        self.refresh_view()

    def watch_sub_title(self) -> None:
        if self._ready:
            self.query_one(TitleBar).update(self.app.format_title(self.app.title, self.sub_title or ""))

    @property
    def candidate(self) -> CandidateView:
        return self.view.candidates[self.candidate_id]

    def refresh_view(self) -> None:
        """Redraw what changed since the last call (cheap when nothing did); on_mount draws it first."""
        if not self._ready:  # pushed a moment ago: its table has no columns yet
            return
        candidate = self.candidate
        key = (candidate.candidate_id, candidate.decision, self.show_diff)
        if key == self._shown:
            return
        self._shown = key
        self.query_one("#detail-head", Static).update(render.candidate_head(self.view, candidate))
        table = self.query_one("#workloads", DataTable)
        table.clear()
        for workload in candidate.verdict.workloads if candidate.verdict is not None else ():
            table.add_row(*render.workload_row(workload))
        self._show_code(candidate)

    def _show_code(self, candidate: CandidateView) -> None:
        code = self.query_one("#code", VerticalScroll)
        body = self.query_one("#code-body", Static)
        parent = self.view.parent_of(candidate.candidate_id)
        if self.show_diff and parent is not None:
            diff = self.view.diff(candidate.candidate_id)
            code.border_title = f"diff {parent.candidate_id} → {candidate.candidate_id}"
            body.update(render.diff_text(diff) if diff else "(the same source as its parent)")
        else:
            why = "" if self.show_diff is False else " (no parent to diff against)"
            code.border_title = f"source of {candidate.candidate_id}{why}"
            body.update(Syntax(candidate.source or "# (no source)", "python", line_numbers=True, theme="ansi_dark",
                               word_wrap=False))
        code.scroll_home(animate=False)

    def action_toggle_code(self) -> None:
        self.show_diff = not self.show_diff
        self.refresh_view()

    def action_parent(self) -> None:
        parent = self.view.parent_of(self.candidate_id)
        if parent is None:
            self.notify(f"{self.candidate_id} has no parent in this log", severity="warning", timeout=2)
            return
        self.candidate_id = parent.candidate_id
        self.refresh_view()
