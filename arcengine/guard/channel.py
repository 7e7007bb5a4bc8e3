"""Messages between the guard's judge and its role workers over a Unix socket.

A message is a JSON header and a raw payload, each length-prefixed. Nothing is pickled: the judge reads what
an untrusted worker sends, and unpickling would run the worker's code in the judge. Tensors travel as their
bytes with a dtype and a shape in the header, so the judge rebuilds plain tensors it owns.

Imports are limited to the standard library and torch, as for the child.
"""

from __future__ import annotations

import json
import math
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

_PREFIX = struct.Struct("!IQ")  # header bytes, payload bytes
MAX_HEADER = 1 << 20  # a header larger than this is a worker misbehaving, not a result


class ChannelClosed(Exception):
    """The other end closed the socket (the worker died or exited)."""


class ChannelTimeout(Exception):
    """No whole message arrived within the time allowed."""


class ChannelError(Exception):
    """The other end sent something that is not a message (a malformed or oversized frame)."""


def send(sock: socket.socket, header: Mapping[str, Any], payload: Sequence[memoryview | bytes] = ()) -> None:
    """One message: the header as JSON, then the payload's parts back to back."""
    encoded = json.dumps(header, allow_nan=True).encode()
    size = sum(len(part) for part in payload)
    sock.sendall(_PREFIX.pack(len(encoded), size) + encoded)
    for part in payload:
        sock.sendall(part)


def receive(sock: socket.socket, timeout_s: float | None = None, max_payload: int = 1 << 40) -> tuple[dict[str, Any],
                                                                                                        bytearray]:
    """The next message. ``timeout_s`` bounds the wait for the whole message (None: no bound)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    head_size, payload_size = _PREFIX.unpack(_read(sock, _PREFIX.size, deadline))
    if head_size > MAX_HEADER or payload_size > max_payload:
        raise ChannelError(f"a message of {head_size} + {payload_size} bytes, over the limit")
    try:
        header = json.loads(_read(sock, head_size, deadline))
    except ValueError as exc:
        raise ChannelError(f"a header that is not JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise ChannelError("a header that is not an object")
    return header, _read(sock, payload_size, deadline)


def _read(sock: socket.socket, size: int, deadline: float | None) -> bytearray:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout()
            sock.settimeout(remaining)
        else:
            sock.settimeout(None)
        try:
            count = sock.recv_into(view[got:], min(size - got, 1 << 24))
        except TimeoutError as exc:
            raise ChannelTimeout() from exc
        except OSError as exc:
            raise ChannelClosed(str(exc)) from exc
        if count == 0:
            raise ChannelClosed("the other end closed the channel")
        got += count
    return buffer


# ---------------------------------------------------------------- tensors


def pack_tensors(tensors: Sequence[torch.Tensor]) -> tuple[list[dict[str, Any]], list[memoryview]]:
    """Host copies of plain tensors: their metadata for the header and their bytes for the payload."""
    meta, parts = [], []
    for tensor in tensors:
        host = tensor.detach().to("cpu").contiguous()
        raw = host.reshape(-1).view(torch.uint8).numpy()
        meta.append({"dtype": str(host.dtype).removeprefix("torch."), "shape": list(host.shape),
                     "nbytes": int(raw.nbytes)})
        parts.append(memoryview(raw).cast("B"))
    return meta, parts


def unpack_tensors(meta: Sequence[Mapping[str, Any]], payload: bytearray) -> list[torch.Tensor]:
    """The tensors ``pack_tensors`` sent, rebuilt on the CPU; ChannelError if the metadata does not fit."""
    tensors, offset = [], 0
    for item in meta:
        try:
            dtype = getattr(torch, str(item["dtype"]))
            shape = [int(n) for n in item["shape"]]
            nbytes = int(item["nbytes"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ChannelError(f"bad tensor metadata {dict(item)!r}") from exc
        fits = isinstance(dtype, torch.dtype) and min(shape, default=0) >= 0
        if not fits or nbytes != math.prod(shape) * dtype.itemsize:
            raise ChannelError(f"bad tensor metadata {dict(item)!r}")
        if offset + nbytes > len(payload):
            raise ChannelError("a payload shorter than its tensors")
        chunk = payload[offset:offset + nbytes]
        flat = torch.frombuffer(chunk, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        tensors.append(flat.view(dtype).reshape(shape))
        offset += nbytes
    return tensors
