"""CampaignApp under Textual's pilot: attached to a run folder being written, keys, the candidate detail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from arcengine_tui.app import CampaignApp
from arcengine_tui.detail import CandidateScreen
from arcengine_tui.table import RowTable
from rich.syntax import Syntax
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from arcengine.domain.events import CandidateDecided, CandidateProposed, Event, dump_event
from tests.tui.campaign_log import append_log, campaign_events, lines, stop_events, write_log

REFRESH_S = 0.02
SIZE = (120, 36)


@pytest.fixture
def events() -> list[Event]:
    return campaign_events()


def index_of(events: list[Event], found: Callable[[Event], bool]) -> int:
    return next(i for i, e in enumerate(events) if found(e))


def decided_index(events: list[Event], candidate_id: str) -> int:
    return index_of(events, lambda e: isinstance(e, CandidateDecided) and e.candidate_id == candidate_id)


async def until(pilot: Pilot[None], condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Let the app's timer run until ``condition`` holds (redraws are spaced by their cost, up to 2.5 s apart on
    a slow machine; the timeout only keeps a broken app from hanging the suite)."""
    waited = 0.0
    while not condition():
        assert waited < timeout_s, "the app did not catch up"
        await pilot.pause(REFRESH_S)
        waited += REFRESH_S


def text_of(widget: Static) -> str:
    content = widget.content
    if isinstance(content, Syntax):
        return content.code
    return content.plain if isinstance(content, Text) else str(content)


def cell(table: RowTable, row: int, column: int) -> str:
    value = table.get_row_at(row)[column]
    return value.plain if isinstance(value, Text) else str(value)


async def test_attaches_to_a_run_folder_being_written(tmp_path: Path, events: list[Event]) -> None:
    seed_decided = decided_index(events, "c0000")
    path = write_log(tmp_path, events[: seed_decided + 1])
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.feed_table.row_count == 1)
        assert app.agents_table.row_count == 0
        assert "candidates 0/6" in text_of(app.budget_bar)
        assert str(app.screen.sub_title).startswith("scale-test · scale")

        # the agents start and a1's first candidate is proposed: at the guard
        at_guard = index_of(events, lambda e: isinstance(e, CandidateProposed) and e.candidate_id == "c0001")
        append_log(path, lines(events[seed_decided + 1 : at_guard + 1]))
        await until(pilot, lambda: app.agents_table.row_count == 2)
        assert cell(app.agents_table, 0, 2) == "waiting for the guard"
        assert "candidates 1/6" in text_of(app.budget_bar)

        # a decision arrives in two writes: nothing changes until its line is complete
        keep = decided_index(events, "c0001")
        append_log(path, lines(events[at_guard + 1 : keep]))
        line = dump_event(events[keep]) + "\n"
        append_log(path, line[:40])
        await pilot.pause(REFRESH_S * 5)
        assert app.feed_table.row_count == 1
        append_log(path, line[40:])
        await until(pilot, lambda: app.feed_table.row_count == 2)
        assert cell(app.feed_table, 1, 2) == "KEEP" and "★" in cell(app.feed_table, 1, 3)
        assert cell(app.agents_table, 0, 2) == "reflecting"

        # the rest of the campaign, then its stop
        append_log(path, lines(events[keep + 1 :]) + lines(stop_events(len(events) + 1)))
        await until(pilot, lambda: "STOPPED" in text_of(app.budget_bar))
        assert app.feed_table.row_count == 6
        assert app.feed_table.cursor_row == 5  # following the newest decision
        assert "candidates 5/6 (5 decided)" in text_of(app.budget_bar)
        assert [cell(app.leaderboard_table, r, 1) for r in range(3)] == ["a1", "seed", "a2"]
        memory = text_of(app.memory_panel)
        assert "addcmul" in memory and "float64" in memory and "in-place" not in memory  # m2 was evicted
        assert "1.40x (#1 a1)" in text_of(app.trajectory_label)
        assert app.trajectory.data == [1.0, 1.4, 1.4, 1.4, 1.4, 1.4]
        assert {cell(app.agents_table, r, 2) for r in range(2)} == {"done"}


async def test_select_a_candidate_in_the_feed_and_see_its_diff(tmp_path: Path, events: list[Event]) -> None:
    write_log(tmp_path, events)
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.feed_table.row_count == 6)
        assert app.focused is app.feed_table
        await pilot.press("up", "up")  # from c0005 to c0003
        assert not app.follow  # moving by hand pauses following
        await pilot.press("enter")
        await until(pilot, lambda: app.detail is not None)
        screen = app.detail
        assert isinstance(screen, CandidateScreen) and screen.candidate_id == "c0003"
        head = text_of(screen.query_one("#detail-head", Static))
        assert "c0003 · agent a1 (fusion) · position 3 · parent c0001" in head and "ACCEPT" in head
        assert "within the near-best band" in head
        workloads = screen.query_one("#workloads", DataTable)
        assert workloads.row_count == 3
        assert cell(workloads, 2, 2) == "held-out" and cell(workloads, 0, 6) == "1.31x"
        code = text_of(screen.query_one("#code-body", Static))
        assert code.startswith("--- c0001\n+++ c0003") and "+    # fused multiply-add, one pass over x" in code

        await pilot.press("d")  # the source instead of the diff
        assert "def run(x):" in text_of(screen.query_one("#code-body", Static))
        await pilot.press("d", "p")  # back to the diff, then to the parent
        assert screen.candidate_id == "c0001"
        code = text_of(screen.query_one("#code-body", Static))
        assert code.startswith("--- c0000\n+++ c0001") and "-    y = x * 2" in code

        await pilot.press("escape")
        assert app.detail is None and app.screen.query_one("#feed") is app.feed_table


