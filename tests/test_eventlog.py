"""arcengine/recording/eventlog.py: append, read back in order, skip a cut last line, raise on damage in the middle."""

from __future__ import annotations

from pathlib import Path

import pytest

from arcengine.domain.events import AgentStarted, MemoryEvicted
from arcengine.recording.eventlog import EventLogError, EventLogWriter, read_events


def _events(n: int) -> list[AgentStarted]:
    return [AgentStarted(seq=i, agent_id=f"a{i}", strategy="memory", provider="offline") for i in range(1, n + 1)]


async def _write(path: Path, events: list) -> None:
    writer = EventLogWriter(path)
    await writer.open()
    try:
        for event in events:
            await writer.append(event)
    finally:
        await writer.close()


async def test_appended_lines_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "run" / "events.jsonl"  # parent folder created by open()
    written = _events(5)
    await _write(path, written)
    assert list(read_events(path)) == written
    assert path.read_text(encoding="utf-8").count("\n") == 5


async def test_line_is_flushed_on_append(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    writer = EventLogWriter(path)
    await writer.open()
    try:
        await writer.append(_events(1)[0])
        # Visible to another reader before close.
        assert list(read_events(path)) == _events(1)
    finally:
        await writer.close()


async def test_reopen_appends_rather_than_truncates(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    first, second = _events(2)
    await _write(path, [first])
    await _write(path, [second])
    assert list(read_events(path)) == [first, second]


async def test_close_twice_is_harmless(tmp_path: Path) -> None:
    writer = EventLogWriter(tmp_path / "events.jsonl")
    await writer.open()
    await writer.close()
    await writer.close()


async def test_cut_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    written = _events(3)
    await _write(path, written)
    data = path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    cut = last_start + (len(data) - last_start) // 2
    with path.open("r+b") as f:
        f.truncate(cut)
    assert list(read_events(path)) == written[:2]


async def test_cut_inside_a_multibyte_character_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    first = MemoryEvicted(seq=1, entry_id="e1", reason="ok")
    second = MemoryEvicted(seq=2, entry_id="e2", reason="BLOCK_N 256→512")
    await _write(path, [first, second])
    data = path.read_bytes()
    arrow = data.rindex("→".encode())
    path.write_bytes(data[: arrow + 1])  # in the middle of the arrow's three bytes
    assert list(read_events(path)) == [first]


async def test_corrupt_middle_line_raises_with_line_number(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    await _write(path, _events(4))
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"  # line 3 damaged, line 4 intact after it
    path.write_text("".join(lines), encoding="utf-8")
    reader = read_events(path)
    assert [e.seq for e in (next(reader), next(reader))] == [1, 2]
    with pytest.raises(EventLogError, match=r"events\.jsonl:3:"):
        next(reader)


async def test_corrupt_last_line_with_newline_is_damage_not_a_cut(tmp_path: Path) -> None:
    # A complete (newline-terminated) line that is not an event was not cut by a crash: it is damage.
    path = tmp_path / "events.jsonl"
    await _write(path, _events(2))
    with path.open("a", encoding="utf-8") as f:
        f.write('{"type": "no_such_event"}\n')
    with pytest.raises(EventLogError, match=r":3:"):
        list(read_events(path))


async def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    await _write(path, _events(2))
    text = path.read_text(encoding="utf-8").replace("\n", "\n\n", 1)
    path.write_text(text, encoding="utf-8")
    assert [e.seq for e in read_events(path)] == [1, 2]


async def test_empty_log_reads_as_no_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"")
    assert list(read_events(path)) == []


async def test_appending_after_a_cut_last_line_keeps_the_log_readable(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    written = _events(3)
    await _write(path, written[:2])
    with path.open("a", encoding="utf-8") as f:
        f.write('{"v":1,"seq":3,"ts":0.0,"type":"agent_sta')  # the crash cut this write
    await _write(path, [written[2]])  # resume: a new writer appends the next event
    assert list(read_events(path)) == written
