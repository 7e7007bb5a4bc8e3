"""Load: 64 agents, 10,000 candidates, an instant provider and a stub guard behind the real queue. The campaign
ends (no deadlock), every agent gets its turn at the guard (no starvation), and memory stays flat."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import anyio
import pytest

from arcengine.domain.events import SEED_AGENT, CandidateDecided, Event
from arcengine.engine.campaign import Campaign
from arcengine.engine.config import CampaignConfig
from arcengine.engine.testing import StubGuard, SyntheticProvider

AGENTS, BUDGET = 64, 10_000


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.heavy
async def test_sixty_four_agents_and_ten_thousand_candidates(tmp_path: Path) -> None:
    order: list[str] = []  # the agent of each decision, in the guard's order
    rss: dict[int, int] = {}

    class Watch:  # a display: it sees every event, as the terminal UI would
        async def on_event(self, event: Event) -> None:
            if isinstance(event, CandidateDecided) and event.agent_id != SEED_AGENT:
                order.append(event.agent_id)
                if len(order) in (1_000, BUDGET):
                    rss[len(order)] = _rss_bytes()

    config = CampaignConfig(problem="rmsnorm", agents=AGENTS, budget=BUDGET, plateau=None, out=tmp_path)
    campaign = Campaign(config, display=Watch(), provider=SyntheticProvider(),
                        guard_factory=lambda c: StubGuard(c.problem, c.bus))
    with anyio.fail_after(900):  # a deadlock fails here instead of hanging CI; not a speed assertion
        summary = await campaign.run()
    assert summary.stop_reason == "candidate budget spent" and summary.candidates == BUDGET
    assert len(order) == BUDGET
    # No starvation: the queue serves the agent with the fewest candidates judged first, so every agent keeps
    # getting turns. (How far one gets ahead depends on how fast each agent proposes, which the queue does not
    # decide: an agent that records a conclusion after its decision spends longer between turns.) Every agent
    # is judged in every stretch of 10 rounds, and none ends with less than 80% of an even share.
    window = 10 * AGENTS
    for start in range(0, BUDGET - window + 1, AGENTS):
        assert len(set(order[start:start + window])) == AGENTS, f"an agent was not judged in decisions {start}+"
    counts = Counter(order)
    assert min(counts.values()) >= 0.8 * BUDGET / AGENTS
    assert len(counts) == AGENTS
    # Memory: what the engine holds does not grow with the number of candidates (logs and database are on disk).
    assert rss[BUDGET] - rss[1_000] < 64 * 2**20, f"grew by {(rss[BUDGET] - rss[1_000]) / 2**20:.0f} MiB"
