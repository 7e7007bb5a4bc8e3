"""Memory of conclusions: wins (why something worked) and traps (what failed and why).

Retention follows the paper: per kernel type, wins keep the ``cap`` best by speedup and traps the ``cap``
newest (first in, first out); ``cap=None`` keeps everything. Memory is shared by all agents or private to
each. The state changes only through ``MemoryRecorded`` / ``MemoryEvicted`` events: ``admit`` says which
events a new conclusion causes, ``record`` folds and publishes them, ``apply`` (a bus subscriber) folds what the
log holds (after a resume, the whole history).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from arcengine.domain.conclusions import CONTEXT_LIMIT, REFLECTION_LIMIT, SUMMARY_LIMIT, Recall, clip
from arcengine.domain.events import Event, MemoryEvicted, MemoryRecorded

# Entry ids: 48 random bits, as uuid4().hex[:12] gave, from a generator seeded once; uuid4 asks the kernel for
# randomness on every call, which cost 75 us here, a tenth of what the engine spends on a candidate.
_ENTRY_IDS = random.Random()

Scope = Literal["shared", "private"]


class Memory:
    def __init__(self, cap: int | None = 16, scope: Scope = "shared") -> None:
        self.cap = cap
        self.scope = scope
        # Entries by bucket (kind, kernel type, owner), each in arrival order: every agent's step recalls two
        # buckets, and a private memory holds one set of buckets per agent.
        self._buckets: dict[tuple[str, str, str | None], dict[str, MemoryRecorded]] = {}
        self._bucket_of: dict[str, tuple[str, str, str | None]] = {}  # entry id -> its bucket

    async def record(self, publish_all: Callable[[list[Event]], Awaitable[Any]], **conclusion: Any) -> None:
        """Admit a conclusion and publish its events (the entry and what it evicts, together). They are folded in
        before the publication is awaited, so the next agent's admission, concurrent or not, sees them: two
        agents cannot both evict against the same state, and none waits for another's log write. (``apply``,
        the bus subscriber, then finds them already there.)"""
        events = self.admit(**conclusion)
        for event in events:
            self._fold(event)
        if events:
            await publish_all(events)

    def owner_for(self, agent_id: str) -> str | None:
        return agent_id if self.scope == "private" else None

    def _bucket(self, kind: str, kernel_type: str, owner: str | None) -> list[MemoryRecorded]:
        return list(self._buckets.get((kind, kernel_type, owner), {}).values())

    def admit(
        self,
        *,
        kind: Literal["win", "trap"],
        kernel_type: str,
        agent_id: str,
        candidate_id: str,
        strategy: str,
        speedup: float | None,
        context: str,
        summary: str,
        reflection: str,
        params: dict[str, object] | None = None,
    ) -> list[Event]:
        """The events that recording this conclusion causes (empty if retention would drop it at once)."""
        entry = MemoryRecorded(
            entry_id=f"{_ENTRY_IDS.getrandbits(48):012x}",
            kind=kind,
            kernel_type=kernel_type,
            owner=self.owner_for(agent_id),
            agent_id=agent_id,
            candidate_id=candidate_id,
            strategy=strategy,
            speedup=speedup,
            context=clip(context, CONTEXT_LIMIT),
            summary=clip(summary, SUMMARY_LIMIT),
            reflection=clip(reflection, REFLECTION_LIMIT),
            params=params or {},
        )
        bucket = self._bucket(kind, kernel_type, entry.owner)
        if self.cap is None or len(bucket) < self.cap:
            return [entry]
        if kind == "trap":  # first in, first out: bucket is in arrival order
            return [entry, MemoryEvicted(entry_id=bucket[0].entry_id, reason="oldest trap beyond the cap")]
        weakest = min(bucket, key=lambda e: e.speedup or 0.0)
        if (entry.speedup or 0.0) <= (weakest.speedup or 0.0):
            return []
        return [entry, MemoryEvicted(entry_id=weakest.entry_id, reason="weakest win beyond the cap")]

    async def apply(self, event: Event) -> None:
        self._fold(event)

    def _fold(self, event: Event) -> None:
        if isinstance(event, MemoryRecorded):
            bucket = self._bucket_of.setdefault(event.entry_id, (event.kind, event.kernel_type, event.owner))
            self._buckets.setdefault(bucket, {})[event.entry_id] = event
        elif isinstance(event, MemoryEvicted) and event.entry_id in self._bucket_of:
            del self._buckets[self._bucket_of.pop(event.entry_id)][event.entry_id]

    def recall(self, kernel_type: str, agent_id: str) -> Recall:
        owner = self.owner_for(agent_id)
        wins = sorted(self._bucket("win", kernel_type, owner), key=lambda e: -(e.speedup or 0.0))
        return Recall(wins=wins, traps=self._bucket("trap", kernel_type, owner))

    def __len__(self) -> int:
        return len(self._bucket_of)
