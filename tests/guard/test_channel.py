"""The judge-worker channel: large payloads in sealed memory files, and every malformed attachment refused
without leaking a descriptor (a worker is untrusted: it can send any bytes and any descriptors)."""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from arcengine.guard.child import channel


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_large_payload_travels_in_a_sealed_file_and_arrives_whole(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    tensor = torch.randn(1024, 1024)  # 4 MB: over the inline limit
    meta, parts = channel.pack_tensors([tensor])
    before = _open_fds()
    channel.send(a, {"meta": meta}, parts)
    header, payload = channel.receive(b, 5.0)
    back = channel.unpack_tensors(header["meta"], payload)[0]
    assert torch.equal(back, tensor)
    back.add_(1)  # the judge's view of the file is private: writing to it is allowed, and changes nothing else
    del back, payload
    assert _open_fds() == before  # neither end keeps the file once the payload is dropped


def _send_raw(sock: socket.socket, payload_size: int, in_file: int, fds: list[int]) -> None:
    header = b"{}"
    prefix = channel._PREFIX.pack(len(header), payload_size, in_file)
    socket.send_fds(sock, [prefix], fds) if fds else sock.sendall(prefix)
    sock.sendall(header)


def _memfd(size: int, seals: int) -> int:
    fd = os.memfd_create("test", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


ALL_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


@pytest.mark.parametrize(("attach", "in_file", "size", "message"), [
    ("unsealed", 1, 4096, "can still change"),  # the sender could shrink it under the reader's mapping
    ("sealed", 1, 8192, "announced as 8192"),
    ("regular", 1, 4096, "not a memory file"),
    ("pipe", 1, 4096, "not a memory file"),
    ("none", 1, 4096, "0 files attached, expected 1"),
    ("sealed", 0, 0, "1 files attached, expected 0"),
    ("two", 1, 4096, "more files attached than one"),
])
def test_a_payload_file_that_is_not_a_sealed_memory_file_of_its_size_is_refused(
        pair: tuple[socket.socket, socket.socket], tmp_path: Path, attach: str, in_file: int, size: int,
        message: str) -> None:
    a, b = pair
    mine: list[int] = []
    if attach in ("sealed", "two"):
        mine = [_memfd(4096, ALL_SEALS)] * (3 if attach == "two" else 1)
    elif attach == "unsealed":
        mine = [_memfd(4096, 0)]
    elif attach == "regular":
        mine = [os.open(tmp_path / "payload", os.O_RDWR | os.O_CREAT)]
        os.write(mine[0], b"x" * 4096)
    elif attach == "pipe":
        mine = list(os.pipe())[:1]
    before = _open_fds()
    _send_raw(a, size, in_file, mine)
    with pytest.raises(channel.ChannelError, match=message):
        channel.receive(b, 5.0)
    assert _open_fds() == before  # what came with the message was closed
