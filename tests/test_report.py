"""Campaign reports: figures from hand-written event logs checked against values computed by hand."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from arcengine.domain.events import (
    SEED_AGENT,
    BestImproved,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
    ProviderCalled,
    Usage,
    WorkloadResult,
    dump_event,
)
from arcengine.engine.config import CampaignConfig
from arcengine.tools.report import (
    ReportError,
    bootstrap_interval,
    compare,
    config_label,
    configuration,
    summarise_run,
    write_report,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GPU = "NVIDIA Fake 100"


# ---------------------------------------------------------------- building fake run folders


def write_log(run_dir: Path, events: list[Event]) -> Path:
    """events.jsonl as EventLogWriter.append writes it: dump_event(event) and a newline, seq assigned in order."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [dump_event(e.model_copy(update={"seq": i + 1, "ts": 1_800_000_000.0 + i})) + "\n"
             for i, e in enumerate(events)]
    (run_dir / "events.jsonl").write_text("".join(lines), encoding="utf-8")
    return run_dir


def started(campaign_id: str, agents: int = 4, memory_cap: int | None = 16) -> CampaignStarted:
    config = CampaignConfig(problem="scale", agents=agents, budget=8, memory_cap=memory_cap, device="cuda")
    return CampaignStarted(campaign_id=campaign_id, problem="scale", problem_dir="/problems/scale",
                           kernel_type="elementwise", config=config.model_dump(mode="json"), device="cuda")


def proposed(position: int, agent: str) -> CandidateProposed:
    return CandidateProposed(candidate_id=f"c{position:04d}", agent_id=agent, position=position, parent_id=None,
                             strategy="seed" if agent == SEED_AGENT else "tiling", rationale="", source="")


def decided(position: int, agent: str, decision: str, speedup: float | None,
            workloads: list[WorkloadResult] | None = None) -> CandidateDecided:
    return CandidateDecided(candidate_id=f"c{position:04d}", agent_id=agent, decision=decision,  # type: ignore[arg-type]
                            reason="test", correct=speedup is not None, speedup=speedup,
                            workloads=workloads or [], device={"name": GPU})


def called(position: int, agent: str, usage: Usage) -> ProviderCalled:
    return ProviderCalled(agent_id=agent, candidate_id=f"c{position:04d}", provider="offline", request="",
                          response="", usage=usage)


def simple_run(tmp_path: Path, name: str, best: float, agents: int = 4, memory_cap: int | None = 16) -> Path:
    """A seed at 1x and one agent KEEP at ``best``."""
    return write_log(tmp_path / name, [
        started(name, agents=agents, memory_cap=memory_cap),
        proposed(0, SEED_AGENT), decided(0, SEED_AGENT, "KEEP", 1.0),
        proposed(1, "a1"), decided(1, "a1", "KEEP", best),
        CampaignStopped(reason="candidate budget spent", candidates=1, best_candidate_id="c0001", best_speedup=best),
    ])


BEST_WORKLOADS = [
    WorkloadResult(index=0, axes={"M": 1, "N": 4096}, held_out=False, correct=True, time_us=5.0, ref_time_us=10.0,
                   speedup=2.0, sol_score=0.8, baseline_route="compile", baseline_time_us=6.0,
                   speedup_over_baseline=1.2),
    WorkloadResult(index=1, axes={"M": 64, "N": 4096}, held_out=False, correct=True, time_us=4.0, ref_time_us=8.0,
                   speedup=2.0, sol_score=0.9, baseline_route="rms_norm", baseline_time_us=3.0,
                   speedup_over_baseline=0.75),
    WorkloadResult(index=2, axes={"M": 7, "N": 300}, held_out=True, correct=True, time_us=3.0, ref_time_us=9.0,
                   speedup=3.0, sol_score=0.95, baseline_route="compile", baseline_time_us=3.3,
                   speedup_over_baseline=1.1),
]
USAGES = [Usage(input_tokens=100, output_tokens=20, cached_tokens=5, cost_usd=0.25),
          Usage(input_tokens=300, output_tokens=40, cost_usd=0.5),
          Usage(input_tokens=7, output_tokens=3, cost_usd=0.125)]


