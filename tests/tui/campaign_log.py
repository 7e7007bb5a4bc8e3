"""A small, deterministic campaign as real event models: two agents, every decision kind, memory with an
eviction, provider usage and a stop. Timestamps and sequence numbers are fixed, so rendered times are too."""

from __future__ import annotations

from pathlib import Path

from arcengine.domain.events import (
    AgentStarted,
    BestImproved,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    DeviceProfiled,
    Event,
    MemoryEvicted,
    MemoryRecorded,
    ProviderCalled,
    Usage,
    WorkloadResult,
    dump_event,
)

T0 = 1_800_000_000.0
BUDGET = 6

SEED_SOURCE = """import torch


def run(x):
    y = x * 2
    return y + 1
"""
FUSED_SOURCE = """import torch


def run(x):
    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))
"""
INPLACE_SOURCE = """import torch


def run(x):
    y = x * 2
    y.add_(1)
    return y
"""
BROKEN_SOURCE = """import torch


def run(x):
    return x * 2
"""
DOUBLE_SOURCE = """import torch


def run(x):
    y = x.double() * 2
    return (y + 1).to(x.dtype)
"""
CHAINED_SOURCE = """import torch


def run(x):
    # fused multiply-add, one pass over x
    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))
"""


def workloads(speedups: list[float], correct: bool = True, failure: str | None = None) -> list[WorkloadResult]:
    """Two visible workloads and one held-out, with times that give ``speedups``."""
    shapes = [{"N": 1024}, {"N": 65536}, {"N": 4096}]
    results = []
    for index, (axes, value) in enumerate(zip(shapes, speedups, strict=True)):
        ref = 10.0 * (index + 1)
        results.append(WorkloadResult(
            index=index, axes=axes, held_out=index == 2, correct=correct,
            failure=None if correct else failure,
            time_us=ref / value if correct else None, ref_time_us=ref if correct else None,
            speedup=value if correct else None, sol_score=0.5 * value if correct else None))
    return results


def usage(tokens_in: int, tokens_out: int, cost: float) -> Usage:
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out, cached_tokens=tokens_in // 4, cost_usd=cost)


