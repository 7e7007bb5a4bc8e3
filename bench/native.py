"""Issue 27's figures for native code: the native catalogue entries, KernelBench's load_inline route through
``arcengine eval``, what a load_inline build costs cold and from the cache, and each native seed judged by the guard.

    python bench/native.py OUT.json [--device cuda] [--jobs N] [--skip catalogue|kernelbench|cache|seeds ...]
                                    [--catalogue-from WHOLE_CATALOGUE.json]

On a GPU every part runs; on the CPU the CUDA-only ones are left out (the C++ KernelBench candidate, the C++ cache
build and the CPU catalogue entries stand in). Each part is written as soon as it ends, and a rerun on the same
OUT.json runs only the parts it lacks (a kept part notes the date and commit it was measured on), so a run cut short
loses nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import torch
from adversarial import load_catalogue
from measure import environment, guard_eval

from arcengine.guard.child.native_build import CACHE_ENV

ROOT = Path(__file__).resolve().parents[1]
KERNELBENCH = ROOT / "tests" / "fixtures" / "kernelbench"
KERNELBENCH_EXAMPLES = {"cuda": ["model_new_add_cuda.py"], "cpu": ["model_new_add_cpp.py"]}
NATIVE_SEEDS = [("rmsnorm", "seed_nvrtc.py"), ("gemm_residual", "seed_cublaslt.py")]  # CUDA C++: GPU only
# the same problems' Triton seeds, judged beside them: what a native candidate costs the guard against a Triton one
TRITON_SEEDS = [(problem, "seed.py") for problem, _ in NATIVE_SEEDS]
PARTS = ("catalogue", "kernelbench", "cache", "seeds")
# What each eval keeps: its verdict and what it cost the guard (in total and per phase: load, compile, timing, ...).
EVAL_FIELDS = ("verdict", "reason", "speedup", "guard_seconds", "guard_phases")


def native_entries(device: str) -> list[str]:
    """The catalogue entries that build native code, runnable on this device."""
    return [entry.name for entry in load_catalogue()
            if "load_inline" in entry.path.read_text(encoding="utf-8") and (device == "cuda" or entry.cpu)
            and not entry.skip]


def catalogue(device: str, jobs: int, scratch: Path, whole_run: Path | None) -> dict[str, Any]:
    """The native entries judged now, or read from a run of the whole catalogue on this code (``whole_run``: the
    same entries, judged once)."""
    names = native_entries(device)
    if whole_run is None:
        whole_run = scratch / "catalogue.json"
        subprocess.run([sys.executable, str(ROOT / "bench" / "adversarial.py"), str(whole_run), "--device", device,
                        "--jobs", str(jobs), "--only", *names], check=True, cwd=ROOT)
    document = json.loads(whole_run.read_text())
    rows = [row for row in document["entries"] if row["name"] in names]
    judged = [row for row in rows if not row.get("skipped")]
    headline = {"caught": sum(bool(row["caught"]) for row in judged), "total": len(judged),
                "not_caught": [row["name"] for row in judged if not row["caught"]]}
    return {"entries": names, "from": document.get("command"), "commit": document.get("commit"),
            "headline": headline, "rows": rows}


def kernelbench(device: str) -> dict[str, Any]:
    judged = {}
    for example in KERNELBENCH_EXAMPLES[device]:
        verdict = guard_eval(str(KERNELBENCH / "1_Add.py"), str(KERNELBENCH / example), device)
        judged[example] = {key: verdict.get(key) for key in (*EVAL_FIELDS, "warnings")}
    return {"examples": judged, "passed": sum(v["verdict"] == "pass" for v in judged.values())}


def build_seconds(device: str) -> dict[str, Any]:
    """One load_inline extension (KernelBench's add) built through the cache in a fresh process, twice: cold, then
    from the cache a later child of the campaign would find."""
    example = KERNELBENCH / KERNELBENCH_EXAMPLES[device][0]
    script = textwrap.dedent(f"""
        import importlib.util, time
        from arcengine.guard.child import native_build
        native_build.install(600.0)
        started = time.perf_counter()
        spec = importlib.util.spec_from_file_location("example", {str(example)!r})
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        print(time.perf_counter() - started)
    """)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, CACHE_ENV: cache}
        runs = [float(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                     check=True).stdout.split()[-1]) for _ in range(2)]
    return {"example": example.name, "cold_s": round(runs[0], 3), "cached_s": round(runs[1], 3)}


def seeds(device: str) -> dict[str, Any]:
    judged = {}
    for problem, seed in [*NATIVE_SEEDS, *TRITON_SEEDS] if device == "cuda" else []:
        verdict = guard_eval(problem, str(ROOT / "problems" / problem / seed), device)
        judged[f"{problem}/{seed}"] = {key: verdict.get(key) for key in (*EVAL_FIELDS, "speedup_over_baseline")}
    return judged


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--skip", nargs="*", default=[], choices=PARTS)
    parser.add_argument("--catalogue-from", type=Path, help="a whole catalogue's results (bench/adversarial.py) "
                        "on this code: its native entries' rows, instead of judging them again")
    args = parser.parse_args()
    document: dict[str, Any] = {**environment(torch.device(args.device)), "benchmark": "native code (issue 27)",
                                "command": "python bench/native.py " + " ".join(sys.argv[1:])}
    if args.out.is_file():  # resume: keep the parts an earlier (cut-short) run on this kind of device measured
        earlier = json.loads(args.out.read_text())
        if earlier["device"]["name"] != document["device"]["name"]:
            raise SystemExit(f"{args.out} holds figures of a {earlier['device']['name']}, not this device")
        kept = {part: {**earlier[part], "measured": {key: earlier[key] for key in ("date", "commit")}}
                for part in PARTS if part in earlier}
        document.update(kept)

    def save() -> None:
        found = document.get("catalogue", {}).get("headline", {})
        document["headline"] = {
            "catalogue_caught": found.get("caught"), "catalogue_total": found.get("total"),
            "kernelbench_examples_passed": document.get("kernelbench", {}).get("passed"),
            "compile_cache_hit_s": document.get("cache", {}).get("cached_s"),
        }
        args.out.write_text(json.dumps(document, indent=1) + "\n")

    with tempfile.TemporaryDirectory() as scratch:
        steps = {"catalogue": lambda: catalogue(args.device, args.jobs, Path(scratch), args.catalogue_from),
                 "kernelbench": lambda: kernelbench(args.device), "cache": lambda: build_seconds(args.device),
                 "seeds": lambda: seeds(args.device)}
        for part in PARTS:
            if part in args.skip or part in document:
                continue
            started = time.monotonic()
            document[part] = {**steps[part](), "wall_s": round(time.monotonic() - started, 1)}
            save()
            print(part, json.dumps(document["headline"]), flush=True)


if __name__ == "__main__":
    main()