@pytest.fixture
def detailed_run(tmp_path: Path) -> Path:
    """Decisions at positions 0..5; position 5 is decided before position 4 (agents run concurrently)."""
    return write_log(tmp_path / "detailed", [
        started("detailed"),
        DeviceProfiled(device={"name": GPU}, bandwidth_bytes_per_s=1e12, flops_per_s=1e14),
        proposed(0, SEED_AGENT), decided(0, SEED_AGENT, "KEEP", 1.5),
        proposed(1, "a1"), called(1, "a1", USAGES[0]), decided(1, "a1", "REJECT", None),
        proposed(2, "a2"), called(2, "a2", USAGES[1]), decided(2, "a2", "KEEP", 2.0, BEST_WORKLOADS),
        BestImproved(agent_id="a2", candidate_id="c0002", speedup=2.0, campaign_best=True),
        proposed(3, "a1"), decided(3, "a1", "REVERT", 1.2),
        proposed(4, "a2"), proposed(5, "a1"), called(5, "a1", USAGES[2]),
        decided(5, "a1", "KEEP", 1.8),  # a1's own best, below the campaign's
        BestImproved(agent_id="a1", candidate_id="c0005", speedup=1.8, campaign_best=False),
        decided(4, "a2", "ACCEPT", 2.5),  # an ACCEPT never moves the best, whatever its speedup
        CampaignStopped(reason="plateau", candidates=5, best_candidate_id="c0002", best_speedup=2.0),
    ])


# ---------------------------------------------------------------- one run


def test_trajectory_is_the_running_max_of_keeps_in_position_order(detailed_run: Path) -> None:
    keeps = {0: 1.5, 2: 2.0, 5: 1.8}  # position -> KEEP speedup
    expected, best = [], None
    for position in range(6):
        if position in keeps:
            best = keeps[position] if best is None else max(best, keeps[position])
        expected.append((position, best))
    assert expected == [(0, 1.5), (1, 1.5), (2, 2.0), (3, 2.0), (4, 2.0), (5, 2.0)]
    assert list(summarise_run(detailed_run).trajectory) == expected


def test_summary_of_a_run(detailed_run: Path) -> None:
    summary = summarise_run(detailed_run)
    assert summary.campaign_id == "detailed"
    assert summary.problem == "scale"
    assert summary.config_label == "agents=4 memory=shared cap=16 model=offline"
    assert summary.configuration == "multi-bounded model=offline"
    assert summary.device == GPU
    assert summary.candidates == 5  # agents' candidates; the seed is not counted
    assert summary.decisions == {"KEEP": 2, "ACCEPT": 1, "REVERT": 1, "REJECT": 1}
    assert (summary.best_candidate_id, summary.best_agent_id, summary.best_speedup) == ("c0002", "a2", 2.0)
    assert summary.seed_speedup == 1.5
    assert summary.stop_reason == "plateau"
    assert summary.provider_calls == 3
    assert summary.tokens == (100 + 20) + (300 + 40) + (7 + 3)
    assert summary.cost_usd == pytest.approx(0.25 + 0.5 + 0.125)


def test_per_workload_rows_are_the_best_candidates(detailed_run: Path) -> None:
    rows = summarise_run(detailed_run).best_workloads
    assert [(r.axes, r.held_out, r.time_us, r.ref_time_us, r.speedup, r.sol_score) for r in rows] == [
        ({"M": 1, "N": 4096}, False, 5.0, 10.0, 2.0, 0.8),
        ({"M": 64, "N": 4096}, False, 4.0, 8.0, 2.0, 0.9),
        ({"M": 7, "N": 300}, True, 3.0, 9.0, 3.0, 0.95),
    ]


def test_the_seed_can_be_the_best(tmp_path: Path) -> None:
    run = write_log(tmp_path / "seedbest", [
        started("seedbest"),
        proposed(0, SEED_AGENT), decided(0, SEED_AGENT, "KEEP", 3.0),
        proposed(1, "a1"), decided(1, "a1", "REVERT", 2.0),
    ])
    summary = summarise_run(run)
    assert (summary.best_candidate_id, summary.best_agent_id, summary.best_speedup) == ("c0000", SEED_AGENT, 3.0)
    assert summary.stop_reason is None
    assert list(summary.trajectory) == [(0, 3.0), (1, 3.0)]


