"""Every shipped problem on this device, per workload: the PyTorch reference, the seed kernel, torch.compile of
the reference (default and max-autotune) and the roofline time (the problem's FLOPs and bytes over the measured
ceilings), then the problem's baseline as the guard measures it (`arcengine eval` of the seed: which route won,
its time, the seed over it). Results are saved after each workload, and a rerun on the same OUT.json measures
only what is missing, so a run cut short loses nothing.

    python bench/problems.py OUT.json [--problems NAME ...] [--no-max-autotune] [--no-baseline]
                                      [--redo-baseline NAME ...] [--baseline-only]
                                      [--compile-cap SECONDS] [--gpus N]

With --gpus N, N problems are measured at once, each in a process of its own pinned to a GPU of its own and
writing a file of its own (OUT.NAME.partial.json), merged into OUT.json as it ends; a run cut short leaves its
partial files, and the next run merges them first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from measure import environment, guard_eval, input_pool, time_workload

from arcengine.domain.problem import Problem, load_problem, shipped_problem_names
from arcengine.guard.child import process
from arcengine.guard.child.ceilings import measure_ceilings
from arcengine.guard.child.judge import load_module


class CompileTimeout(BaseException):  # not Exception: torch.compile would swallow it and run eagerly
    pass


@contextlib.contextmanager
def time_cap(seconds: float) -> Iterator[None]:
    """Raise CompileTimeout in this (main) thread after `seconds`: max-autotune of a shape can take many minutes."""

    def expire() -> None:
        raise CompileTimeout

    with process.alarm(seconds, expire):
        yield


POOL_SIZE = 2  # input sets the timing cycles through (the largest problems' weights are GBs per set)
COMPILE_MODES = {"torch_compile": None, "torch_compile_max_autotune": "max-autotune"}


def compiled_for_workload(reference: Any, pool: list[Any], device: torch.device, roles: list[str],
                          cap_s: float, earlier: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """torch.compile of the reference specialised to one workload's shapes (dynamic=False), its best case: a
    fresh compilation per workload, so no shape falls back to a dynamic-shape kernel or to eager. It is run once
    on every input set of the timing's pool within the cap: a reference whose shapes depend on the data (the
    experts' token counts of moe_forward) is compiled once per set, and the timing must not pay for that.
    ``earlier``: the compile notes an earlier run left for this workload. Returns the compiled functions and,
    per role (a key of COMPILE_MODES), its compile seconds or why it was left out."""
    torch._dynamo.reset()
    fns, notes = {}, {}
    for role in roles:
        if role != "torch_compile" and isinstance({**earlier, **notes}.get("torch_compile"), str):
            # max-autotune does all the default mode's work and more: it cannot finish where that did not
            notes[role] = f"not measured: the default mode's compilation took over {cap_s:g} s"
            continue
        fn = torch.compile(reference.run, dynamic=False, mode=COMPILE_MODES[role])
        started = time.monotonic()
        try:
            with time_cap(cap_s):
                for inputs in pool:
                    fn(*inputs)
                if device.type == "cuda":
                    torch.cuda.synchronize()
        except CompileTimeout:
            notes[role] = f"not measured: compilation took over {cap_s:g} s"
            torch._dynamo.reset()
            continue
        fns[role], notes[role] = fn, round(time.monotonic() - started, 1)
    return fns, notes


def settled(row: dict[str, Any], role: str) -> bool:
    """Timed, or left out for a reason (its compile ran past the cap)."""
    return role in row["time_us"] or isinstance(row.get("compile_s", {}).get(role), str)


def measure_problem(problem: Problem, device: torch.device, ceilings: dict[str, float], args: argparse.Namespace,
                    earlier: dict[str, Any] | None, save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Measures every workload not already in `earlier`, calling `save` with what it has after each one."""
    reference = load_module(str(problem.reference_path), f"bench_{problem.name}_reference")
    seed = load_module(str(problem.seed_path), f"bench_{problem.name}_seed")
    wanted = ["torch_compile"] if args.no_max_autotune else list(COMPILE_MODES)
    rows = list((earlier or {}).get("workloads", []))
    errors: dict[str, str] = {}
    # a resumed problem's seconds are those of every run that measured it, not only this one's
    started = time.monotonic() - (earlier or {}).get("seconds", 0.0)
    result = {"category": problem.category, "kernel_type": problem.kernel_type, "workloads": rows,
              "errors": errors, "complete": False}
    for workload in problem.workloads_for(device.type):
        row = next((row for row in rows if row["axes"] == workload.axes), None)
        missing = [role for role in wanted if row is None or not settled(row, role)]
        if not missing:
            continue
        try:
            pool = input_pool(reference, workload, device, POOL_SIZE)
            compiled, compile_s = compiled_for_workload(reference, pool, device, missing, args.compile_cap,
                                                        (row or {}).get("compile_s", {}))
            fns = {"reference": reference.run, "seed": seed.run, **compiled}
            # an earlier row whose missing roles all ran past the cap needs no timing: only its notes change
            times = time_workload(workload, fns, pool, device, audit_role="seed") \
                if row is None or compiled else {}
            del pool
        except Exception as error:  # one role failing (a compile error, out of memory) must not lose the rest
            errors[workload.label()] = f"{type(error).__name__}: {str(error)[:300]}"
            continue
        if row is None:
            floor_s = max(problem.flops(workload) / ceilings["flops_per_s"],
                          problem.bytes(workload) / ceilings["bandwidth_bytes_per_s"])
            rows.append({"axes": workload.axes, "held_out": workload.held_out, "time_us": times,
                         "compile_s": compile_s, "roofline_us": floor_s * 1e6,
                         "seed_over_reference": times["reference"] / times["seed"],
                         "seed_sol_fraction": floor_s * 1e6 / times["seed"]})
        else:  # a row an earlier run left short: add the roles it lacks, with this run's reference time beside
            row["time_us"].update({role: times[role] for role in compiled})
            row["compile_s"] = {**row.get("compile_s", {}), **compile_s}
            if compiled:
                row["added_later"] = {"roles": list(compiled), "reference_us": times["reference"]}
        if device.type == "cuda":
            torch.cuda.empty_cache()
        save({**result, "seconds": round(time.monotonic() - started, 1)})
    result.update(complete=not errors, seconds=round(time.monotonic() - started, 1))
    return result


