"""arcengine/providers/offline.py (the TUNABLES tuner) and the provider registry in providers/__init__.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arcengine.domain.conclusions import Recall
from arcengine.domain.events import CandidateDecided, MemoryRecorded, WorkloadResult
from arcengine.domain.problem import Workload
from arcengine.domain.skills import Skill
from arcengine.domain.tunables import read_tunables
from arcengine.providers import create_provider, provider_names
from arcengine.providers.base import AgentContext, Proposal, ProviderError, ProviderExhausted
from arcengine.providers.offline import DISCLAIMER, OfflineProvider
from arcengine.providers.scripted import ScriptedProvider

SOURCE = '''\
import torch

BLOCK = 128
WARPS = 4
STAGES = 2
UNROLL = 1
TUNABLES = {
    "BLOCK": [32, 64, 128, 256, 512],
    "WARPS": [1, 2, 4, 8],
    "STAGES": [1, 2, 3],
    "UNROLL": [1, 2, 4],
}


def run(x):
    return x * 2
'''
SPACE, CURRENT = read_tunables(SOURCE)
STRATEGY_TUNABLES = ("BLOCK", "WARPS", "STAGES")  # UNROLL is outside this strategy
WORKLOADS = [Workload(index=0, axes={"M": 4, "N": 300}, dtype="float32"),
             Workload(index=1, axes={"M": 6, "N": 513}, dtype="float32")]


def _skill(tunables: tuple[str, ...] = STRATEGY_TUNABLES, name: str = "scheduling") -> Skill:
    return Skill(name=name, description="d", kind="strategy", eligible=("*",), tunables=tunables, body="b",
                 path=Path(f"{name}.md"))


def _memory(kind: str, params: dict, speedup: float | None = None) -> MemoryRecorded:
    return MemoryRecorded(entry_id=f"{kind}-{sorted(params.items())}", kind=kind, kernel_type="k", owner=None,
                          agent_id="a0", candidate_id="k0", strategy="scheduling", speedup=speedup, context="c",
                          summary="s", reflection="r", params=params)


def _context(agent_id: str = "a1", *, source: str = SOURCE, drafting: bool = False,
             wins: list[MemoryRecorded] | None = None, traps: list[MemoryRecorded] | None = None,
             skill: Skill | None = None) -> AgentContext:
    return AgentContext(
        agent_id=agent_id, strategy=skill or _skill(), problem_name="p", problem_description="d", kernel_type="k",
        reference_source="def run(x):\n    return x * 2\n", visible_workloads=WORKLOADS, working_source=source,
        best_source=source, best_speedup=1.0, plateau=4 if drafting else 0, drafting=drafting,
        recall=Recall(wins=wins or [], traps=traps or []), leaderboard=None, feedback=None, device="cpu",
    )


def _changed(params: dict, current: dict = CURRENT) -> dict:
    return {n: v for n, v in params.items() if current[n] != v}


# -- local steps ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
async def test_local_step_changes_one_strategy_tunable_by_one_step(seed: int) -> None:
    provider = OfflineProvider(seed=seed)
    proposal = await provider.propose(_context(f"agent-{seed}"))
    changed = _changed(proposal.params)
    assert len(changed) == 1
    ((name, value),) = changed.items()
    assert name in STRATEGY_TUNABLES
    values = SPACE[name]
    assert abs(values.index(value) - values.index(CURRENT[name])) == 1
    assert "local step" in proposal.rationale
    assert proposal.strategy == "scheduling"


async def test_proposal_source_parses_and_holds_the_new_values() -> None:
    proposal = await OfflineProvider().propose(_context())
    ast.parse(proposal.source)
    space, settings = read_tunables(proposal.source)
    assert space == SPACE
    assert settings == proposal.params
    ((name, value),) = _changed(proposal.params).items()
    assert f"{name} = {value!r}\n" in proposal.source
    assert f"{name} {CURRENT[name]!r}→{value!r}" in proposal.rationale
    assert DISCLAIMER in proposal.rationale
    assert proposal.source.endswith("def run(x):\n    return x * 2\n")


async def test_proposals_never_repeat_for_the_same_agent() -> None:
    provider = OfflineProvider(seed=3)
    seen = {tuple(sorted(CURRENT.items()))}
    for _ in range(40):
        proposal = await provider.propose(_context("a1"))
        key = tuple(sorted(proposal.params.items()))
        assert key not in seen
        seen.add(key)
        assert proposal.params["UNROLL"] == CURRENT["UNROLL"]  # outside the strategy: never touched


async def test_a_tunable_that_does_not_matter_under_the_settings_is_never_the_only_change() -> None:
    # KNOB matters only while ROUTE is "compiled": under "eager" a KNOB-only change is the same kernel.
    source = ("ROUTE = 'eager'\nKNOB = 1\nTUNABLES = {'ROUTE': ['eager', 'compiled'], 'KNOB': [1, 2, 3]}\n"
              "TUNABLES_WHEN = {'KNOB': {'ROUTE': ['compiled']}}\n\ndef run(x):\n    return x\n")
    skill = _skill(("ROUTE", "KNOB"))
    for seed in range(12):
        provider = OfflineProvider(seed=seed)
        proposals = [(await provider.propose(_context("a1", source=source, skill=skill))).params for _ in range(3)]
        assert sorted(params["KNOB"] for params in proposals if params["ROUTE"] == "compiled") == [1, 2, 3]
        with pytest.raises(ProviderExhausted):
            await provider.propose(_context("a1", source=source, skill=skill))
    compiled = source.replace("ROUTE = 'eager'", "ROUTE = 'compiled'")
    proposal = await OfflineProvider(seed=0).propose(_context("a1", source=compiled, skill=skill))
    assert proposal.params in ({"ROUTE": "compiled", "KNOB": 2}, {"ROUTE": "eager", "KNOB": 1})


async def test_agents_keep_separate_histories() -> None:
    provider = OfflineProvider(seed=0)
    tiny = "A = 1\nTUNABLES = {'A': [1, 2]}\n\ndef run(x):\n    return x\n"
    first = await provider.propose(_context("a1", source=tiny, skill=_skill(("A",))))
    second = await provider.propose(_context("a2", source=tiny, skill=_skill(("A",))))
    assert first.params == second.params == {"A": 2}


async def test_a_trap_setting_is_never_proposed() -> None:
    trap = _memory("trap", {"BLOCK": 256})  # CURRENT with BLOCK=256 failed before
    for seed in range(20):
        provider = OfflineProvider(seed=seed)
        for _ in range(6):  # every local neighbour but the trapped one
            proposal = await provider.propose(_context("a1", traps=[trap]))
            assert proposal.params != {**CURRENT, "BLOCK": 256}


async def test_a_trapped_value_is_avoided_when_choosing_the_step() -> None:
    # The trap combined BLOCK=256 with another change, so the single step BLOCK=256 is untried but penalised.
    trap = _memory("trap", {"BLOCK": 256, "WARPS": 8})
    for seed in range(20):
        proposal = await OfflineProvider(seed=seed).propose(_context("a1", traps=[trap]))
        assert proposal.params["BLOCK"] != 256


async def test_a_win_value_is_preferred() -> None:
    win = _memory("win", {"WARPS": 8}, speedup=1.4)
    for seed in range(20):
        proposal = await OfflineProvider(seed=seed).propose(_context(f"a{seed}", wins=[win]))
        assert _changed(proposal.params) == {"WARPS": 8}


async def test_strategy_without_usable_tunables_falls_back_to_all() -> None:
    proposal = await OfflineProvider().propose(_context(skill=_skill(("NOT_IN_SPACE",))))
    assert len(_changed(proposal.params)) == 1


# -- far jumps --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
async def test_drafting_jumps_far_within_the_strategy(seed: int) -> None:
    proposal = await OfflineProvider(seed=seed).propose(_context("a1", drafting=True))
    changed = _changed(proposal.params)
    assert changed
    assert set(changed) <= set(STRATEGY_TUNABLES)
    assert "far jump" in proposal.rationale
    assert read_tunables(proposal.source)[1] == proposal.params


async def test_drafting_changes_at_least_two_tunables() -> None:
    counts = []
    for seed in range(30):
        proposal = await OfflineProvider(seed=seed).propose(_context(f"agent-{seed}", drafting=True))
        counts.append(len(_changed(proposal.params)))
    assert min(counts) >= 2, counts


async def test_no_untried_neighbour_falls_back_to_a_far_jump() -> None:
    source = SOURCE.replace("WARPS = 4", "WARPS = 1").replace("STAGES = 2", "STAGES = 1").replace(
        "BLOCK = 128", "BLOCK = 32")
    provider = OfflineProvider(seed=1)
    moves = [(await provider.propose(_context("a1", source=source))).rationale for _ in range(4)]
    assert all("local step" in m for m in moves[:3])  # the corner has three neighbours
    assert "far jump (no untried neighbour)" in moves[3]


# -- exhaustion and errors --------------------------------------------------------------------------------

async def test_source_without_tunables_is_exhausted() -> None:
    with pytest.raises(ProviderExhausted, match="no TUNABLES"):
        await OfflineProvider().propose(_context(source="def run(x):\n    return x\n"))


async def test_malformed_tunables_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="offline provider"):
        await OfflineProvider().propose(_context(source="TUNABLES = {'A': [1]}\n\ndef run(x):\n    return x\n"))


async def test_tiny_space_is_exhausted() -> None:
    tiny = "A = 1\nB = 1\nTUNABLES = {'A': [1, 2], 'B': [1, 2]}\n\ndef run(x):\n    return x\n"
    provider = OfflineProvider(seed=5)
    context = _context("a1", source=tiny, skill=_skill(("A", "B")))
    proposed = []
    with pytest.raises(ProviderExhausted, match="was tried"):
        for _ in range(10):
            proposed.append((await provider.propose(context)).params)
    assert sorted(tuple(p.values()) for p in proposed) == [(1, 2), (2, 1), (2, 2)]


# -- reflect ----------------------------------------------------------------------------------------------

def _decided(decision: str, proposal: Proposal) -> CandidateDecided:
    return CandidateDecided(
        candidate_id="k1", agent_id="a1", decision=decision, reason="slower: 0.900x the incumbent"
        if decision == "REVERT" else "1.100x the incumbent", correct=True, speedup=1.25,
        vs_incumbent=1.1 if decision == "KEEP" else 0.9,
        workloads=[WorkloadResult(index=0, axes={"M": 4, "N": 300}, held_out=False, correct=True, speedup=1.3),
                   WorkloadResult(index=1, axes={"M": 9, "N": 97}, held_out=True, correct=True, speedup=1.2)],
    )


@pytest.mark.parametrize("decision", ["KEEP", "REVERT"])
async def test_reflect_mentions_the_change(decision: str) -> None:
    provider = OfflineProvider()
    context = _context()
    proposal = await provider.propose(context)
    ((name, value),) = _changed(proposal.params).items()
    change = f"{name} {CURRENT[name]!r}→{value!r}"
    reflection = await provider.reflect(context, proposal, _decided(decision, proposal))
    assert reflection.summary.startswith(change)
    assert change in reflection.reflection
    assert "scheduling" in reflection.reflection
    assert "M=4, N=300: 1.30x" in reflection.reflection
    assert "N=97" not in reflection.summary + reflection.reflection  # held-out shapes never reach memory
    if decision == "KEEP":
        assert "1.100x the incumbent" in reflection.summary
    else:
        assert "REVERT" in reflection.summary and "did not help" in reflection.reflection


# -- the registry -----------------------------------------------------------------------------------------

def test_unknown_provider() -> None:
    with pytest.raises(ProviderError, match=r"unknown provider 'nope' \(known: .*offline.*scripted"):
        create_provider("nope")


def test_provider_names() -> None:
    assert {"offline", "scripted"} <= set(provider_names())


async def test_create_offline() -> None:
    provider = create_provider("offline", seed=2)
    assert isinstance(provider, OfflineProvider) and provider.name == "offline"
    assert create_provider("offline:any-model").name == "offline"
    assert len(_changed((await provider.propose(_context())).params)) == 1


async def test_create_scripted_hands_out_the_script_in_order() -> None:
    script = ["def run(x):\n    return x\n", "def run(x):\n    return x + 0\n"]
    provider = create_provider("scripted", script=script)
    assert isinstance(provider, ScriptedProvider) and provider.name == "scripted"
    sources = [(await provider.propose(_context())).source for _ in range(2)]
    assert sources == script
    with pytest.raises(ProviderExhausted):
        await provider.propose(_context())


async def test_scripted_cycle_and_callable() -> None:
    cycling = create_provider("scripted", script=["a", "b"], cycle=True)
    assert [(await cycling.propose(_context())).source for _ in range(5)] == ["a", "b", "a", "b", "a"]
    by_agent = create_provider("scripted", script=lambda ctx: f"# for {ctx.agent_id}")
    assert (await by_agent.propose(_context("a7"))).source == "# for a7"