def test_configuration_labels() -> None:
    assert configuration({"agents": 1, "memory_cap": 16, "model": "offline"}) == "single model=offline"
    assert configuration({"agents": 4, "memory_cap": 16, "model": "offline"}) == "multi-bounded model=offline"
    assert configuration({"agents": 4, "memory_cap": None, "model": "m"}) == "multi-unbounded model=m"
    assert config_label({"agents": 2, "memory": "private", "memory_cap": None, "model": "x"}) == (
        "agents=2 memory=private cap=none model=x")


# ---------------------------------------------------------------- across runs


@pytest.fixture
def ablation(tmp_path: Path) -> list[Path]:
    """Config A (4 agents, capped memory): best 2, 4, 8. Config B (1 agent): best 1 and 1."""
    return [simple_run(tmp_path, "a-1", 2.0), simple_run(tmp_path, "a-2", 4.0), simple_run(tmp_path, "a-3", 8.0),
            simple_run(tmp_path, "b-1", 1.0, agents=1), simple_run(tmp_path, "b-2", 1.0, agents=1)]


A = "multi-bounded model=offline"
B = "single model=offline"


def exact_two_sided_p(first: list[float], second: list[float]) -> float:
    """Enumerate every relabeling of the pooled log speedups into groups of the original sizes."""
    pooled = [math.log(v) for v in first + second]
    k = len(first)

    def statistic(indices: tuple[int, ...]) -> float:
        chosen = [pooled[i] for i in indices]
        rest = [pooled[i] for i in range(len(pooled)) if i not in indices]
        return sum(chosen) / len(chosen) - sum(rest) / len(rest)

    observed = statistic(tuple(range(k)))
    null = [statistic(c) for c in itertools.combinations(range(len(pooled)), k)]
    tolerance = 1e-12 * abs(observed)
    at_most = sum(s <= observed + tolerance for s in null) / len(null)
    at_least = sum(s >= observed - tolerance for s in null) / len(null)
    return min(1.0, 2 * min(at_most, at_least))


def test_group_geometric_means_and_intervals(ablation: list[Path]) -> None:
    groups = {g.configuration: g for g in compare(summarise_run(d) for d in ablation).groups}
    assert set(groups) == {A, B}
    assert groups[A].geometric_mean == pytest.approx((2 * 4 * 8) ** (1 / 3))
    assert groups[A].geometric_mean == pytest.approx(4.0)
    assert groups[B].geometric_mean == pytest.approx(1.0)
    for group, runs in ((groups[A], [2.0, 4.0, 8.0]), (groups[B], [1.0, 1.0])):
        assert sorted(group.speedups) == runs
        assert group.interval is not None
        low, high = group.interval
        assert min(runs) - 1e-9 <= low <= group.geometric_mean <= high <= max(runs) + 1e-9


def test_permutation_p_value_is_exact(ablation: list[Path]) -> None:
    comparison = compare(summarise_run(d) for d in ablation)
    (test,) = comparison.tests
    assert (test.first, test.second) == (A, B)
    assert math.comb(5, 2) == 10
    by_hand = exact_two_sided_p([2.0, 4.0, 8.0], [1.0, 1.0])
    # only the observed labeling has a difference as large: 1 of 10 in each tail -> 2 * 1/10
    assert by_hand == pytest.approx(0.2)
    assert test.p_value == pytest.approx(by_hand)
    assert test.exact
    assert test.log_difference == pytest.approx(math.log(4.0))
    assert test.ratio == pytest.approx(4.0)


def test_fewer_than_two_runs_have_no_interval(tmp_path: Path) -> None:
    assert bootstrap_interval([3.0]) is None
    (group,) = compare([summarise_run(simple_run(tmp_path, "only", 3.0))]).groups
    assert group.geometric_mean == pytest.approx(3.0)
    assert group.interval is None


# ---------------------------------------------------------------- the written report


