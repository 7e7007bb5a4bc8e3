"""The progress display of eval and problems check: a rich spinner on a terminal, plain lines elsewhere, stderr
only (stdout stays the --json document)."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

from arcengine.progress import Progress
from tests.conftest import SCALE


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with Progress(stream, label="eval") as progress:
        progress.step("profiling the device (cpu)")
        progress.step("checking and timing c.py")
    assert stream.getvalue() == "eval: profiling the device (cpu) ...\neval: checking and timing c.py ...\n"


def test_a_spinner_on_a_terminal_cleared_at_the_end() -> None:
    stream = Terminal()
    with Progress(stream, label="eval") as progress:
        assert progress.live
        progress.step("checking and timing c.py")
    written = stream.getvalue()
    assert "\x1b[" in written and "eval: checking and timing c.py" in written  # drawn with escapes
    assert " ...\n" not in written  # not the plain lines


def test_problems_check_json_on_a_terminal_keeps_stdout_to_the_document() -> None:
    """stderr is a real pseudo-terminal (the spinner draws there), stdout a pipe read by a script."""
    leader, follower = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # read as it is drawn: a full terminal buffer would block the command
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other side closed: all was read
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        done = subprocess.run([sys.executable, "-m", "arcengine.cli", "problems", "check", str(SCALE), "--device",
                               "cpu", "--json"], stdout=subprocess.PIPE, stderr=follower, text=True, check=False,
                              env={**os.environ, "COLUMNS": "120"})
    finally:
        os.close(follower)
        reader.join()
        os.close(leader)
    drawn = b"".join(chunks)
    assert done.returncode == 0, drawn.decode(errors="replace")
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["problem"] == "scale" and report["device"] == "cpu"
    assert [seed["verdict"] for seed in report["seeds"]] == ["pass"]
    assert b"check scale: checking and timing seed.py" in drawn and b"\x1b[" in drawn


def test_eval_progress_is_plain_lines_on_stderr_when_piped(tmp_path: Path) -> None:
    candidate = tmp_path / "candidate.py"
    candidate.write_text("import torch\n\n\ndef run(x):\n    return x * 2\n")  # wrong: a quick fail
    done = subprocess.run([sys.executable, "-m", "arcengine.cli", "eval", str(SCALE), str(candidate), "--device",
                           "cpu", "--seeds", "1", "--no-baseline", "--json"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1
    assert json.loads(done.stdout)["verdict"] == "fail"
    assert done.stderr.splitlines() == ["eval: profiling the device (cpu) ...",
                                        "eval: checking and timing candidate.py on cpu against the reference, "
                                        "3 workloads ..."]
