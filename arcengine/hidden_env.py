"""Keep API keys out of ``/proc/PID/environ``.

Any process of the same user (and root) can read a process's exec-time environment block, so a candidate's
process could find the engine's pid and read its keys there. Unsetting a variable does not erase that block;
executing again does: the engine re-executes itself once with the secret variables removed from the environment
and handed over through a pipe, then puts them back into ``os.environ`` (process memory, where the SDKs read
them, not the block ``/proc`` shows).
"""

from __future__ import annotations

import json
import os
import sys

from arcengine.recording.redact import SECRET_NAME

_FD_VARIABLE = "ARCENGINE_SECRETS_FD"


def hide_secrets_from_proc(argv: list[str]) -> None:
    """Re-execute ``python -m arcengine.cli ARGV`` without secrets in the environment block (Linux), or, in the
    re-executed process, take them back from the pipe. Does nothing when there are no secret variables."""
    handed_over = os.environ.pop(_FD_VARIABLE, None)
    if handed_over is not None:
        with os.fdopen(int(handed_over), "rb") as pipe:
            os.environ.update(json.loads(pipe.read()))
        return
    secrets = {name: value for name, value in os.environ.items() if SECRET_NAME.search(name)}
    if not secrets or not sys.platform.startswith("linux"):
        return
    read_end, write_end = os.pipe()
    payload = json.dumps(secrets).encode()
    if len(payload) > 60_000:  # more than a pipe holds before the reader runs: leave the environment as it is
        os.close(read_end)
        os.close(write_end)
        return
    os.write(write_end, payload)
    os.close(write_end)
    os.set_inheritable(read_end, True)
    environment = {name: value for name, value in os.environ.items() if name not in secrets}
    environment[_FD_VARIABLE] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "arcengine.cli", *argv], environment)
