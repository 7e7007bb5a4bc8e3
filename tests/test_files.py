"""arcengine/recording/files.py: the run folder's files, written by a writer task."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from arcengine.recording.bus import RecordingError
from arcengine.recording.files import FileWriter
from arcengine.recording.helper import NICENESS


async def test_files_are_on_disk_when_their_event_is_set_and_rewrites_replace_them(tmp_path: Path) -> None:
    files = FileWriter()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(files.run)
        await files.put(tmp_path / "a.py", "a long first text\n").wait()
        assert (tmp_path / "a.py").read_text() == "a long first text\n"
        await files.write(tmp_path / "a.py", "short\n")  # a shorter rewrite leaves nothing of the old text
        assert (tmp_path / "a.py").read_text() == "short\n"
        tasks.cancel_scope.cancel()


async def test_one_batch_writes_many_files_and_the_last_text_of_a_path_wins(tmp_path: Path) -> None:
    files = FileWriter()
    for i in range(20):
        files.put(tmp_path / f"c{i}.py", f"# {i}\n")
    files.put(tmp_path / "best.py", "old\n", atomic=True)
    files.put(tmp_path / "best.py", "new\n", atomic=True)
    await files.close()
    assert [(tmp_path / f"c{i}.py").read_text() for i in range(20)] == [f"# {i}\n" for i in range(20)]
    assert (tmp_path / "best.py").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp") == []


async def test_a_file_that_cannot_be_written_is_a_recording_error(tmp_path: Path) -> None:
    files = FileWriter()
    files.put(tmp_path / "missing-folder" / "c1.py", "x\n")
    with pytest.raises(RecordingError, match=r"c1\.py"):
        await files.close()


async def test_the_writer_is_a_process_of_its_own_without_keys_and_its_death_is_a_recording_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-canary-files")
    files = FileWriter()
    failures: list[BaseException] = []
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(files.run)
            await files.write(tmp_path / "a.py", "a\n")
            pid = files.worker_pid
            assert pid is not None and pid != os.getpid()
            assert b"sk-canary-files" not in Path(f"/proc/{pid}/environ").read_bytes()
            engine_niceness = os.getpriority(os.PRIO_PROCESS, 0)
            assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, engine_niceness + NICENESS)  # the loop goes first
            os.kill(pid, signal.SIGKILL)
            files.put(tmp_path / "b.py", "b\n")
            await anyio.sleep_forever()  # the writer's failure ends the task group
    except* RecordingError as failed:
        failures = list(failed.exceptions)
    assert len(failures) == 1 and "file writer process" in str(failures[0])
    await files.close()
    assert files.worker_pid is None
