"""What an untrusted call can do once it has returned: threads it leaves, GPU work after its closing marker, and
work shifted inside a timed block. Each check is exercised on its own here (the catalogue runs the attacks)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from arcengine.guard.child import threads, timing
from arcengine.guard.child.judge import _Blocks

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
        with pytest.raises(threads.LeftRunning, match=r"candidate left a thread running after returning \(1 Python"):
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


def test_the_census_counts_native_threads_too() -> None:
    before = threads.census()
    assert before.native >= 1  # this one, at least, where /proc says
    assert threads.grown(before, before._replace(native=before.native + 1)) == "1 native thread(s)"


def test_a_timed_rep_is_its_blocks_mean_so_work_done_early_in_a_block_still_counts() -> None:
    # A module that does its whole block's work in the first call and returns the rest from a cache: per-call
    # medians would read 0 us; the block's mean keeps the work.
    def time_block(workload: object, role: str, seeds: list[int], first: bool, audits: object,
                   warm: bool = False) -> list[timing.Measured]:
        return [timing.Measured(800.0 if i == 0 else 0.0) for i in range(len(seeds))]

    judge = SimpleNamespace(spec=SimpleNamespace(rng_seed=1, input_salt=2, timing=SimpleNamespace(block=8, warmup=4)),
                            input_salt=2, _time_block=time_block)
    blocks = _Blocks(judge, SimpleNamespace(index=0))  # type: ignore[arg-type]
    blocks.size = 8
    assert blocks.measure("candidate", 0, warm=True).us == 800.0  # warm-up calls come one at a time
    assert blocks.measure("candidate", 1, warm=True).us == 0.0
    assert blocks.measure("candidate", 2, warm=False).us == 100.0
    assert blocks.next_seed == 4 + 8
