"""Issue 29's figures: the offline default (no API key) on problems with no hand-made seed. Per KernelBench file,
a 4-agent, 40-candidate offline campaign searches the generated seed (arcengine/domain/library_seed.py: eager,
torch.compile modes, Inductor's knobs); its best is then judged by ``arcengine eval`` beside the reference (eager)
and KernelBench's torch.compile baseline, in the same interleaved rounds, and the table says per problem eager,
compile, best and what the tuner changed.

    python bench/offline_any.py OUT.json --kernelbench DIR [--problems FILE ...] [--budget 40] [--agents 4]
                                         [--device cuda] [--time-limit S] [--slice S --keep FOLDER]
                                         [--redo FILE ...]

DIR is KernelBench's problem folder (its level1/, level2/ ...: ScalingIntelligence/KernelBench's KernelBench/).
OUT.json is rewritten after each problem and a rerun skips the problems it holds, so the list can be measured
over several calls (each problem records its own date and commit); with --slice S, this call stops after S seconds
and so can one campaign (cut, kept in FOLDER and resumed by the next call).

The problems were chosen before any was measured, none covered by a shipped problem, each for what it asks of
the search (PROBLEMS below).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from measure import CampaignFailed, CampaignInterrupted, environment, guard_eval, run_campaign

from arcengine.domain.problem import load_problem
from arcengine.domain.tunables import read_tunables
from arcengine.engine.history import load_history
from arcengine.guard.sol import geometric_mean

PROBLEMS = {
    "level1/19_ReLU.py": "one elementwise op over 6 GB, memory-bound: compile has nothing to fuse (the floor case)",
    "level1/88_MinGPTNewGelu.py": "eight elementwise ops eagerly: compile's fusion is the whole gain",
    "level1/40_LayerNorm.py": "a normalization over three dims: Inductor's reduction choices (split, persistent)",
    "level1/47_Sum_reduction_over_a_dimension.py": "a plain reduction over a middle dimension",
    "level1/89_cumsum.py": "a scan: Inductor's generated scan against eager's library kernel",
    "level1/95_CrossEntropyLoss.py": "log-softmax, gather and mean: a chain of reductions",
    "level2/12_Gemm_Multiply_LeakyReLU.py": "a GEMM with an elementwise epilogue: cuBLAS or max-autotune's templates",
    "level2/4_Conv2d_Mish_Mish.py": "a convolution (cuDNN, kept) with two Mish activations to fuse",
    "level2/99_Matmul_GELU_Softmax.py": "a GEMM, then GELU and a row softmax",
}


# A campaign is started only with this long left of the call's slice: its best's judgement beside eager and
# compile (a few workers' imports and torch.compile, then interleaved timing) must fit after it.
JUDGE_S = 90.0
SUMMARY = "offline-any-summary.json"  # a finished campaign's summary, kept in its run folder until it is judged


def measure(path: Path, settings: list[str], device: str, keep: Path | None, slice_s: float | None,
            ) -> dict[str, Any] | None:
    """One problem's campaign and its best judged beside eager and torch.compile; None where the campaign was cut
    after ``slice_s`` seconds (see campaign)."""
    with tempfile.TemporaryDirectory() as runs:
        summary = campaign(path, settings, Path(runs), keep, slice_s)
        if summary is None:
            return None
        run_dir = Path(summary["run_dir"])
        best_file = run_dir / "best.py"
        judged = guard_eval(summary["problem_dir"], str(best_file), device)  # beside eager and compile
        seed, best = (read_tunables(file.read_text(encoding="utf-8"))[1]
                      for file in (run_dir / "candidates" / _seed_file(summary), best_file))
    rows = []
    for row in judged["workloads"]:
        compile_us, best_us, eager_us = row["baseline_times_us"].get("compile"), row["time_us"], row["ref_time_us"]
        rows.append({"axes": row["axes"], "held_out": row["held_out"], "eager_us": eager_us, "compile_us": compile_us,
                     "best_us": best_us,
                     "best_over_compile": compile_us / best_us if compile_us and best_us else None,
                     "best_over_eager": eager_us / best_us if eager_us and best_us else None,
                     "compile_failure": row["baseline_failures"].get("compile")})
    return {"campaign": {key: summary.get(key) for key in ("candidates", "decisions", "best", "stop_reason")},
            "verdict": judged["verdict"], "workloads": rows,
            "changed": {name: {"from": seed.get(name), "to": value} for name, value in best.items()
                        if seed.get(name) != value},
            "best_over_compile": _mean(r["best_over_compile"] for r in rows if not r["held_out"]),
            "best_over_eager": _mean(r["best_over_eager"] for r in rows if not r["held_out"])}


def campaign(path: Path, settings: list[str], runs: Path, keep: Path | None, slice_s: float | None,
             ) -> dict[str, Any] | None:
    """The campaign's summary. With ``slice_s``, a campaign runs that long in this call at most: then it is
    interrupted (as Ctrl-C stops it, resumable), its run folder packed into KEEP/<problem>.tar.gz and None returned;
    the next call resumes it from there, on this machine or another (a device call has ten minutes, and a campaign
    whose candidates compile with autotuning takes longer). A finished campaign is packed there too, so a call cut
    while its best is judged resumes it finished (``done`` drops the archive once the figures are written)."""
    archive = keep / f"{path.stem}.tar.gz" if keep is not None else None
    args = [str(path), *settings, "--out", str(runs)]
    if archive is not None and archive.exists():
        with tarfile.open(archive) as packed:
            packed.extractall(runs, filter="data")
        (run_dir,) = (folder for folder in runs.iterdir() if folder.is_dir())
        if (finished := run_dir / SUMMARY).exists():  # cut while its best was judged: only that is left
            return {**json.loads(finished.read_text()), "run_dir": str(run_dir)}
        # The problem's folder made again, where the recorded campaign looks for it: it is named by its content, so
        # an arcengine that writes it otherwise has a folder of its own, and the campaign starts afresh.
        if load_problem(path).directory == Path(load_history(run_dir).started.problem_dir):
            args = ["--resume", str(run_dir)]
        else:
            print(f"{path.name}: the kept campaign's problem folder is not this arcengine's: starting afresh",
                  file=sys.stderr)
            shutil.rmtree(run_dir)
    try:
        summary = run_campaign(args, interrupt_after=slice_s)
    except CampaignInterrupted:
        assert archive is not None  # main asks for --keep with --slice
        _pack(runs, archive)
        return None
    if archive is not None:
        (Path(summary["run_dir"]) / SUMMARY).write_text(json.dumps(summary))
        _pack(runs, archive)
    return summary


def _pack(runs: Path, archive: Path) -> None:
    """The one run folder under ``runs``, packed into ``archive`` (replacing an earlier state)."""
    (run_dir,) = (folder for folder in runs.iterdir() if folder.is_dir())
    with tarfile.open(archive.with_suffix(".part"), "w:gz") as packed:
        packed.add(run_dir, arcname=run_dir.name)
    archive.with_suffix(".part").replace(archive)  # whole or not at all: a call may be killed while it packs


def measured_when() -> dict[str, Any]:
    """When and on which code a problem was measured: a list may take several calls, on a later commit."""
    return {key: value for key, value in environment(torch.device("cpu")).items() if key in ("date", "commit")}


def _seed_file(summary: dict[str, Any]) -> str:
    """The generated seed's candidate file (the last seed: the problem's own come first)."""
    seeds = summary.get("seeds") or [{"candidate": "c0000"}]
    return f"{seeds[-1]['candidate']}.py"


def _mean(values: Any) -> float | None:
    found = list(values)
    return geometric_mean(found) if found and all(found) else None


def headline(problems: dict[str, Any]) -> dict[str, Any]:
    """Means over the problems measured (a failed campaign has no best: it is counted apart, and as below
    compile)."""
    measured = [p for p in problems.values() if "failed" not in p]
    over_compile = [p["best_over_compile"] for p in measured]
    return {"problems": len(problems), "failed": len(problems) - len(measured),
            "geomean_best_over_compile": _mean(over_compile),
            "geomean_best_over_eager": _mean(p["best_over_eager"] for p in measured),
            "problems_at_least_compile": sum(1 for value in over_compile if value and value >= 1.0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kernelbench", type=Path, required=True, help="KernelBench's problem folder")
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS), help="files under it [the chosen list]")
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--time-limit", type=float, default=None, help="each campaign's limit in seconds")
    parser.add_argument("--slice", type=float, default=None,
                        help="seconds this call runs at most, a cut campaign kept; a rerun resumes it (needs --keep)")
    parser.add_argument("--keep", type=Path, default=None, help="where a cut campaign's run folder is kept")
    parser.add_argument("--redo", nargs="*", default=[], metavar="FILE",
                        help="measure these again (an earlier run's entry, a failure say, is replaced)")
    args = parser.parse_args()
    if args.slice is not None and args.keep is None:
        parser.error("--slice needs --keep: the folder a cut campaign is kept in, to resume from")
    settings = ["--agents", str(args.agents), "--budget", str(args.budget), "--device", args.device, "--plateau",
                "1000", *(["--time-limit", str(args.time_limit)] if args.time_limit else [])]
    document = json.loads(args.out.read_text()) if args.out.exists() else {
        **environment(torch.device(args.device)), "benchmark": "offline default on problems without a seed (issue 29)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "chosen": PROBLEMS, "problems": {}}
    for name in args.redo:
        document["problems"].pop(name, None)
    deadline = time.monotonic() + args.slice if args.slice is not None else None
    for name in args.problems:
        if name in document["problems"]:
            continue
        left = deadline - time.monotonic() - JUDGE_S if deadline is not None else None
        if left is not None and left <= 0:
            print(f"{name}: not started, {JUDGE_S:.0f} s or less left of the slice: run again to go on", flush=True)
            break
        try:
            measured = measure(args.kernelbench / name, settings, args.device, args.keep, left)
        except CampaignFailed as error:
            measured = {"failed": str(error)}
        if measured is None:
            print(f"{name}: cut at the slice's end, kept in {args.keep}: run again to go on", flush=True)
            break
        document["problems"][name] = {"why": PROBLEMS.get(name), **measured_when(), **measured}
        document["headline"] = headline(document["problems"])
        args.out.write_text(json.dumps(document, indent=2))
        if args.keep is not None:
            (args.keep / f"{Path(name).stem}.tar.gz").unlink(missing_ok=True)  # measured: not to be resumed
        print(name, json.dumps({k: document["problems"][name].get(k) for k in ("best_over_compile", "changed",
                                                                                   "failed")}), flush=True)
    print(json.dumps(document.get("headline"), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
