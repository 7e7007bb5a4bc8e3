"""What an LLM agent is shown: the stable prefix and the turn, with and without the leaderboard and a draft."""

from __future__ import annotations

from dataclasses import replace

from arcengine.providers.base import LeaderboardEntry
from arcengine.providers.prompt import propose_prompt
from tests.providers.test_offline import _context


def test_the_prefix_carries_the_problem_and_the_skill_and_the_turn_the_state() -> None:
    context = _context()
    prompt = propose_prompt(context)
    assert context.strategy.body.strip() in prompt.system and context.reference_source.strip() in prompt.system
    assert "M=4, N=300" in prompt.system  # visible shapes only: the context carries no held-out one
    assert context.working_source.strip() in prompt.user and "# Your move" in prompt.user
    assert "# Leaderboard" not in prompt.user and "# Draft request" not in prompt.user


def test_leaderboard_with_sibling_sources_and_the_draft_request() -> None:
    sibling = LeaderboardEntry("a2", "memory", "c0007", 1.8, "def run(x):\n    return x * 2 + 1  # sibling\n")
    context = replace(_context(drafting=True), leaderboard=[sibling])
    prompt = propose_prompt(context)
    assert "a2 (memory): 1.80x with c0007" in prompt.user and "# sibling" in prompt.user
    assert "# Draft request" in prompt.user and "structurally different" in prompt.user
    assert propose_prompt(context).system == propose_prompt(replace(context, plateau=9)).system  # stable prefix


def test_the_contract_names_the_native_routes_and_the_problems_entry_point() -> None:
    plain = propose_prompt(_context()).system
    assert "must define `run(...)`" in plain and "ModelNew" not in plain
    assert "load_inline" in plain and "compiler's first error lines" in plain and "cuda.core (NVRTC)" in plain
    assert "torch.utils.cpp_extension)" not in plain  # no longer among the forbidden escapes
    kernelbench = propose_prompt(replace(_context(), entry="ModelNew")).system
    assert "class ModelNew(torch.nn.Module)" in kernelbench and "must define `run(...)`" not in kernelbench
