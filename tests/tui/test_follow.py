"""EventFollower: complete lines only, partial lines kept until completed, cheap when nothing changed."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from arcengine_tui.follow import EventFollower

from arcengine.domain.events import Event, dump_event
from arcengine.recording.eventlog import EventLogWriter
from tests.tui.campaign_log import append_log, campaign_events, lines


def ids(events: list[Event]) -> list[int]:
    return [e.seq for e in events]


@pytest.fixture
def events() -> list[Event]:
    return campaign_events()


def test_a_missing_file_is_no_events_yet(tmp_path: Path) -> None:
    follower = EventFollower(tmp_path / "events.jsonl")
    assert follower.read() == []
    assert follower.read() == []


def test_reads_only_what_was_appended(tmp_path: Path, events: list[Event]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(lines(events[:3]), encoding="utf-8")
    follower = EventFollower(path)
    assert ids(follower.read()) == [1, 2, 3]
    assert follower.read() == []
    append_log(path, lines(events[3:5]))
    assert ids(follower.read()) == [4, 5]
    assert follower.read() == []
    assert follower.lines == 5 and follower.offset == path.stat().st_size


def test_a_partial_last_line_waits_for_its_newline(tmp_path: Path, events: list[Event]) -> None:
    path = tmp_path / "events.jsonl"
    whole = dump_event(events[7]) + "\n"  # a proposal with a source: a long line
    path.write_text(lines(events[:7]), encoding="utf-8")
    follower = EventFollower(path)
    assert ids(follower.read()) == list(range(1, 8))
    cuts = [0, 25, len(whole) // 2, len(whole) - 1, len(whole)]
    for start, end in itertools.pairwise(cuts[:-1]):  # the line arrives in pieces, its newline last
        append_log(path, whole[start:end])
        assert follower.read() == []
        assert follower.read() == []
    append_log(path, whole[cuts[-2]:] + lines(events[8:10]))
    assert ids(follower.read()) == [8, 9, 10]
    assert follower.read() == []


def test_a_multibyte_character_split_across_writes(tmp_path: Path, events: list[Event]) -> None:
    path = tmp_path / "events.jsonl"
    event = events[7].model_copy(update={"rationale": "NUM_WARPS 4→8 (µ-step)"})
    data = (dump_event(event) + "\n").encode("utf-8")
    cut = data.index("→".encode()) + 1  # inside the arrow's three bytes
    path.write_bytes(data[:cut])
    follower = EventFollower(path)
    assert follower.read() == []
    with path.open("ab") as file:
        file.write(data[cut:])
    (read,) = follower.read()
    assert read == event


def test_catching_up_in_bounded_reads(tmp_path: Path, events: list[Event]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(lines(events), encoding="utf-8")
    follower = EventFollower(path, max_bytes=300)  # smaller than a line with a source: still read whole
    got: list[Event] = []
    reads = 0
    while True:
        batch = follower.read()
        reads += 1
        got += batch
        if not follower.pending:
            break
        assert batch, "a read that stopped early must have made progress"
    assert ids(got) == list(range(1, len(events) + 1))
    assert reads > 3
    assert follower.read() == []


def test_unchanged_file_is_not_opened(tmp_path: Path, events: list[Event], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(lines(events[:4]) + dump_event(events[4])[:10], encoding="utf-8")  # ends in a partial line
    follower = EventFollower(path)
    assert len(follower.read()) == 4

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("opened an unchanged file")

    monkeypatch.setattr("arcengine_tui.follow.open", no_open, raising=False)
    for _ in range(100):
        assert follower.read() == []


def test_a_damaged_line_is_skipped_and_reported(tmp_path: Path, events: list[Event]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(lines(events[:2]) + '{"type": "from_the_future"}\n\n' + lines(events[2:4]), encoding="utf-8")
    follower = EventFollower(path)
    assert ids(follower.read()) == [1, 2, 3, 4]
    assert len(follower.errors) == 1 and follower.errors[0].startswith("line 3:")


def test_a_replaced_log_starts_over(tmp_path: Path, events: list[Event]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(lines(events[:6]), encoding="utf-8")
    follower = EventFollower(path)
    assert len(follower.read()) == 6
    assert not follower.restarted
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(lines(events[:2]), encoding="utf-8")
    replacement.replace(path)
    assert ids(follower.read()) == [1, 2]
    assert follower.restarted
    assert follower.read() == [] and not follower.restarted


async def test_follows_the_real_writer(tmp_path: Path, events: list[Event]) -> None:
    """The campaign's own writer appends and flushes; each read sees exactly the new events."""
    path = tmp_path / "run" / "events.jsonl"
    writer = EventLogWriter(path)
    await writer.open()
    follower = EventFollower(path)
    try:
        for event in events[:8]:
            await writer.append(event)
            assert follower.read() == [event]
    finally:
        await writer.close()
