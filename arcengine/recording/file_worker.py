"""The run folder's file writer, a process of its own that ``arcengine.recording.files`` starts through
``arcengine.recording.helper`` (with the standard library only). Batches of files arrive on stdin; each is answered on
stdout, one JSON line, once all its files are written.

A process and not a thread of the engine: every system call of a thread hands the interpreter's lock back and
forth with the busy event loop, which made a 64-agent campaign's 10,000 candidate files cost 0.5 ms each where
one costs 20 us alone, and the campaign waited for them.

A request is an 8-byte little-endian length, then one pickle of ``(path, data, atomic)`` per file, one after
the other (from the engine that started this process, so the pickles are trusted); a path that comes twice is
written once, with its last data. A reply is ``{"ok": true}``, or ``{"ok": false,
"filename": ..., "strerror": ...}`` for the first file that could not be written (the batch stops there).
End of input ends the process, after the batch in hand: a killed engine loses no file it had handed over.
"""

from __future__ import annotations

import io
import os
import pickle
import sys

from arcengine.recording.framing import serve


def write_file(path: str, data: bytes, atomic: bool) -> None:
    if atomic:  # readers never see it half-written: a temporary file, then a rename over the old one
        temporary = path + ".tmp"
        overwrite(temporary, data)
        os.replace(temporary, path)
    else:
        overwrite(path, data)


def overwrite(path: str, data: bytes) -> None:
    """Write over the old bytes, then cut what is left: opening with O_TRUNC instead makes ext4 flush the file
    on close (its guard for truncate-and-rewrite), five times the cost of the write."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        written = 0
        while written < len(data):  # a regular file takes it all at once, unless the disk fills up
            written += os.write(fd, data[written:])
        os.ftruncate(fd, written)
    finally:
        os.close(fd)


def files_of(payload: bytes) -> dict[str, tuple[bytes, bool]]:
    """The batch's files by path, each with its last data (a kernel rewritten while the disk was busy)."""
    stream = io.BytesIO(payload)
    latest: dict[str, tuple[bytes, bool]] = {}
    while stream.tell() < len(payload):
        path, data, atomic = pickle.load(stream)
        latest[path] = data, atomic
    return latest


def write_batch(payload: bytes) -> dict[str, object]:
    try:
        for path, (data, atomic) in files_of(payload).items():
            write_file(path, data, atomic)
    except OSError as error:
        return {"ok": False, "filename": error.filename, "strerror": error.strerror or str(error)}
    return {"ok": True}


if __name__ == "__main__":
    serve(write_batch, sys.stdin.buffer, sys.stdout.buffer)
