"""A campaign in its own process, for the crash tests: the real engine with the synthetic provider and the stub
guard (a decision takes a few milliseconds, so a kill can land anywhere in a step).

    python campaign_process.py start OUT_DIR BUDGET
    python campaign_process.py resume RUN_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from arcengine.engine.campaign import Campaign, CampaignError
from arcengine.engine.config import CampaignConfig
from arcengine.engine.testing import StubGuard, SyntheticProvider


def stub_guard(campaign: Campaign) -> StubGuard:
    return StubGuard(campaign.problem, campaign.bus, delay_s=(0.005, 0.04))


def main() -> None:
    mode, path = sys.argv[1], Path(sys.argv[2])
    if mode == "start":
        config = CampaignConfig(problem="rmsnorm", agents=4, budget=int(sys.argv[3]), plateau=None, memory_cap=4,
                                out=path)
        campaign = Campaign(config, provider=SyntheticProvider(), guard_factory=stub_guard)
    else:
        campaign = Campaign.resume(path, provider=SyntheticProvider(), guard_factory=stub_guard)
    try:
        anyio.run(campaign.run)
    except CampaignError as error:  # as the CLI says it
        sys.exit(f"arcengine: error: {error}")


if __name__ == "__main__":
    main()
