"""Two versions of the code measured in turns by one benchmark, so that a machine whose speed drifts from minute
to minute moves both alike: the before-and-after figure of a change that must not make things slower.

    python bench/alternate.py OUT.json --before DIR [--before-python PY] --after DIR [--after-python PY]
                              [--rounds 3] -- bench/engine.py --candidates 10000 --agents 8 --repeats 3

Each round runs the benchmark once in each tree (the version that goes first alternates), with that tree's own
script and code (its folder as the working directory and on PYTHONPATH; PY: an interpreter whose environment maps
the tree's packages, as an editable install does). The benchmark writes its own results file; this one keeps
every run's, and per version the median of each headline figure, with after over before.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def head(tree: Path) -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def run_once(tree: Path, python: str, benchmark: list[str]) -> dict[str, Any]:
    """The benchmark's results file from one run in ``tree``."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "result.json"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run([python, benchmark[0], str(out), *benchmark[1:]], cwd=tree, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = [key for key, value in runs[0]["headline"].items() if isinstance(value, int | float)]
    return {key: statistics.median(run["headline"][key] for run in runs) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--before-python", default=sys.executable)
    parser.add_argument("--after-python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("benchmark", nargs="+", help="the benchmark script (relative to each tree) and its options")
    args = parser.parse_args()
    versions = {"before": (args.before.resolve(), args.before_python),
                "after": (args.after.resolve(), args.after_python)}
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
        for name in order:
            tree, python = versions[name]
            runs[name].append(run_once(tree, python, args.benchmark))
            print(name, json.dumps(runs[name][-1]["headline"]), flush=True)
    summary = {name: medians(found) for name, found in runs.items()}
    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": "python bench/alternate.py OUT " + " ".join(sys.argv[2:]),
        "machine": runs["after"][0].get("machine"),
        "versions": runs["after"][0].get("versions"),
        "commit": {name: head(tree) for name, (tree, _) in versions.items()},
        "headline": {
            "before": summary["before"],
            "after": summary["after"],
            "after_over_before": {key: summary["after"][key] / summary["before"][key]
                                  for key in summary["after"] if summary["before"].get(key)},
        },
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["headline"], indent=1))


if __name__ == "__main__":
    main()
