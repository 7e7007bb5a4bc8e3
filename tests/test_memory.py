"""arcengine/engine/memory.py: retention (wins by speedup, traps FIFO, no cap), buckets, scope, field limits, recall.

State changes only through the events ``admit`` returns, fed to ``apply``.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio

from arcengine.domain.conclusions import CONTEXT_LIMIT, REFLECTION_LIMIT, SUMMARY_LIMIT, clip
from arcengine.domain.events import AgentStarted, Event, MemoryEvicted, MemoryRecorded
from arcengine.engine.memory import Memory

KT = "normalization"


def _admit(memory: Memory, kind: str = "win", speedup: float | None = 1.0, *, agent: str = "a1",
           kernel_type: str = KT, tag: str = "", **fields: Any) -> list:
    values: dict[str, Any] = {"context": "ctx", "summary": f"summary {tag}", "reflection": "why"}
    values.update(fields)
    return memory.admit(kind=kind, kernel_type=kernel_type, agent_id=agent, candidate_id=f"k-{tag}",
                        strategy="memory", speedup=speedup, **values)


async def _record(memory: Memory, *args: Any, **kwargs: Any) -> list:
    events = _admit(memory, *args, **kwargs)
    for event in events:
        await memory.apply(event)
    return events


def _speedups(entries: list[MemoryRecorded]) -> list[float | None]:
    return [e.speedup for e in entries]


async def test_admit_alone_does_not_change_state() -> None:
    memory = Memory(cap=2)
    events = _admit(memory, speedup=1.5)
    assert len(events) == 1 and isinstance(events[0], MemoryRecorded)
    assert len(memory) == 0
    assert memory.recall(KT, "a1").wins == []
    await memory.apply(events[0])
    assert len(memory) == 1


async def test_wins_keep_the_cap_best_and_reject_a_weaker_one() -> None:
    memory = Memory(cap=3)
    for s in (1.2, 1.5, 1.1):
        await _record(memory, "win", s)
    assert _admit(memory, "win", 1.05) == []  # weaker than the weakest: not admitted
    assert _admit(memory, "win", 1.1) == []  # equal to the weakest: not admitted either
    assert sorted(_speedups(memory.recall(KT, "a1").wins)) == [1.1, 1.2, 1.5]


async def test_a_stronger_win_evicts_the_weakest() -> None:
    memory = Memory(cap=3)
    recorded = [(await _record(memory, "win", s))[0] for s in (1.2, 1.5, 1.1)]
    events = _admit(memory, "win", 1.3)
    assert [type(e) for e in events] == [MemoryRecorded, MemoryEvicted]
    assert events[1].entry_id == recorded[2].entry_id  # the 1.1 win
    for event in events:
        await memory.apply(event)
    assert _speedups(memory.recall(KT, "a1").wins) == [1.5, 1.3, 1.2]
    assert len(memory) == 3


async def test_traps_are_first_in_first_out() -> None:
    memory = Memory(cap=3)
    first = (await _record(memory, "trap", None, tag="t0"))[0]
    for i in (1, 2):
        await _record(memory, "trap", None, tag=f"t{i}")
    events = _admit(memory, "trap", None, tag="t3")
    assert isinstance(events[1], MemoryEvicted) and events[1].entry_id == first.entry_id
    for event in events:
        await memory.apply(event)
    await _record(memory, "trap", None, tag="t4")
    assert [e.summary for e in memory.recall(KT, "a1").traps] == ["summary t2", "summary t3", "summary t4"]


async def test_no_cap_keeps_everything() -> None:
    memory = Memory(cap=None)
    for i in range(40):
        assert len(await _record(memory, "win", 1.0 + i / 100)) == 1
        assert len(await _record(memory, "trap", None, tag=str(i))) == 1
    recall = memory.recall(KT, "a1")
    assert len(recall.wins) == 40 and len(recall.traps) == 40


async def test_default_cap_is_16() -> None:
    memory = Memory()
    for i in range(20):
        await _record(memory, "trap", None, tag=str(i))
    traps = memory.recall(KT, "a1").traps
    assert len(traps) == 16 and traps[0].summary == "summary 4"


async def test_buckets_are_per_kernel_type_and_kind() -> None:
    memory = Memory(cap=1)
    await _record(memory, "win", 1.2, kernel_type="normalization")
    await _record(memory, "win", 1.1, kernel_type="softmax")  # its own bucket: admitted though weaker
    await _record(memory, "trap", None, kernel_type="normalization")  # traps do not compete with wins
    assert _speedups(memory.recall("normalization", "a1").wins) == [1.2]
    assert _speedups(memory.recall("softmax", "a1").wins) == [1.1]
    assert len(memory.recall("normalization", "a1").traps) == 1
    assert memory.recall("softmax", "a1").traps == []
    assert len(memory) == 3


async def test_private_scope_separates_agents() -> None:
    memory = Memory(cap=1, scope="private")
    await _record(memory, "win", 1.5, agent="a1")
    events = await _record(memory, "win", 1.1, agent="a2")  # a2's own bucket has room
    assert len(events) == 1 and events[0].owner == "a2"
    assert _speedups(memory.recall(KT, "a1").wins) == [1.5]
    assert _speedups(memory.recall(KT, "a2").wins) == [1.1]
    assert memory.recall(KT, "a3").wins == []


async def test_shared_scope_is_one_pool_for_all_agents() -> None:
    memory = Memory(cap=1, scope="shared")
    first = await _record(memory, "win", 1.5, agent="a1")
    assert first[0].owner is None
    assert _admit(memory, "win", 1.1, agent="a2") == []  # competes with a1's win
    assert _speedups(memory.recall(KT, "a2").wins) == [1.5]
    assert _speedups(memory.recall(KT, "a3").wins) == [1.5]


async def test_fields_are_clipped_to_their_limits() -> None:
    memory = Memory()
    events = _admit(memory, summary="s" * 500, reflection="r" * 5000, context="c" * 900)
    entry = events[0]
    assert len(entry.summary) == SUMMARY_LIMIT and entry.summary.endswith("…")
    assert len(entry.reflection) == REFLECTION_LIMIT and entry.reflection.endswith("…")
    assert len(entry.context) == CONTEXT_LIMIT and entry.context.endswith("…")
    assert (SUMMARY_LIMIT, REFLECTION_LIMIT) == (160, 1200)


async def test_short_fields_are_kept_with_whitespace_collapsed() -> None:
    entry = _admit(Memory(), summary="  BLOCK_N\n 256→512 ", reflection="fine", context="M=4,\tN=300")[0]
    assert (entry.summary, entry.reflection, entry.context) == ("BLOCK_N 256→512", "fine", "M=4, N=300")


def test_clip_at_exactly_the_limit_is_unchanged() -> None:
    assert clip("x" * 10, 10) == "x" * 10
    assert clip("x" * 11, 10) == "x" * 9 + "…"


async def test_recall_orders_wins_best_first_and_traps_oldest_first() -> None:
    memory = Memory(cap=None)
    for s in (1.1, 1.7, 1.3, 1.5):
        await _record(memory, "win", s)
    for tag in ("first", "second", "third"):
        await _record(memory, "trap", None, tag=tag)
    recall = memory.recall(KT, "a1")
    assert _speedups(recall.wins) == [1.7, 1.5, 1.3, 1.1]
    assert [e.summary for e in recall.traps] == ["summary first", "summary second", "summary third"]


async def test_params_are_kept() -> None:
    memory = Memory()
    await _record(memory, "trap", None, params={"BLOCK_N": 8192})
    assert memory.recall(KT, "a1").traps[0].params == {"BLOCK_N": 8192}


async def test_apply_ignores_other_events_and_unknown_evictions() -> None:
    memory = Memory()
    await _record(memory, "win", 1.2)
    await memory.apply(MemoryEvicted(entry_id="not-there", reason="x"))
    await memory.apply(AgentStarted(agent_id="a1", strategy="memory", provider="offline"))
    assert len(memory) == 1


async def test_cap_holds_when_two_records_interleave() -> None:
    """record() admits and publishes as one step, so concurrent agents cannot both evict the same entry."""
    memory = Memory(cap=2)
    for s in (1.1, 1.2):
        await _record(memory, "win", s)

    async def publish(events: list[Event]) -> None:
        await anyio.sleep(0)  # a real bus awaits the log write before apply()
        for event in events:
            await memory.apply(event)

    conclusion = {"kind": "win", "kernel_type": KT, "candidate_id": "c", "strategy": "memory", "context": "x",
                  "summary": "s", "reflection": "r"}
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(memory.record, publish, agent_id="a1", speedup=1.5, **conclusion))
        tg.start_soon(functools.partial(memory.record, publish, agent_id="a2", speedup=1.6, **conclusion))
    assert sorted(e.speedup for e in memory.recall(KT, "a1").wins) == [1.5, 1.6]
