"""The campaign TUI: a pure view folded from events, a non-blocking follower of ``events.jsonl``, a Textual app."""

from arcengine_tui.follow import EventFollower
from arcengine_tui.state import CampaignView, candidate_diff

__all__ = ["CampaignView", "EventFollower", "candidate_diff"]
