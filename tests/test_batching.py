"""arcengine/recording/batching.py: group commit (callers lead their batch) and the batch writer (a task writes)."""

from __future__ import annotations

import anyio
import pytest

from arcengine.recording.batching import BatchWriter, GroupCommit


class Slow:
    """A commit that takes a moment and records each batch it got."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on
        self.started = anyio.Event()  # a commit is under way

    async def __call__(self, items: list[str]) -> None:
        self.started.set()
        await anyio.sleep(0.01)
        if self.fail_on in items:
            raise OSError(f"cannot write {self.fail_on}")
        self.batches.append(list(items))


async def test_a_lone_item_is_committed_at_once_and_the_caller_waits_for_it() -> None:
    commit = Slow()
    await GroupCommit(commit)(["a"])
    assert commit.batches == [["a"]]


async def hand_over_during_a_commit(commit: Slow, later: str) -> dict[str, str]:
    """Hand over "a", then each of ``later`` while a's batch is being committed: how each one ended."""
    group = GroupCommit(commit)
    ended: dict[str, str] = {}

    async def hand_over(item: str) -> None:
        try:
            await group([item])
            ended[item] = "committed"
        except OSError:
            ended[item] = "failed"

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hand_over, "a")
        await commit.started.wait()
        for item in later:
            tasks.start_soon(hand_over, item)
    return ended


async def test_what_queues_up_during_a_commit_goes_together_in_hand_over_order() -> None:
    commit = Slow()
    ended = await hand_over_during_a_commit(commit, "bcde")
    assert commit.batches == [["a"], ["b", "c", "d", "e"]]  # b..e arrived while a was being committed
    assert ended == dict.fromkeys("abcde", "committed")


async def test_a_failed_batch_fails_every_caller_in_it() -> None:
    commit = Slow(fail_on="c")
    ended = await hand_over_during_a_commit(commit, "bc")
    assert ended == {"a": "committed", "b": "failed", "c": "failed"} and commit.batches == [["a"]]


async def test_a_cancelled_leader_still_commits_the_batch_others_joined() -> None:
    commit = Slow()
    group = GroupCommit(commit)
    with anyio.fail_after(5):  # were c's batch dropped, c would wait for ever
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(group, ["a"])
            await commit.started.wait()
            async with anyio.create_task_group() as leader:
                leader.start_soon(group, ["b"])  # leads the next batch: waits for a's commit
                await anyio.sleep(0)
                tasks.start_soon(group, ["c"])  # joins b's batch
                await anyio.sleep(0)
                leader.cancel_scope.cancel()
    assert commit.batches == [["a"], ["b", "c"]]


async def test_batch_writer_writes_in_the_background_and_signals_each_batch() -> None:
    commit = Slow()
    writer: BatchWriter[str] = BatchWriter(commit)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(writer.run)
        first = writer.put("a")
        assert not first.is_set()  # put never waits
        await first.wait()
        second, third = writer.put("b"), writer.put("c")
        assert second is third  # queued together, written together
        await third.wait()
        tasks.cancel_scope.cancel()
    assert commit.batches == [["a"], ["b", "c"]]


async def test_batch_writer_flush_writes_what_is_queued_and_a_failure_sticks() -> None:
    writer: BatchWriter[str] = BatchWriter(Slow(fail_on="bad"))
    writer.put("ok")
    await writer.flush()
    writer.put("bad")
    with pytest.raises(OSError):
        await writer.flush()
    writer.put("later")
    with pytest.raises(OSError):  # nothing after a failed batch is written
        await writer.flush()
    await writer.flush_if_intact()  # closing or reading after the failure does not raise again
