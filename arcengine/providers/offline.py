"""The offline provider: a tuner over the working kernel's TUNABLES. No network, no new algorithms.

Each agent searches within its strategy's tunables: a local step (one tunable to a neighbouring value)
steered towards settings that won and away from traps, and a far jump (several tunables at once) when
the agent drafts on a plateau or has no untried neighbour left.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from arcengine.domain.conclusions import Recall
from arcengine.domain.events import SEED_AGENT, CandidateDecided, CandidateProposed, Event
from arcengine.domain.figures import times
from arcengine.domain.tunables import (
    Conditions,
    Settings,
    TunablesError,
    apply_settings,
    describe_change,
    inert,
    read_conditions,
    read_tunables,
)
from arcengine.providers.base import AgentContext, Proposal, ProviderError, ProviderExhausted, Reflection

DISCLAIMER = "The offline provider only searches the kernel's TUNABLES; it never writes new algorithms."
FAR_JUMP_ATTEMPTS = 200


def _key(settings: Settings) -> str:
    return json.dumps(settings, sort_keys=True)


class OfflineProvider:
    name = "offline"

    def __init__(self, seed: int = 0, **_: Any) -> None:
        self._seed = seed
        self._tried: dict[str, set[str]] = defaultdict(set)
        self._rngs: dict[str, random.Random] = {}

    def _rng(self, agent_id: str) -> random.Random:
        if agent_id not in self._rngs:
            self._rngs[agent_id] = random.Random(f"{self._seed}:{agent_id}")
        return self._rngs[agent_id]

    def restore(self, events: Iterable[Event]) -> None:
        """A resumed campaign: what each agent proposed before the crash counts as tried."""
        for event in events:
            if isinstance(event, CandidateProposed) and event.agent_id != SEED_AGENT and event.source:
                with contextlib.suppress(TunablesError):
                    self._tried[event.agent_id].add(_key(read_tunables(event.source)[1]))

    async def propose(self, context: AgentContext) -> Proposal:
        try:
            space, current = read_tunables(context.working_source)
            conditions = read_conditions(context.working_source)
        except TunablesError as error:
            raise ProviderError(f"offline provider: {error}") from None
        if not space:
            raise ProviderExhausted("the offline provider found no TUNABLES in the working kernel; it only tunes a "
                                    "seed's TUNABLES and never writes new kernels: give a seed with TUNABLES, or "
                                    "an LLM provider (--model anthropic:MODEL or openai:MODEL)")
        names = [n for n in context.strategy.tunables if n in space] or list(space)
        tried = self._tried[context.agent_id]
        tried.add(_key(current))
        tried.update(_key({**current, **e.params}) for e in context.recall.traps if e.params)
        rng = self._rng(context.agent_id)

        move, settings = "local step", None
        if not context.drafting:
            settings = self._local_step(current, names, space, tried, context.recall, rng, conditions)
        if settings is None:
            move = "far jump (drafting on a plateau)" if context.drafting else "far jump (no untried neighbour)"
            settings = self._far_jump(current, names, space, tried, context.recall, rng, conditions)
        if settings is None:
            raise ProviderExhausted(
                f"offline provider: every setting of {', '.join(names)} reachable from here was tried"
            )
        tried.add(_key(settings))
        change = describe_change(current, settings)
        request = json.dumps({"agent": context.agent_id, "strategy": context.strategy.name,
                              "tunables": names, "current": current, "plateau": context.plateau,
                              "drafting": context.drafting, "tried": len(tried)}, sort_keys=True)
        return Proposal(
            source=apply_settings(context.working_source, settings),
            strategy=context.strategy.name,
            rationale=f"offline tuner ({context.strategy.name}): {change} ({move}). {DISCLAIMER}",
            request=request,
            response=json.dumps(settings, sort_keys=True),
            params=settings,
        )

    @staticmethod
    def _local_step(current: Settings, names: list[str], space: dict[str, list[Any]], tried: set[str],
                    recall: Recall, rng: random.Random, conditions: Conditions) -> Settings | None:
        options = []
        for name in names:
            values = space[name]
            index = values.index(current[name]) if current[name] in values else 0
            for step in (-1, 1):
                if 0 <= index + step < len(values):
                    settings = {**current, name: values[index + step]}
                    if _key(settings) not in tried and not inert(current, settings, conditions):
                        options.append(settings)
        if not options:
            return None
        won = {(n, v) for e in recall.wins for n, v in e.params.items()}
        trapped = {(n, v) for e in recall.traps for n, v in e.params.items() if current.get(n) != v}

        def score(settings: Settings) -> float:
            changed = [(n, v) for n, v in settings.items() if current[n] != v]
            return sum(((n, v) in won) - 0.5 * ((n, v) in trapped) for n, v in changed) + rng.random() * 0.1

        return max(options, key=score)

    @staticmethod
    def _far_jump(current: Settings, names: list[str], space: dict[str, list[Any]], tried: set[str],
                  recall: Recall, rng: random.Random, conditions: Conditions) -> Settings | None:
        best_win = {n: v for n, v in (recall.wins[0].params if recall.wins else {}).items() if n in current}
        movable = [n for n in names if len(space[n]) > 1]
        wanted = min(2, len(movable))
        for _ in range(FAR_JUMP_ATTEMPTS):
            base = {**current, **best_win} if best_win and rng.random() < 0.5 else dict(current)
            for name in rng.sample(movable, k=min(len(movable), rng.randint(2, 3))):
                base[name] = rng.choice([v for v in space[name] if v != current[name]])
            changed = sum(base[n] != current[n] for n in current)
            if changed >= wanted and _key(base) not in tried and not inert(current, base, conditions):
                return base
        return None

    async def reflect(self, context: AgentContext, proposal: Proposal, decided: CandidateDecided) -> Reflection:
        change = proposal.rationale.split(": ", 1)[-1].split(" (", 1)[0]
        per_workload = "; ".join(
            f"{', '.join(f'{k}={v}' for k, v in w.axes.items())}: {times(w.speedup)} vs reference"
            for w in decided.workloads if w.speedup and not w.held_out
        )
        ratio = f"{decided.vs_incumbent:.3f}x the incumbent" if decided.vs_incumbent else decided.reason
        if decided.decision == "KEEP":
            summary = f"{change}: {ratio}, {times(decided.speedup or 0)} the reference"
            why = (f"Under the {proposal.strategy} strategy, {change} beat the incumbent in paired timing "
                   f"({ratio}) on {context.device}. Per workload: {per_workload}.")
        else:
            summary = f"{change}: {decided.decision} ({decided.reason})"
            why = (f"Under the {proposal.strategy} strategy, {change} did not help on {context.device}: "
                   f"{decided.reason}. Per workload: {per_workload or 'not timed'}.")
        return Reflection(summary=summary, reflection=why)