def add_baseline(problem: Problem, device: torch.device, measured: dict[str, Any], save: Callable[[], None],
                 redo: bool = False, chunk: int | None = None) -> None:
    """Each row's baseline as the guard measures it (``arcengine eval`` of the seed: every declared route checked,
    the fastest correct one per workload timed in the same rounds as the reference), unless the rows have it
    (``redo``: measured again, for a guard whose choice of the baseline changed). ``chunk``: that many workloads
    per eval, saved after each, for problems whose torch.compile per workload outlasts one sitting."""
    rows = measured["workloads"]
    if redo:
        for row in rows:
            row.pop("baseline", None)
    missing = [index for index, row in enumerate(rows) if "baseline" not in row]
    size = chunk or len(missing) or 1
    for start in range(0, len(missing), size):
        with tempfile.TemporaryDirectory() as scratch:
            folder = _with_workloads(problem, missing[start:start + size], Path(scratch))
            verdict = guard_eval(str(folder), str(folder / problem.seed_path.name), device.type)
        judged = {json.dumps(w["axes"], sort_keys=True): w for w in verdict["workloads"]}
        for row in rows:
            found = judged.get(json.dumps(row["axes"], sort_keys=True))
            if found is not None:
                row["baseline"] = {"route": found["baseline_route"], "time_us": found["baseline_time_us"],
                                   "reference_us": found["ref_time_us"], "seed_us": found["time_us"],
                                   "routes_us": found["baseline_times_us"], "failures": found["baseline_failures"],
                                   "seed_over_baseline": found["speedup_over_baseline"]}
        measured["baseline_verdict"] = verdict["verdict"]
        save()


