"""Messages between the guard's judge and its role workers over a Unix socket.

A message is a JSON header and a raw payload, each length-prefixed. Nothing is pickled: the judge reads what
an untrusted worker sends, and unpickling would run the worker's code in the judge. Tensors travel as their
bytes with a dtype and a shape in the header, so the judge rebuilds plain tensors it owns.

Imports are limited to the standard library and torch, as for the child.
"""

from __future__ import annotations

import fcntl
import json
import math
import mmap
import os
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

_PREFIX = struct.Struct("!IQB")  # header bytes, payload bytes, whether the payload is in a file sent with it
_INT = struct.Struct("i")  # a file descriptor in SCM_RIGHTS data
_ANCILLARY = socket.CMSG_SPACE(2 * _INT.size)  # room for two descriptors: a second one says the sender misbehaved
MAX_HEADER = 1 << 20  # a header larger than this is a worker misbehaving, not a result
# A payload larger than this travels in a sealed memory file passed with the message: a socket moves tens of
# megabytes at a few hundred MB/s (its buffer is small), a memory file at the speed of one copy.
INLINE_PAYLOAD = 1 << 20
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE  # fixed size and content: safe to map


class ChannelClosed(Exception):
    """The other end closed the socket (the worker died or exited)."""


class ChannelTimeout(Exception):
    """No whole message arrived within the time allowed."""


class ChannelError(Exception):
    """The other end sent something that is not a message (a malformed or oversized frame)."""


# A payload part: bytes, or a tensor's bytes (a flat uint8 view, on any device: copied once, where they go).
Part = memoryview | bytes | torch.Tensor
Payload = bytearray | memoryview | mmap.mmap  # what a message's payload is read into, or a view of it


@dataclass(frozen=True)
class Outgoing:
    """A message made ready to send: every tensor already copied off the device (see ``prepare``)."""

    head: bytes  # the length prefix and the JSON header
    parts: Sequence[memoryview | bytes]  # an inline payload
    fd: int | None  # a large payload's sealed memory file (closed once sent)


def prepare(header: Mapping[str, Any], payload: Sequence[Part] = ()) -> Outgoing:
    """The message's bytes, device tensors copied to the host now: a worker does its copies before it opens its
    wait for the judge, so none runs while the judge times another role."""
    encoded = json.dumps(header, allow_nan=True).encode()
    size = sum(_size(part) for part in payload)
    if size <= INLINE_PAYLOAD:
        parts = [memoryview(part.cpu().numpy()).cast("B") if isinstance(part, torch.Tensor) else part
                 for part in payload]
        return Outgoing(_PREFIX.pack(len(encoded), size, 0) + encoded, parts, None)
    return Outgoing(encoded, (), _sealed_file(payload, size))


def transmit(sock: socket.socket, message: Outgoing) -> None:
    if message.fd is None:
        sock.sendall(message.head)
        for part in message.parts:
            sock.sendall(part)
        return
    try:
        prefix = _PREFIX.pack(len(message.head), os.fstat(message.fd).st_size, 1)
        if socket.send_fds(sock, [prefix], [message.fd]) != len(prefix):
            raise OSError("the channel took part of a message's prefix")
        sock.sendall(message.head)
    finally:
        os.close(message.fd)


def send(sock: socket.socket, header: Mapping[str, Any], payload: Sequence[Part] = ()) -> None:
    """One message: the header as JSON, then the payload's parts back to back (in a memory file if large)."""
    transmit(sock, prepare(header, payload))


def _size(part: Part) -> int:
    return part.numel() if isinstance(part, torch.Tensor) else len(part)