async def test_keys(tmp_path: Path, events: list[Event]) -> None:
    write_log(tmp_path, events)
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.feed_table.row_count == 6)
        await pilot.press("f")
        assert not app.follow and "paused" in str(app.feed_table.border_subtitle)
        await pilot.press("home")
        await pilot.press("f")
        assert app.follow and app.feed_table.cursor_row == 5

        await pilot.press("b")  # the campaign's best
        assert app.detail is not None and app.detail.candidate_id == "c0001"
        await pilot.press("f")  # main-screen keys do nothing here
        assert app.follow
        await pilot.press("escape")

        assert app.focused is app.feed_table
        await pilot.press("shift+tab")  # from the feed back to the agents table
        assert app.focused is app.agents_table
        await pilot.press("down", "o")  # a2's newest candidate
        assert app.detail is not None and app.detail.candidate_id == "c0005"
        await pilot.press("escape", "tab", "tab")  # to the leaderboard
        assert app.focused is app.leaderboard_table
        await pilot.press("down", "enter")  # the seed's row
        assert app.detail is not None and app.detail.candidate_id == "c0000"
        assert "source of c0000" in str(app.detail.query_one("#code").border_title)  # no parent: the source
        await pilot.press("escape", "q")
        await pilot.pause()
    assert app.return_code == 0


async def test_a_candidate_at_the_guard_fills_in_when_decided(tmp_path: Path, events: list[Event]) -> None:
    at = decided_index(events, "c0005")
    path = write_log(tmp_path, events[:at])
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "c0005" in app.view.candidates)
        assert app.open_candidate("c0005")
        await pilot.pause()
        screen = app.detail
        assert screen is not None
        assert "waiting for the guard" in text_of(screen.query_one("#detail-head", Static))
        assert screen.query_one("#workloads", DataTable).row_count == 0
        append_log(path, lines(events[at:]))
        await until(pilot, lambda: "REVERT" in text_of(screen.query_one("#detail-head", Static)))
        assert screen.query_one("#workloads", DataTable).row_count == 3
        assert app.feed_table.row_count == 6  # the main screen kept up underneath
        assert not app.open_candidate("c9999")


async def test_events_pushed_by_the_campaigns_process() -> None:
    events = campaign_events()
    app = CampaignApp(None, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        app.push_events(events[:10])
        await until(pilot, lambda: app.agents_table.row_count == 2)
        app.push_events(events)  # overlapping: what was applied is not applied again
        await until(pilot, lambda: app.feed_table.row_count == 6)
        assert app.view.budget.proposed == 5
        assert app.follower is None


async def test_the_feed_keeps_the_newest_decisions_while_following(monkeypatch: pytest.MonkeyPatch,
                                                                    events: list[Event]) -> None:
    monkeypatch.setattr("arcengine_tui.app.FEED_ROWS", 4)
    monkeypatch.setattr("arcengine_tui.app.FEED_KEPT", 3)
    app = CampaignApp(None, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        app.push_events(events)
        await until(pilot, lambda: app.feed_table.row_count == 3)  # 6 decisions, the seed's included
        assert [cell(app.feed_table, r, 4) for r in range(3)] == ["c0003", "c0004", "c0005"]
        assert app.feed_table.cursor_row == 2
        assert app.feed_table.border_subtitle.startswith("newest 3 of 6")
        await pilot.press("up", "enter")  # a kept row still opens its candidate
        await until(pilot, lambda: app.detail is not None)
        assert app.detail is not None and app.detail.candidate_id == "c0004"


async def test_a_replaced_log_resets_the_view(tmp_path: Path, events: list[Event]) -> None:
    path = write_log(tmp_path, events)
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.feed_table.row_count == 6)
        app.open_candidate("c0001")
        replacement = tmp_path / "new.jsonl"
        replacement.write_text(lines(events[: decided_index(events, "c0000") + 1]), encoding="utf-8")
        replacement.replace(path)
        await until(pilot, lambda: app.feed_table.row_count == 1 and app.detail is None)
        assert app.view.budget.proposed == 0


@pytest.mark.parametrize("pauses", [0, 1, 2, 3])
async def test_a_candidate_opened_just_before_the_log_is_replaced_closes_cleanly(tmp_path: Path, events: list[Event],
                                                                                 pauses: int) -> None:
    """The detail screen is popped while it may still be mounting: neither it nor its title may fail then (a
    race CI hit, which stopped the app)."""
    write_log(tmp_path, events)
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.feed_table.row_count == 6)
        for _ in range(3):
            app.open_candidate("c0001")
            for _ in range(pauses):
                await pilot.pause(0)
            app._reset_widgets()  # what a replaced log does
            await until(pilot, lambda: app.detail is None)


async def test_a_long_log_is_caught_up_on_in_bounded_reads(tmp_path: Path, events: list[Event]) -> None:
    write_log(tmp_path, events)
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    assert app.follower is not None
    app.follower.max_bytes = 200  # many reads for this log
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.feed_table.row_count == 6)
        assert app.view.events == len(events)


async def test_nothing_is_written_to_stdout_or_stderr(tmp_path: Path, events: list[Event],
                                                      capfd: pytest.CaptureFixture[str]) -> None:
    write_log(tmp_path, events)
    app = CampaignApp(tmp_path, refresh_s=REFRESH_S)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.feed_table.row_count == 6)
        await pilot.press("up", "enter", "d", "p", "escape", "f", "q")
    assert capfd.readouterr() == ("", "")