def _with_workloads(problem: Problem, indexes: list[int], scratch: Path) -> Path:
    """A copy of the problem's folder whose problem.toml keeps only these GPU workloads (by their order there)."""
    folder = scratch / problem.directory.name
    shutil.copytree(problem.directory, folder)
    toml = folder / "problem.toml"
    blocks = re.split(r"(?m)^(?=\[)", toml.read_text(encoding="utf-8"))  # each table, [[...]] entries included
    workloads = iter(range(len(blocks)))
    kept = [block for block in blocks
            if not block.startswith("[[workloads]]") or next(workloads) in indexes]
    toml.write_text("".join(kept), encoding="utf-8")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--no-max-autotune", action="store_true")
    parser.add_argument("--no-baseline", action="store_true", help="leave out the guard's baseline per workload")
    parser.add_argument("--redo-baseline", nargs="*", default=[], metavar="PROBLEM",
                        help="measure these problems' baselines again, replacing the earlier ones")
    parser.add_argument("--baseline-chunk", type=int, default=None, metavar="N",
                        help="workloads per baseline eval, saved after each (default: all in one)")
    parser.add_argument("--baseline-only", action="store_true",
                        help="measure only each workload's baseline (the guard's eval of the seed), no other role")
    parser.add_argument("--compile-cap", type=float, default=180.0, help="seconds per torch.compile mode and shape")
    parser.add_argument("--gpus", type=int, default=1, help="problems measured at once, one GPU each")
    args = parser.parse_args()
    if args.gpus > 1:
        side_by_side(args)
        return
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ceilings = measure_ceilings(device)
    result: dict[str, Any] = {**environment(device), "ceilings": ceilings,
                              "command": "python bench/problems.py OUT " + " ".join(sys.argv[2:]),
                              "problems": {}}
    if args.out.is_file():  # resume: keep what an earlier (cut-short) run measured on this kind of device
        earlier = json.loads(args.out.read_text())
        if earlier["device"]["name"] != result["device"]["name"]:
            raise SystemExit(f"{args.out} holds figures of a {earlier['device']['name']}, not this device")
        result["problems"] = earlier.get("problems", {})
        # rows come from several runs: keep each run's date and command, not only the newest one's
        result["earlier_runs"] = [*earlier.get("earlier_runs", []),
                                  {"date": earlier["date"], "command": earlier["command"],
                                   "gpu_uuid": earlier["device"].get("uuid"), "ceilings": earlier["ceilings"]}]
    for name in args.problems or shipped_problem_names():
        problem = load_problem(name)
        if device.type == "cpu" and problem.cpu_unsupported:
            continue

        def save(measured: dict[str, Any], name: str = problem.name) -> None:
            result["problems"][name] = measured
            args.out.write_text(json.dumps(result, indent=1) + "\n")

        earlier = result["problems"].get(problem.name)
        if args.baseline_only:  # rows that hold each workload's baseline alone (another card's full table exists)
            save(earlier or {"category": problem.category, "kernel_type": problem.kernel_type, "baseline_only": True,
                             "workloads": [{"axes": workload.axes, "held_out": workload.held_out}
                                           for workload in problem.workloads_for(device.type)]})
        else:
            save(measure_problem(problem, device, ceilings, args, earlier, save))
        if not args.no_baseline:
            add_baseline(problem, device, result["problems"][problem.name],
                         lambda name=problem.name: save(result["problems"][name]), name in args.redo_baseline,
                         args.baseline_chunk)
        print(problem.name, result["problems"][problem.name].get("seconds"), "s", flush=True)


def _partial(out: Path, name: str) -> Path:
    return out.with_name(f"{out.stem}.{name}.partial.json")


def _merge(out: Path, partial: Path, name: str) -> None:
    """Move problem ``name`` from a partial file into ``out`` (created from the partial if missing)."""
    if not partial.is_file():
        return
    measured = json.loads(partial.read_text())
    merged = json.loads(out.read_text()) if out.is_file() else {**measured, "problems": {}}
    if name in measured.get("problems", {}):
        merged["problems"][name] = {**measured["problems"][name], "ceilings": measured["ceilings"]}
    out.write_text(json.dumps(merged, indent=1) + "\n")
    partial.unlink()


def side_by_side(args: argparse.Namespace) -> None:
    names = args.problems or shipped_problem_names()
    for name in names:  # what a cut-short run left
        _merge(args.out, _partial(args.out, name), name)
    gpus: queue.Queue[int] = queue.Queue()
    for gpu in range(args.gpus):
        gpus.put(gpu)
    merging = threading.Lock()
    flags = [*(["--no-max-autotune"] if args.no_max_autotune else []), "--compile-cap", str(args.compile_cap)]

    def measure_on_a_gpu(name: str) -> None:
        gpu, partial = gpus.get(), _partial(args.out, name)
        try:
            with merging:
                if args.out.is_file():  # the problem's earlier rows, so only what is missing is measured
                    partial.write_text(args.out.read_text())
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}
            subprocess.run([sys.executable, __file__, str(partial), "--problems", name, *flags], env=env,
                           check=False)
            with merging:
                _merge(args.out, partial, name)
        finally:
            gpus.put(gpu)

    with ThreadPoolExecutor(args.gpus) as pool:
        list(pool.map(measure_on_a_gpu, names))


if __name__ == "__main__":
    main()
