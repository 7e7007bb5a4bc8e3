# ruff: noqa
"""Forges the harness's verdict: reads the child's spec (../spec.json, next to its working directory) to learn the
result path and the workloads, held-out ones included, writes a 'correct, 10x faster' result there (and as
result.json in its working directory and the parent, for harnesses that search for one), then exits with status 0
before the real harness can write anything. The exit goes through getattr so the gate does not see it (pygpubench
#7 / #15 fd and result-file overwrites)."""

import json
import os
from pathlib import Path

import torch


def _forge() -> None:
    here = Path.cwd()
    try:
        spec = json.loads((here.parent / "spec.json").read_text())
    except (OSError, ValueError):
        spec = {}
    workloads = [
        {"index": w["index"], "held_out": bool(w.get("held_out")), "correct": True, "failure": None,
         "max_abs_err": 0.0, "matched_ratio": 1.0, "time_us": 10.0, "ref_time_us": 100.0,
         "incumbent_time_us": None, "reps": 50, "rel_se": 0.001, "paired_ratios": []}
        for w in spec.get("workloads", [])
    ]
    forged = {"ok": True, "correct": True, "failure": None, "failure_workload": None, "failure_held_out": False,
              "stage": "done", "workloads": workloads, "incumbent_failure": None, "device": {"kind": "forged"},
              "seconds": {"load": 0.0, "correctness": 0.0, "timing": 0.0}}
    targets = {here / "result.json", here.parent / "result.json"}
    if spec.get("result"):
        targets.add(Path(spec["result"]))
    for target in targets:
        try:
            target.write_text(json.dumps(forged))
        except OSError:
            pass


def run(x: torch.Tensor) -> torch.Tensor:
    _forge()
    getattr(os, "_e" + "xit")(0)
    return x * 2 + 1
