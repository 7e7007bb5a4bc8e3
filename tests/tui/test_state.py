"""CampaignView: folding a hand-built event sequence into what the screens show."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from arcengine_tui import render
from arcengine_tui.state import CampaignView

from arcengine.domain.events import (
    AgentFailed,
    AgentStarted,
    CampaignStarted,
    CandidateDecided,
    CandidateProposed,
    Event,
    MemoryRecorded,
)
from arcengine.domain.run import Phase
from tests.tui.campaign_log import BUDGET, T0, campaign_events, number, stop_events


def fold(events: list[Event]) -> CampaignView:
    view = CampaignView()
    view.apply_all(events)
    return view


def upto(events: list[Event], found: Callable[[Event], bool]) -> list[Event]:
    """The events up to and including the first that ``found`` accepts."""
    for index, event in enumerate(events):
        if found(event):
            return events[: index + 1]
    raise AssertionError("no such event")


@pytest.fixture
def events() -> list[Event]:
    return campaign_events()


def test_campaign_facts_and_budget(events: list[Event]) -> None:
    view = fold(events)
    assert (view.campaign_id, view.problem, view.kernel_type) == ("scale-test", "scale", "elementwise")
    assert view.device == "Test CPU"  # the profiled name replaces the config's "cpu"
    assert view.model == "anthropic:claude-test"
    assert view.status == "running" and view.stop_reason is None
    assert view.events == len(events) and view.last_seq == len(events)
    budget = view.budget
    assert (budget.budget, budget.proposed, budget.decided) == (BUDGET, 5, 5)  # the seed is not counted
    assert budget.elapsed_s == pytest.approx(len(events) - 1)  # first event's ts to the last's
    assert budget.first_ts == T0
    assert budget.calls == 6
    assert budget.input_tokens == 1200 + 1000 + 800 + 1500 + 900 + 1100
    assert budget.tokens == budget.input_tokens + 300 + 250 + 200 + 400 + 100 + 300
    assert budget.cost_usd == pytest.approx(0.24)
    assert budget.max_cost_usd == 5.0 and budget.max_tokens is None


def test_agents(events: list[Event]) -> None:
    view = fold(events)
    assert list(view.agents) == ["a1", "a2"]  # the seed is not an agent
    a1, a2 = view.agents["a1"], view.agents["a2"]
    assert (a1.strategy, a1.provider) == ("fusion", "anthropic:claude-test")
    assert (a1.candidates, a1.decisions, a1.plateau) == (2, {"KEEP": 1, "ACCEPT": 1}, 1)
    assert (a1.best_speedup, a1.best_candidate_id, a1.last_candidate_id) == (1.4, "c0001", "c0003")
    assert a1.tokens == 1500 + 1000 + 1900 and a1.cost_usd == pytest.approx(0.14)
    # REVERT, REJECT, REVERT: REJECT leaves the plateau count alone, as in the engine
    assert (a2.candidates, a2.decisions, a2.plateau) == (3, {"REVERT": 2, "REJECT": 1}, 2)
    assert a2.best_speedup is None and a2.best_candidate_id is None
    assert a1.phase == a2.phase == Phase.PROPOSING


def test_phases_follow_the_events(events: list[Event]) -> None:
    def phase_after(found: Callable[[Event], bool], agent: str = "a1") -> str:
        return fold(upto(events, found)).agents[agent].phase

    assert phase_after(lambda e: isinstance(e, AgentStarted) and e.agent_id == "a1") == Phase.PROPOSING
    assert phase_after(lambda e: isinstance(e, CandidateProposed) and e.candidate_id == "c0001") == Phase.JUDGING
    assert phase_after(lambda e: isinstance(e, CandidateDecided) and e.candidate_id == "c0001") == Phase.REFLECTING
    assert phase_after(lambda e: isinstance(e, MemoryRecorded) and e.entry_id == "m1") == Phase.PROPOSING
    second = phase_after(lambda e: isinstance(e, CandidateDecided) and e.candidate_id == "c0002", "a2")
    assert second == Phase.REFLECTING
    assert phase_after(lambda e: isinstance(e, CandidateDecided) and e.candidate_id == "c0004", "a2") == Phase.PROPOSING
    stopped = fold(events + stop_events(len(events) + 1))
    assert stopped.status == "stopped" and stopped.stop_reason == "candidate budget spent"
    assert {a.phase for a in stopped.agents.values()} == {Phase.DONE}


def test_leaderboard_feed_and_trajectory(events: list[Event]) -> None:
    view = fold(events)
    board = view.leaderboard
    assert [(r.agent_id, r.speedup, r.candidate_id) for r in board] == [
        ("a1", 1.4, "c0001"), ("seed", 1.0, "c0000"), ("a2", None, None)]
    assert board[0].over_seed == pytest.approx(1.4)
    feed = view.feed
    assert [(f.verdict.candidate_id, f.verdict.decision) for f in feed] == [
        ("c0000", "KEEP"), ("c0001", "KEEP"), ("c0002", "REVERT"), ("c0003", "ACCEPT"), ("c0004", "REJECT"),
        ("c0005", "REVERT")]
    assert [f.campaign_best for f in feed] == [True, True, False, False, False, False]
    assert feed[2].verdict.reason.startswith("slower: 0.910x") and feed[2].candidate.position == 2
    assert feed[2].verdict.agent_id == feed[2].candidate.agent_id == "a2"
    assert [(p.position, p.speedup, p.candidate_id, p.agent_id) for p in view.trajectory] == [
        (0, 1.0, "c0000", "seed"), (1, 1.4, "c0001", "a1")]
    assert view.best is not None and view.best.candidate_id == "c0001"
    assert view.best_curve == [1.0, 1.4, 1.4, 1.4, 1.4, 1.4]
    assert view.seed_speedup == 1.0


def test_memory_keeps_what_is_not_evicted(events: list[Event]) -> None:
    view = fold(events)
    assert list(view.memory) == ["m1", "m3"]  # m2 was evicted
    assert [e.entry_id for e in view.wins] == ["m1"]
    assert [e.entry_id for e in view.traps] == ["m3"]
    assert view.wins[0].summary.startswith("addcmul") and view.wins[0].speedup == 1.4
    before_eviction = fold(upto(events, lambda e: isinstance(e, CandidateDecided) and e.candidate_id == "c0005"))
    assert [e.entry_id for e in before_eviction.traps] == ["m2"]


def test_candidates_and_their_diff(events: list[Event]) -> None:
    view = fold(events)
    assert list(view.candidates) == ["c0000", "c0001", "c0002", "c0003", "c0004", "c0005"]
    c3 = view.candidates["c0003"]
    assert (c3.agent_id, c3.position, c3.parent_id, c3.decision) == ("a1", 3, "c0001", "ACCEPT")
    assert c3.tokens == 1900 and c3.cost_usd == pytest.approx(0.06)
    assert c3.verdict is not None and [w.index for w in c3.verdict.workloads] == [0, 1, 2]
    assert c3.verdict.workloads[2].held_out
    c1 = view.candidates["c0001"]
    assert c1.tokens == 1500 + 1000  # the proposal and the reflection
    assert c1.verdict is not None and c1.verdict.vs_incumbent_interval == (1.35, 1.45) and c1.verdict.confirmed
    c4 = view.candidates["c0004"]
    assert c4.verdict is not None and c4.verdict.correct is False
    assert c4.verdict.workloads[0].failure == "max abs error 1 > 1e-05"
    diff = view.diff("c0003")
    assert diff.startswith("--- c0001\n+++ c0003\n")
    assert "+    # fused multiply-add, one pass over x\n" in diff
    assert view.diff("c0000") == ""  # the seed has no parent
    assert view.diff("nope") == ""
    parent = view.parent_of("c0003")
    assert parent is not None and parent.candidate_id == "c0001"


def test_a_candidate_at_the_guard_is_undecided(events: list[Event]) -> None:
    view = fold(upto(events, lambda e: isinstance(e, CandidateProposed) and e.candidate_id == "c0005"))
    c5 = view.candidates["c0005"]
    assert not c5.decided and c5.decision is None and c5.verdict is None and c5.source
    assert view.agents["a2"].phase == Phase.JUDGING


def test_applying_an_event_twice_changes_nothing(events: list[Event]) -> None:
    view = fold(events)
    assert view.apply_all(events) == 0
    assert view.budget.proposed == 5 and len(view.feed) == 6 and view.events == len(events)


def small_campaign(budget: int = 10, r_draft: int = 2) -> list[Event]:
    config = {"budget": budget, "agents": 2, "r_draft": r_draft, "model": "offline"}
    return [
        CampaignStarted(campaign_id="x", problem="p", problem_dir="/p", kernel_type="k", config=config, device="cpu"),
        CandidateProposed(candidate_id="c0000", agent_id="seed", position=0, parent_id=None, strategy="seed",
                          rationale="", source="a\n"),
        CandidateDecided(candidate_id="c0000", agent_id="seed", decision="KEEP", reason="", correct=True,
                         speedup=2.0),
        AgentStarted(agent_id="a1", strategy="s", provider="offline"),
        AgentStarted(agent_id="a2", strategy="t", provider="offline"),
    ]


def proposed(candidate_id: str, agent_id: str, position: int) -> CandidateProposed:
    return CandidateProposed(candidate_id=candidate_id, agent_id=agent_id, position=position, parent_id="c0000",
                             strategy="s", rationale="", source="b\n")


def decided(candidate_id: str, agent_id: str, decision: str, speedup: float | None = None) -> CandidateDecided:
    return CandidateDecided(candidate_id=candidate_id, agent_id=agent_id, decision=decision,  # type: ignore[arg-type]
                            reason=decision.lower(), correct=decision != "REJECT", speedup=speedup)


def test_an_agent_on_a_plateau_drafts() -> None:
    events = [*small_campaign(r_draft=2),
              proposed("c0001", "a1", 1), decided("c0001", "a1", "ACCEPT"),
              proposed("c0002", "a1", 2), decided("c0002", "a1", "ACCEPT")]
    view = fold(events)
    assert view.agents["a1"].plateau == 2 and view.agents["a1"].phase == Phase.DRAFTING
    view.apply(proposed("c0003", "a1", 3))
    view.apply(decided("c0003", "a1", "KEEP", 2.5))
    assert view.agents["a1"].plateau == 0
    assert view.trajectory[-1].candidate_id == "c0003" and view.best_curve[-1] == 2.5


def test_a_keep_below_the_campaign_best_is_not_a_new_best() -> None:
    view = fold([*small_campaign(), proposed("c0001", "a1", 1), decided("c0001", "a1", "KEEP", 1.5)])
    assert view.agents["a1"].best_speedup == 1.5  # its own best: above its incumbent, below the seed
    assert [p.candidate_id for p in view.trajectory] == ["c0000"]
    assert view.feed[-1].campaign_best is False
    assert [r.agent_id for r in view.leaderboard] == ["seed", "a1", "a2"]


def test_agents_without_a_position_are_done_when_the_budget_is_spent() -> None:
    view = fold([*small_campaign(budget=2), proposed("c0001", "a1", 1)])
    assert view.agents["a2"].phase == Phase.PROPOSING
    view.apply(proposed("c0002", "a2", 2))
    view.apply(decided("c0001", "a1", "REJECT"))
    assert view.agents["a1"].phase == Phase.DONE
    assert view.agents["a2"].phase == Phase.JUDGING  # still has its candidate at the guard
    view.apply(decided("c0002", "a2", "ACCEPT"))
    assert view.agents["a2"].phase == Phase.DONE


def test_agent_failures() -> None:
    view = fold([*small_campaign(), AgentFailed(agent_id="a1", error="boom", relaunch=True),
                 AgentFailed(agent_id="a2", error="fatal", relaunch=False)])
    a1, a2 = view.agents["a1"], view.agents["a2"]
    assert (a1.phase, a1.failures, a1.last_error) == (Phase.RELAUNCHING, 1, "boom")
    assert a2.phase == Phase.FAILED
    view.apply(number(stop_events(1), 100)[0])
    assert (view.agents["a1"].phase, view.agents["a2"].phase) == (Phase.DONE, Phase.FAILED)


def test_a_decision_without_its_proposal_still_shows() -> None:
    view = fold([decided("c0042", "a9", "REVERT", 0.5)])
    candidate = view.candidates["c0042"]
    assert candidate.position == -1 and candidate.decision == "REVERT"
    assert view.agents["a9"].plateau == 1 and view.feed[0].verdict.candidate_id == "c0042"


def test_render_helpers(events: list[Event]) -> None:
    view = fold(events)
    assert render.duration(59.9) == "0:59" and render.duration(3725) == "1:02:05"
    assert render.tokens(950) == "950" and render.tokens(12_345) == "12.3k" and render.tokens(1_250_000) == "1.25M"
    assert render.speedup(None) == "—" and render.speedup(1.23456, 3) == "1.235x"
    line = render.budget_line(view).plain
    assert "candidates 5/6 (5 decided)" in line and f"0:{len(events) - 1}" in line and "$0.24/$5.00" in line
    assert "best 1.400x (a1 c0001)" in line and line.endswith("running")
    memory = render.memory_text(view).plain
    assert memory.index("WINS (1)") < memory.index("addcmul") < memory.index("TRAPS (1)") < memory.index("float64")
    assert render.trajectory_label(view).plain == "best so far: 1.00x (seed) → 1.40x (#1 a1)"
    assert render.clip("a  b\nc", 10) == "a b c" and render.clip("x" * 20, 5) == "xxxx…"


def test_a_long_curve_is_thinned_to_the_ends_of_its_stretches() -> None:
    assert render.curve_points([1.0, 2.0], 5) == [1.0, 2.0]
    assert render.curve_points([float(i) for i in range(9)], 3) == [2.0, 5.0, 8.0]
    assert render.curve_points([float(i) for i in range(10)], 3) == [3.0, 7.0, 9.0]  # the last point always
    curve = [float(i // 7) for i in range(10_001)]
    thinned = render.curve_points(curve, 512)
    assert len(thinned) <= 512 and thinned[-1] == curve[-1] and thinned == sorted(thinned)
