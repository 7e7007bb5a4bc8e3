"""What an untrusted call can do once it has returned: threads it leaves, GPU work after its closing marker, and
work shifted inside a timed block. Each check is exercised on its own here (the catalogue runs the attacks)."""

from __future__ import annotations

import threading

import pytest

from arcengine.guard.child import threads, timing
from arcengine.guard.child.worker import CallInputs, _Made

MARKS = timing.Marks(0xA11CE, 0xB0B)
SECOND = timing.Marks(0xC0FFEE, 0xD00D)


def _record(name: str, start: int, correlation: int, value: int = -1) -> timing.Activity:
    return timing.Activity(name, start * 1000, (start + 1) * 1000, correlation, value)


def _block(*between: timing.Activity) -> list[timing.Activity]:
    """Two timed calls; ``between`` launched after the first one's closing set."""
    return [
        _record(timing.MEMSET, 0, 1, MARKS.open), _record("spin", 1, 2), _record("kernel", 2, 3),
        _record(timing.MEMSET, 3, 4, MARKS.close), *between,
        _record(timing.MEMSET, 10, 20, SECOND.open), _record("spin", 11, 21), _record("kernel", 12, 22),
        _record(timing.MEMSET, 13, 23, SECOND.close), _record("memcpy", 14, 24),
    ]


def test_work_launched_after_a_calls_closing_marker_beyond_the_harness_copies_is_stray() -> None:
    copy = _record("memcpy", 4, 5)
    honest = timing.block_spans(_block(copy), [MARKS, SECOND], closed_before=0, copies=[1, 1])
    assert [span.stray for span in honest] == [None, None]
    late = _block(copy, _record("fill_answer_late", 5, 6))  # a thread, a finalizer, a signal handler
    spans = timing.block_spans(late, [MARKS, SECOND], closed_before=0, copies=[1, 1])
    assert spans[0].stray is not None and "after its call had ended (fill_answer_late, memcpy)" in spans[0].stray
    assert spans[1].stray is None
    last = timing.block_spans(_block(copy), [MARKS, SECOND], closed_before=0, copies=[1, 0])  # after the last call
    assert last[1].stray is not None and "after its call had ended" in last[1].stray


def test_a_tensor_count_is_the_copies_a_kept_output_launches() -> None:
    import torch

    assert timing.tensor_count((torch.ones(2), [torch.ones(3), torch.empty(0)], 4.0)) == 2


def test_a_thread_alive_when_an_untrusted_call_returns_fails_it() -> None:
    release = threading.Event()

    def leaves_one() -> int:
        threading.Thread(target=release.wait, daemon=True).start()
        return 1

    watched = threads.Watch(leaves_one, "candidate")
    try:
        left = r"candidate left a thread running after returning \(1 thread\(s\): Thread-"
        with pytest.raises(threads.LeftRunning, match=left):
            watched()
    finally:
        release.set()
    assert threads.Watch(lambda: 2, "candidate")() == 2


def test_a_thread_started_after_the_call_returned_is_found_after_its_close() -> None:
    watched = threads.Watch(lambda: 3, "candidate")
    assert watched() == 3 and watched.after_close() is None
    release = threading.Event()
    late = threading.Thread(target=release.wait, daemon=True)  # as a host callback during the synchronise would
    late.start()
    try:
        reason = watched.after_close()
        assert reason is not None and reason.startswith("candidate started a thread that ran after its call")
    finally:
        release.set()
        late.join()


def test_the_census_lists_native_threads_by_id() -> None:
    before = threads.census()
    assert threading.get_native_id() in before.native  # this one, at least, where /proc says
    assert threads.grown(before, before._replace(native=before.native | {1 << 30})) == "1 thread(s): native, gone"
    # A thread that exits while another starts leaves the count as it was, not the ids.
    swapped = before._replace(native=(before.native - {min(before.native)}) | {1 << 30})
    assert threads.grown(before, swapped) is not None


def test_a_blocks_inputs_are_made_one_call_at_a_time_from_seeds_drawn_then() -> None:
    # Made before the block, every call's inputs existed while the first ran: a module could find them (through
    # the collector, from native code: native_future_inputs) and do the whole block's work in one call.
    calls = CallInputs(3, lambda i: _Made(seed=100 + i, inputs=[i], pristine=None, outputs=[], layouts=[]))
    seen: list[int] = []

    def run(x: int) -> int:
        seen.append(len(calls.made))  # how many calls' inputs exist while this one runs
        return x

    timed = timing.each_timed(timing.CpuTimer(), run, calls)
    assert [call.out for call in timed] == [0, 1, 2] and seen == [1, 2, 3]
    assert [call.seed for call in calls.made] == [100, 101, 102]
    with pytest.raises(IndexError):
        calls[3]


def test_the_harness_making_the_next_calls_inputs_is_not_work_after_the_call() -> None:
    made = timing.Marks(SECOND.open, SECOND.close, 0xFACE)
    batch = [*_block(_record("memcpy", 4, 5), _record(timing.MEMSET, 5, 6, made.made),
                     _record("normal_distribution", 6, 7), _record("copy_snapshot", 7, 8))]
    spans = timing.block_spans(batch, [MARKS, made], closed_before=0, copies=[1, 1])
    assert [span.stray for span in spans] == [None, None]
    early = [*_block(_record("memcpy", 4, 5), _record("fill_answer_late", 5, 6), _record(timing.MEMSET, 6, 7,
                                                                                          made.made))]
    assert timing.block_spans(early, [MARKS, made], 0, copies=[1, 1])[0].stray is not None


def test_threads_that_can_no_longer_be_counted_are_not_taken_as_none() -> None:
    # A module that uses up its process's descriptors makes /proc/self/task unreadable: no census at all.
    before = threads.census()
    blind = before._replace(native=None)
    assert threads.grown(before, blind) is not None and "could not be counted" in str(threads.grown(before, blind))
    assert threads.grown(blind, before) is not None
    assert threads.grown(blind, blind, countable=False) is None  # a system without /proc: the interpreter's count
