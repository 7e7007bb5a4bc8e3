"""arcengine/recording/bus.py: numbering, time stamps, log before subscribers, subscriber order, serialised
publishing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from arcengine.domain.events import AgentStarted, Event, MemoryEvicted
from arcengine.recording.bus import Bus
from arcengine.recording.eventlog import EventLogWriter, read_events


@pytest.fixture
async def logged(tmp_path: Path) -> AsyncIterator[tuple[Bus, Path]]:
    """A bus that writes a real event log, and the log's path."""
    path = tmp_path / "events.jsonl"
    writer = EventLogWriter(path)
    await writer.open()
    try:
        yield Bus(writer), path
    finally:
        await writer.close()


def _event(i: int) -> MemoryEvicted:
    return MemoryEvicted(entry_id=f"e{i}", reason=f"r{i}")


async def test_seq_increases_from_first_seq_and_ts_is_set() -> None:
    bus = Bus(None, first_seq=7)
    published = [await bus.publish(_event(i)) for i in range(3)]
    assert [e.seq for e in published] == [7, 8, 9]
    assert all(e.ts > 0 for e in published)
    assert [e.entry_id for e in published] == ["e0", "e1", "e2"]


async def test_default_first_seq_is_one() -> None:
    bus = Bus(None)
    assert (await bus.publish(_event(0))).seq == 1


async def test_publish_does_not_mutate_the_given_event() -> None:
    bus = Bus(None)
    original = _event(0)
    published = await bus.publish(original)
    assert original.seq == 0 and original.ts == 0.0
    assert published.seq == 1


async def test_event_is_in_the_log_before_subscribers_see_it(logged: tuple[Bus, Path]) -> None:
    bus, path = logged
    seen_in_log: list[list[int]] = []

    async def reader(event: Event) -> None:
        seqs = [e.seq for e in read_events(path)]
        assert seqs and seqs[-1] == event.seq
        seen_in_log.append(seqs)

    bus.subscribe(reader)
    for i in range(3):
        await bus.publish(_event(i))
    assert seen_in_log == [[1], [1, 2], [1, 2, 3]]


async def test_subscribers_called_in_subscription_order_with_the_published_event() -> None:
    bus = Bus(None, first_seq=5)
    calls: list[tuple[str, int]] = []

    def make(name: str):
        async def subscriber(event: Event) -> None:
            calls.append((name, event.seq))

        return subscriber

    for name in ("store", "memory", "display"):
        bus.subscribe(make(name))
    await bus.publish(_event(0))
    await bus.publish(_event(1))
    assert calls == [("store", 5), ("memory", 5), ("display", 5), ("store", 6), ("memory", 6), ("display", 6)]


async def test_concurrent_publishes_give_a_log_numbered_in_order(logged: tuple[Bus, Path]) -> None:
    bus, path = logged
    seen: list[int] = []

    async def slow_subscriber(event: Event) -> None:
        await anyio.sleep(0)  # yield inside publish: other publishers must still wait their turn
        seen.append(event.seq)

    bus.subscribe(slow_subscriber)

    async def agent(i: int) -> None:
        await anyio.sleep(0)
        await bus.publish(AgentStarted(agent_id=f"a{i}", strategy="s", provider="offline"))

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(agent, i)
    logged = list(read_events(path))
    assert [e.seq for e in logged] == list(range(1, 51))
    assert seen == list(range(1, 51))
    assert sorted(e.agent_id for e in logged) == sorted(f"a{i}" for i in range(50))


async def test_line_subscribers_get_the_lines_as_written_before_the_event_subscribers(
        logged: tuple[Bus, Path]) -> None:
    bus, path = logged
    heard: list[str] = []

    def keep_lines(text: str) -> None:
        assert path.read_text().endswith(text)  # written first
        heard.append(text)

    async def on_event(event: Event) -> None:
        heard.append(f"event {event.seq}")

    bus.subscribe_lines(keep_lines)
    bus.subscribe(on_event)
    await bus.publish_all([_event(0), _event(1)])
    await bus.publish(_event(2))
    lines = path.read_text().splitlines(keepends=True)
    assert heard == ["".join(lines[:2]), "event 1", "event 2", lines[2], "event 3"]


async def test_line_subscribers_are_fed_without_a_log() -> None:
    bus = Bus(None)
    heard: list[str] = []
    bus.subscribe_lines(heard.append)
    published = await bus.publish(_event(0))
    assert heard == [published.model_dump_json() + "\n"]
