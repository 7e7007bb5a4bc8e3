"""The helper processes' side of their pipe (standard library only): requests arrive on stdin as an 8-byte
little-endian length and a payload, and each is answered on stdout with one JSON line before the next is read.
End of input ends the loop, after the request in hand."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import BinaryIO

HEADER = struct.Struct("<Q")


def read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    """``size`` bytes, or None at the end of input."""
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve(handle: Callable[[bytes], dict[str, object]], requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer each request with what ``handle`` makes of its payload."""
    while (header := read_exactly(requests, HEADER.size)) is not None:
        payload = read_exactly(requests, HEADER.unpack(header)[0])
        if payload is None:
            return
        replies.write(json.dumps(handle(payload)).encode() + b"\n")
        replies.flush()
