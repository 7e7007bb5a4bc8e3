"""How long ``arcengine replay`` takes to re-drive a 10,000-candidate campaign: the log is made first by a
64-agent campaign with the instant provider and stub guard (arcengine.engine.testing), then replayed by the CLI in a
fresh process, as a user would (start-up included). Where the replay differs from the recording is reported
(with 64 agents sharing a capped memory, which conclusions memory keeps depends on the order agents reach it).

    python bench/replay.py OUT.json [--candidates 10000] [--agents 64]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from engine import campaign, cpu_environment


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        made = anyio.run(campaign(args.agents, args.candidates, Path(folder) / "runs", None).run)
        run_dir = Path(made.run_dir)
        events = sum(1 for _ in (run_dir / "events.jsonl").open("rb"))
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "arcengine.cli", "replay", str(run_dir), "--out",
                               str(Path(folder) / "replays"), "--json"], capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1: a whole replay that differs somewhere, and says where
        raise SystemExit(f"the replay failed: {done.stderr.strip()[-500:]}")
    replayed = json.loads(done.stdout)
    result = {
        **cpu_environment("python bench/replay.py OUT " + " ".join(sys.argv[2:])),
        "headline": {f"replay_s_{args.candidates // 1000}k": seconds},
        "candidates": made.candidates, "agents": args.agents, "events": events,
        "replayed_candidates": replayed["candidates"], "divergence": replayed["divergence"],
    }
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["headline"], indent=1))


if __name__ == "__main__":
    main()
