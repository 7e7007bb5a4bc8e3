"""Snapshots of the main screen and the candidate detail on the fixed campaign log in campaign_log.py.

Every time on screen comes from event timestamps, so the pictures do not depend on when the test runs.
Regenerate after an intended change with ``pytest tests/tui --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from arcengine_tui.app import CampaignApp
from textual.pilot import Pilot

from tests.tui.campaign_log import campaign_events, stop_events, write_log

SnapCompare = Callable[..., bool]


def running_app(run_dir: Path) -> CampaignApp:
    write_log(run_dir, campaign_events())
    return CampaignApp(run_dir, refresh_s=0.05)


def test_main_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(running_app(tmp_path), terminal_size=(120, 36))


def test_main_screen_stopped_small_terminal(snap_compare: SnapCompare, tmp_path: Path) -> None:
    events = campaign_events()
    write_log(tmp_path, events + stop_events(len(events) + 1))
    assert snap_compare(CampaignApp(tmp_path, refresh_s=0.05), terminal_size=(80, 24))


def test_candidate_detail_diff(snap_compare: SnapCompare, tmp_path: Path) -> None:
    async def open_c0003(pilot: Pilot[None]) -> None:
        assert isinstance(pilot.app, CampaignApp) and pilot.app.open_candidate("c0003")
        await pilot.pause()

    assert snap_compare(running_app(tmp_path), terminal_size=(120, 36), run_before=open_c0003)


def test_candidate_detail_rejected_source(snap_compare: SnapCompare, tmp_path: Path) -> None:
    async def open_c0004(pilot: Pilot[None]) -> None:
        assert isinstance(pilot.app, CampaignApp) and pilot.app.open_candidate("c0004")
        await pilot.pause()

    assert snap_compare(running_app(tmp_path), terminal_size=(120, 36), run_before=open_c0004, press=["d"])
