"""A campaign's seeds: the kernels its agents start from, one per file a problem's ``seeds`` names.

Every seed is judged before the agents start; the best that passes is the incumbent (the run's fold,
arcengine.domain.run, says which). The offline tuner's agents are spread over the passing seeds that declare
TUNABLES, so each seed's TUNABLES are searched; every other agent starts from the incumbent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from arcengine.domain.events import CandidateDecided
from arcengine.domain.skills import Skill
from arcengine.domain.tunables import declares_tunables, read_tunables

FIRST_SEED_ID = "c0000"  # the first seed's candidate id; agents' candidates are c0001 onwards
TUNER = "offline"  # the provider whose agents are spread over the seeds


def seed_candidate_id(index: int) -> str:
    """The candidate id of the problem's ``index``-th seed: c0000, then c0000-2, c0000-3 (before c0001 in order)."""
    return FIRST_SEED_ID if index == 0 else f"{FIRST_SEED_ID}-{index + 1}"


@dataclass(frozen=True)
class Seed:
    """One seed of a campaign: its file (relative to the problem folder), its source and the guard's decision."""

    candidate_id: str
    file: str
    source: str
    decided: CandidateDecided | None = None  # None until judged

    @property
    def passed(self) -> bool:
        return self.decided is not None and self.decided.decision == "KEEP"

    @property
    def speedup(self) -> float | None:
        return self.decided.speedup if self.decided is not None else None


def failure_reason(seeds: list[Seed]) -> str:
    """Why the campaign cannot start when no seed passes (one seed: its reason, as it always read)."""
    if len(seeds) == 1:
        return f"the seed fails the guard: {seeds[0].decided.reason if seeds[0].decided else 'not judged'}"
    reasons = "; ".join(f"{seed.file}: {seed.decided.reason if seed.decided else 'not judged'}" for seed in seeds)
    return f"no seed passes the guard ({reasons})"


def starting_seeds(seeds: list[Seed], incumbent: Seed, agents: int, provider: str) -> list[Seed]:
    """Where each agent starts. The offline tuner's agent i starts from the (i mod n)-th of the n passing seeds
    that declare TUNABLES, in the order problem.toml lists them; any other provider's agents, and every agent
    when no passing seed declares TUNABLES, start from the incumbent."""
    tunable = [seed for seed in seeds if seed.passed and declares_tunables(seed.source)] if provider == TUNER else []
    if not tunable:
        return [incumbent] * agents
    return [tunable[number % len(tunable)] for number in range(agents)]


def assign_strategies(skills: list[Skill], starts: list[str], provider: str) -> list[Skill]:
    """Each agent's strategy, given the kernel it starts from (``starts``, one source per agent): round-robin over
    the eligible strategies among the agents that start from the same kernel. The offline tuner gets only the
    strategies it can act on in its kernel's TUNABLES (all of them where none can). ``skills`` is not empty."""
    usable: dict[str, list[Skill]] = {}
    turns: Counter[str] = Counter()
    chosen = []
    for source in starts:
        if source not in usable:
            usable[source] = skills
            if provider == TUNER:
                space, _ = read_tunables(source)
                usable[source] = [s for s in skills if set(s.tunables) & set(space)] or skills
        chosen.append(usable[source][turns[source] % len(usable[source])])
        turns[source] += 1
    return chosen