def test_write_report(ablation: list[Path], detailed_run: Path) -> None:
    folder = write_report([detailed_run, *ablation], None)
    assert folder == detailed_run / "report"
    assert (folder / "trajectory.png").read_bytes()[:8] == PNG_MAGIC

    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "![Best-so-far speedup by candidate position](trajectory.png)" in markdown
    assert "| KEEP | ACCEPT | REVERT | REJECT |" in markdown
    assert "| 2 | 1 | 1 | 1 |" in markdown
    assert ("| workload | held out | correct | time (µs) | baseline | baseline (µs) | over baseline | faster than "
            "baseline | reference (µs) | over reference | SOL score |") in markdown
    held_out = "| M=7, N=300 | yes (held out) | yes | 3.00 | compile | 3.30 | 1.100x | yes | 9.00 | 3.000x | 0.950 |"
    assert held_out in markdown
    assert "| M=1, N=4096 |  | yes | 5.00 | compile | 6.00 | 1.200x | yes | 10.00 | 2.000x | 0.800 |" in markdown
    assert "| M=64, N=4096 |  | yes | 4.00 | rms_norm | 3.00 | 0.750x | no | 8.00 | 2.000x | 0.900 |" in markdown
    assert "1/2 shapes faster than baseline" in markdown  # visible shapes only, as the paper counts
    assert "## Comparison across configurations" in markdown
    assert f"| {B} | 2 | 1.000x, 1.000x | 1.000x |" in markdown
    p_value = exact_two_sided_p([2.0, 2.0, 4.0, 8.0], [1.0, 1.0])  # detailed (best 2.0) is in config A too
    assert p_value == pytest.approx(2 / 15)  # 15 relabelings; only the observed one is as extreme, each tail
    assert f"| {A} | {B} | 3.364x | +1.2130 | {p_value:.4g} | yes |" in markdown
    for run in ("detailed", "a-1", "a-2", "a-3", "b-1", "b-2"):
        assert f"### {run}" in markdown

    data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    runs = {r["campaign_id"]: r for r in data["runs"]}
    assert runs["detailed"]["best_speedup"] == 2.0
    assert runs["detailed"]["trajectory"] == [[0, 1.5], [1, 1.5], [2, 2.0], [3, 2.0], [4, 2.0], [5, 2.0]]
    assert runs["detailed"]["decisions"] == {"KEEP": 2, "ACCEPT": 1, "REVERT": 1, "REJECT": 1}
    assert runs["detailed"]["best_workloads"][2]["held_out"] is True
    assert runs["detailed"]["tokens"] == 470
    groups = {g["configuration"]: g for g in data["comparison"]["groups"]}
    # detailed (best 2.0) joins config A: 2, 2, 4, 8
    assert groups[A]["geometric_mean"] == pytest.approx((2 * 2 * 4 * 8) ** (1 / 4))
    assert groups[B]["geometric_mean"] == pytest.approx(1.0)
    (test,) = data["comparison"]["tests"]
    assert test["p_value"] == pytest.approx(exact_two_sided_p([2.0, 2.0, 4.0, 8.0], [1.0, 1.0]))


def test_write_report_to_a_given_folder(ablation: list[Path], tmp_path: Path) -> None:
    folder = write_report(ablation, tmp_path / "out" / "rep")
    assert folder == tmp_path / "out" / "rep"
    assert {p.name for p in folder.iterdir()} == {"report.md", "report.json", "trajectory.png"}
    data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    (test,) = data["comparison"]["tests"]
    assert test["p_value"] == pytest.approx(0.2)


# ---------------------------------------------------------------- errors


def test_missing_run_folder(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no run folder"):
        summarise_run(tmp_path / "nope")


def test_missing_event_log(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    with pytest.raises(ReportError, match=r"has no events\.jsonl"):
        summarise_run(tmp_path / "run")


def test_empty_event_log(tmp_path: Path) -> None:
    run = write_log(tmp_path / "empty", [])
    with pytest.raises(ReportError, match="records no campaign"):
        summarise_run(run)


def test_event_log_without_a_campaign(tmp_path: Path) -> None:
    run = write_log(tmp_path / "headless", [proposed(0, SEED_AGENT), decided(0, SEED_AGENT, "KEEP", 1.0)])
    with pytest.raises(ReportError, match="records no campaign"):
        write_report([run], None)


def test_no_runs() -> None:
    with pytest.raises(ReportError, match="no run folders"):
        write_report([], None)