def campaign_events() -> list[Event]:
    """The whole campaign in log order, numbered from 1, one second apart."""
    config = {"problem": "scale", "agents": 2, "budget": BUDGET, "model": "anthropic:claude-test", "r_draft": 4,
              "plateau": 12, "max_cost_usd": 5.0}
    events: list[Event] = [
        CampaignStarted(campaign_id="scale-test", problem="scale", problem_dir="/problems/scale",
                        kernel_type="elementwise", config=config, device="cpu"),
        DeviceProfiled(device={"name": "Test CPU"}, bandwidth_bytes_per_s=2e10, flops_per_s=1e11),
        CandidateProposed(candidate_id="c0000", agent_id="seed", position=0, parent_id=None, strategy="seed",
                          rationale="the problem's seed", source=SEED_SOURCE),
        CandidateDecided(candidate_id="c0000", agent_id="seed", decision="KEEP",
                         reason="baseline: correct on every workload", correct=True, speedup=1.0,
                         held_out_speedup=1.0, workloads=workloads([1.0, 1.0, 1.0]), guard_seconds=1.5),
        AgentStarted(agent_id="a1", strategy="fusion", provider="anthropic:claude-test"),
        AgentStarted(agent_id="a2", strategy="memory", provider="anthropic:claude-test"),
        # a1: c0001 is a KEEP and the campaign's new best
        ProviderCalled(agent_id="a1", candidate_id="c0001", provider="anthropic", request="r", response="s",
                       usage=usage(1200, 300, 0.05)),
        CandidateProposed(candidate_id="c0001", agent_id="a1", position=1, parent_id="c0000", strategy="fusion",
                          rationale="fuse the multiply and the add into one addcmul", source=FUSED_SOURCE),
        # a2: c0002 is a REVERT
        ProviderCalled(agent_id="a2", candidate_id="c0002", provider="anthropic", request="r", response="s",
                       usage=usage(1000, 250, 0.04)),
        CandidateProposed(candidate_id="c0002", agent_id="a2", position=2, parent_id="c0000", strategy="memory",
                          rationale="add in place to save an allocation", source=INPLACE_SOURCE),
        CandidateDecided(candidate_id="c0001", agent_id="a1", decision="KEEP",
                         reason="1.400x the incumbent (95% CI 1.350-1.450), beyond the 1.02x margin", correct=True,
                         speedup=1.4, held_out_speedup=1.38, vs_incumbent=1.4, vs_incumbent_interval=(1.35, 1.45),
                         confirmed=True, workloads=workloads([1.3, 1.5, 1.38]), guard_seconds=2.25),
        ProviderCalled(agent_id="a1", candidate_id="c0001", provider="anthropic", request="r", response="s",
                       usage=usage(800, 200, 0.03), purpose="reflect"),
        MemoryRecorded(entry_id="m1", kind="win", kernel_type="elementwise", owner=None, agent_id="a1",
                       candidate_id="c0001", strategy="fusion", speedup=1.4, context="scale on cpu",
                       summary="addcmul fuses the multiply-add: 1.40x", reflection="one pass over memory"),
        BestImproved(agent_id="a1", candidate_id="c0001", speedup=1.4, campaign_best=True),
        CandidateDecided(candidate_id="c0002", agent_id="a2", decision="REVERT",
                         reason="slower: 0.910x the incumbent (95% CI 0.880-0.940)", correct=True, speedup=0.91,
                         vs_incumbent=0.91, workloads=workloads([0.9, 0.92, 0.91]), guard_seconds=2.0),
        MemoryRecorded(entry_id="m2", kind="trap", kernel_type="elementwise", owner=None, agent_id="a2",
                       candidate_id="c0002", strategy="memory", speedup=0.91, context="scale on cpu",
                       summary="in-place add is slower on small tensors", reflection="allocation is not the cost"),
        # a1: c0003 is an ACCEPT (child of c0001)
        ProviderCalled(agent_id="a1", candidate_id="c0003", provider="anthropic", request="r", response="s",
                       usage=usage(1500, 400, 0.06)),
        CandidateProposed(candidate_id="c0003", agent_id="a1", position=3, parent_id="c0001", strategy="fusion",
                          rationale="comment the fused kernel", source=CHAINED_SOURCE),
        # a2: c0004 is a REJECT (wrong result)
        ProviderCalled(agent_id="a2", candidate_id="c0004", provider="anthropic", request="r", response="s",
                       usage=usage(900, 100, 0.02)),
        CandidateProposed(candidate_id="c0004", agent_id="a2", position=4, parent_id="c0000", strategy="memory",
                          rationale="drop the add (wrong on purpose)", source=BROKEN_SOURCE),
        CandidateDecided(candidate_id="c0003", agent_id="a1", decision="ACCEPT",
                         reason="1.010x the incumbent (95% CI 0.990-1.030): within the near-best band",
                         correct=True, speedup=1.41, vs_incumbent=1.01, workloads=workloads([1.31, 1.52, 1.4]),
                         guard_seconds=2.5),
        CandidateDecided(candidate_id="c0004", agent_id="a2", decision="REJECT",
                         reason="wrong result on N=1024: max abs error 1", correct=False,
                         workloads=workloads([1.0, 1.0, 1.0], correct=False, failure="max abs error 1 > 1e-05"),
                         guard_seconds=0.75),
        # a2: c0005 is another REVERT; its trap evicts the older one (traps are first in, first out)
        ProviderCalled(agent_id="a2", candidate_id="c0005", provider="anthropic", request="r", response="s",
                       usage=usage(1100, 300, 0.04)),
        CandidateProposed(candidate_id="c0005", agent_id="a2", position=5, parent_id="c0000", strategy="memory",
                          rationale="compute in float64 then cast back", source=DOUBLE_SOURCE),
        CandidateDecided(candidate_id="c0005", agent_id="a2", decision="REVERT",
                         reason="slower: 0.500x the incumbent (95% CI 0.480-0.520)", correct=True, speedup=0.5,
                         vs_incumbent=0.5, workloads=workloads([0.5, 0.5, 0.5]), guard_seconds=2.0),
        MemoryEvicted(entry_id="m2", reason="cap"),
        MemoryRecorded(entry_id="m3", kind="trap", kernel_type="elementwise", owner=None, agent_id="a2",
                       candidate_id="c0005", strategy="memory", speedup=0.5, context="scale on cpu",
                       summary="float64 doubles the bytes moved: 0.50x", reflection="stay in the input dtype"),
    ]
    return number(events)


def stop_events(start_seq: int) -> list[Event]:
    """The end of the campaign, numbered on from ``start_seq``."""
    return number([CampaignStopped(reason="candidate budget spent", candidates=5, best_candidate_id="c0001",
                                   best_speedup=1.4)], start_seq)


def number(events: list[Event], first: int = 1) -> list[Event]:
    """What the bus does: a sequence number and a timestamp (here one second apart from T0)."""
    return [e.model_copy(update={"seq": first + i, "ts": T0 + first - 1 + i}) for i, e in enumerate(events)]


def lines(events: list[Event]) -> str:
    return "".join(dump_event(e) + "\n" for e in events)


def write_log(run_dir: Path, events: list[Event]) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "events.jsonl"
    path.write_text(lines(events), encoding="utf-8")
    return path


def append_log(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)
