"""`arcengine run --tui`: the campaign runs on the app's own loop and every event reaches the view."""

from __future__ import annotations

from arcengine_tui.app import CampaignApp

from arcengine.domain.events import Event
from arcengine.engine.campaign import Campaign


async def test_a_campaign_drives_the_view_in_its_own_process(campaign_config) -> None:
    app = CampaignApp(None)

    class PushToView:
        async def on_event(self, event: Event) -> None:
            app.push_events([event])

    campaign = Campaign(campaign_config(agents=2, budget=3, plateau=None), display=PushToView())
    app.drive = campaign.run
    async with app.run_test() as pilot:
        for _ in range(1200):
            await pilot.pause(0.1)
            if app.result is not None:
                break
        await pilot.pause(0.5)  # one more tick draws the last events
        assert app.result is not None and app.result.candidates == 3
        assert len(app.view.feed) >= 3 and app.view.status == "stopped"
        assert app.feed_table.row_count >= 3
