"""What it costs the judge to receive a worker's outputs: a message of N MB over the guard's channel, through the
socket (every payload inline) and through a sealed memory file (the channel's way past 1 MB).

    python bench/channel.py OUT.json [--sizes 1 16 64] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
from pathlib import Path
from time import perf_counter

import torch
from measure import environment

from arcengine.guard.child import channel


def round_trip_ms(megabytes: int, inline: bool, repeats: int) -> float:
    """Median time from the first byte sent to the tensor rebuilt on the other end."""
    tensor = torch.randn(megabytes * 2**18)  # float32: 4 bytes each
    limit = channel.INLINE_PAYLOAD
    channel.INLINE_PAYLOAD = 1 << 62 if inline else limit
    times: list[float] = []
    try:
        for _ in range(repeats):
            a, b = socket.socketpair()
            started = perf_counter()
            meta, parts = channel.pack_tensors([tensor])
            sender = threading.Thread(target=channel.send, args=(a, {"meta": meta}, parts))
            sender.start()
            header, payload = channel.receive(b, 60.0)
            channel.unpack_tensors(header["meta"], payload)
            times.append((perf_counter() - started) * 1e3)
            sender.join()
            a.close()
            b.close()
    finally:
        channel.INLINE_PAYLOAD = limit
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 16, 64])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rows = [{"megabytes": size, "socket_ms": round_trip_ms(size, True, args.repeats),
             "memory_file_ms": round_trip_ms(size, False, args.repeats)} for size in args.sizes]
    sizes = " ".join(map(str, args.sizes))
    document = {**environment(torch.device("cpu")), "benchmark": "guard channel, judge receiving a worker's outputs",
                "command": f"python bench/channel.py OUT --sizes {sizes} --repeats {args.repeats}", "rows": rows}
    args.out.write_text(json.dumps(document, indent=2))
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
