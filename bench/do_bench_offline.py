"""An independent check of bench/offline_any.py's figures, outside the guard: per KernelBench problem it measured,
triton.testing.do_bench (its median; it clears the L2 before every call) in a plain process of its own for each of
the Model run eagerly, the Model under torch.compile (default mode, compiled afresh) and the campaign's best (the
generated seed with the settings the tuner changed). Each runs in its own process: Inductor's settings are global.

    python bench/do_bench_offline.py OUT.json --offline OFFLINE.json --kernelbench DIR [--problems FILE ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from measure import environment

from arcengine.domain.library_seed import library_seed
from arcengine.domain.problem import load_problem
from arcengine.domain.tunables import apply_settings

# One variant, timed in a fresh interpreter: argv is the KernelBench file, the variant and the tuned seed's file.
_TIMER = r"""
import importlib.util, json, sys
import torch, triton.testing

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

problem, variant, tuned = sys.argv[1:4]
torch.manual_seed(0)
source = load(tuned if variant == "best" else problem, "timed")
init = [x.cuda() if isinstance(x, torch.Tensor) else x for x in source.get_init_inputs()]
model = (source.ModelNew if variant == "best" else source.Model)(*init).cuda()
if variant == "compile":
    model = torch.compile(model)
inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in source.get_inputs()]
with torch.no_grad():
    model(*inputs)
    torch.cuda.synchronize()
    print(json.dumps(triton.testing.do_bench(lambda: model(*inputs), return_mode="median") * 1e3))
"""
VARIANTS = ("eager", "compile", "best")


def time_variant(problem: Path, variant: str, tuned: Path) -> float | str:
    done = subprocess.run([sys.executable, "-c", _TIMER, str(problem), variant, str(tuned)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return float(done.stdout.strip().splitlines()[-1])


def best_settings(measured: dict[str, Any]) -> dict[str, Any]:
    return {name: change["to"] for name, change in (measured.get("changed") or {}).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--offline", type=Path, required=True, help="bench/offline_any.py's figures")
    parser.add_argument("--kernelbench", type=Path, required=True)
    parser.add_argument("--problems", nargs="*", default=None)
    args = parser.parse_args()
    figures = json.loads(args.offline.read_text())["problems"]
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, measured in figures.items():
            if "failed" in measured or (args.problems is not None and name not in args.problems):
                continue
            path = args.kernelbench / name
            tuned = Path(folder) / f"{path.stem}_best.py"
            tuned.write_text(apply_settings(library_seed(load_problem(path), "cuda"), best_settings(measured)))
            times = {variant: time_variant(path, variant, tuned) for variant in VARIANTS}
            ok = {k: v for k, v in times.items() if isinstance(v, float)}
            rows[name] = {"settings": best_settings(measured), "do_bench_us": times,
                          "best_over_compile": ok["compile"] / ok["best"] if {"compile", "best"} <= set(ok) else None,
                          "best_over_eager": ok["eager"] / ok["best"] if {"eager", "best"} <= set(ok) else None,
                          "guard_best_over_compile": measured.get("best_over_compile")}
            print(name, json.dumps(rows[name]), flush=True)
    args.out.write_text(json.dumps({**environment(torch.device("cuda")),
                                    "command": "python bench/do_bench_offline.py " + " ".join(sys.argv[1:]),
                                    "problems": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