def _sealed_file(payload: Sequence[Part], size: int) -> int:
    fd = os.memfd_create("arcengine-payload", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as mapped:
            offset = 0
            for part in payload:
                count = _size(part)
                if isinstance(part, torch.Tensor) and count:  # straight from the device into the file
                    window = torch.frombuffer(mapped, dtype=torch.uint8, count=count, offset=offset)
                    window.copy_(part)
                    del window  # the mapping closes only once no tensor views it
                elif count:
                    mapped[offset:offset + count] = part  # type: ignore[index]
                offset += count
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    return fd


def receive(sock: socket.socket, timeout_s: float | None = None,
            max_payload: int = 1 << 40) -> tuple[dict[str, Any], Payload]:
    """The next message. ``timeout_s`` bounds the wait for the whole message (None: no bound)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    prefix, fds = _read_prefix(sock, deadline)
    try:
        head_size, payload_size, in_file = _PREFIX.unpack(prefix)
        if head_size > MAX_HEADER or payload_size > max_payload:
            raise ChannelError(f"a message of {head_size} + {payload_size} bytes, over the limit")
        if len(fds) != (1 if in_file else 0):
            raise ChannelError(f"a message with {len(fds)} files attached, expected {1 if in_file else 0}")
        try:
            header = json.loads(_read(sock, head_size, deadline))
        except ValueError as exc:
            raise ChannelError(f"a header that is not JSON ({exc})") from exc
        if not isinstance(header, dict):
            raise ChannelError("a header that is not an object")
        payload = _read_file(fds[0], payload_size) if in_file else _read(sock, payload_size, deadline)
    finally:
        for fd in fds:
            os.close(fd)
    return header, payload


def _read_prefix(sock: socket.socket, deadline: float | None) -> tuple[bytes, list[int]]:
    """The prefix, and the descriptors that came with it (at most two are taken: one is all a message has)."""
    data, fds = b"", []
    try:
        while len(data) < _PREFIX.size:
            _wait_until(sock, deadline)
            try:
                chunk, ancillary, flags, _ = sock.recvmsg(_PREFIX.size - len(data), _ANCILLARY)
            except TimeoutError as exc:
                raise ChannelTimeout() from exc
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
            for level, kind, raw in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.extend(fd for (fd,) in _INT.iter_unpack(raw[:len(raw) - len(raw) % _INT.size]))
            if flags & socket.MSG_CTRUNC:
                raise ChannelError("a message with more files attached than one")
            if not chunk:
                raise ChannelClosed("the other end closed the channel")
            data += chunk
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return data, fds


def _read_file(fd: int, size: int) -> mmap.mmap:
    """A payload file's bytes, once it is known to be a sealed memory file of the announced size."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        actual = os.fstat(fd).st_size
    except OSError as exc:
        raise ChannelError(f"a payload file that is not a memory file ({exc})") from exc
    if seals & _SEALS != _SEALS:
        raise ChannelError("a payload file that can still change")
    if actual != size or size == 0:
        raise ChannelError(f"a payload file of {actual} bytes, announced as {size}")
    # Private: the judge's tensors view these pages without a copy, and a write to them stays the judge's own.
    return mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)


def _wait_until(sock: socket.socket, deadline: float | None) -> None:
    if deadline is None:
        sock.settimeout(None)
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ChannelTimeout()
    sock.settimeout(remaining)


def _read(sock: socket.socket, size: int, deadline: float | None) -> bytearray:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        _wait_until(sock, deadline)
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


def pack_tensors(tensors: Sequence[torch.Tensor]) -> tuple[list[dict[str, Any]], list[Part]]:
    """Plain tensors' metadata for the header and their bytes for the payload (flat uint8 views, where they are:
    ``send`` copies them once, to the socket or the memory file)."""
    meta: list[dict[str, Any]] = []
    parts: list[Part] = []
    for tensor in tensors:
        flat = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
        meta.append({"dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape),
                     "nbytes": int(flat.numel())})
        parts.append(flat)
    return meta, parts


def unpack_tensors(meta: Sequence[Mapping[str, Any]], payload: Payload) -> list[torch.Tensor]:
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
        chunk = memoryview(payload)[offset:offset + nbytes]  # a view of the payload, which is the reader's own
        flat = torch.frombuffer(chunk, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        tensors.append(flat.view(dtype).reshape(shape))
        offset += nbytes
    return tensors
