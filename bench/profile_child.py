"""Where a guard child's time goes: one evaluation (the seed against itself as incumbent, as in a campaign) judged
from this process under cProfile, after the zygote's warm-up, as a forked child starts; prints the child's phases
and the functions that cost the most. The profile is the judge's: the roles' calls run in their worker processes,
and show here as the judge's waits on them; with --workers DIR each worker profiles its own requests too and
writes DIR/worker-ROLE.txt as it exits.

    python bench/profile_child.py PROBLEM [--device cuda] [--kernel K.py] [--top 40] [--out PROFILE.txt]
                                          [--workers DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
from pathlib import Path

from arcengine.domain.problem import load_problem
from arcengine.guard.child import worker
from arcengine.guard.child.judge import Evaluation, fork_workers, parse_spec
from arcengine.guard.child.zygote import warm_up
from arcengine.guard.decision import Thresholds
from arcengine.guard.service import GuardService
from arcengine.recording.bus import Bus


def profile_workers(folder: Path, top: int) -> None:
    """Each worker forked from now on profiles the requests it serves and writes its report as it exits."""
    serve = worker.Worker.serve
    folder.mkdir(parents=True, exist_ok=True)

    def profiled(self: worker.Worker) -> None:
        profiler = cProfile.Profile()
        profiler.runcall(serve, self)
        report = io.StringIO()
        for key in ("tottime", "cumulative"):
            pstats.Stats(profiler, stream=report).sort_stats(key).print_stats(top)
        (folder / f"worker-{self.role}.txt").write_text(report.getvalue())

    worker.Worker.serve = profiled  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--kernel", type=Path, help="the candidate [the problem's seed]")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument("--workers", type=Path, help="a folder for each worker's own profile")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    kernel = (args.kernel or problem.seed_path).resolve()
    guard = GuardService(problem, Bus(None), Thresholds(0.0, 0.0), seeds=5, timeout_s=600)
    guard.device = args.device
    if args.workers:
        profile_workers(args.workers, args.top)
    warm_up()  # as the zygote does before it forks a child
    workers = fork_workers()  # as the child does: before anything touches CUDA
    spec = parse_spec({**guard.child_spec(kernel, problem.seed_path.resolve(), 1).document(), "result": "/dev/null"})
    profiler = cProfile.Profile()
    try:
        result = profiler.runcall(Evaluation(spec, workers).run)
    finally:
        for remote in workers.values():  # told to exit, so a profiled worker writes its report
            remote.close()
    report = io.StringIO()
    report.write(json.dumps({"ok": result.get("ok"), "failure": result.get("failure"),
                             "seconds": result.get("seconds")}, indent=1) + "\n")
    for record in result.get("workloads", []):  # type: ignore[union-attr]
        report.write(f"{record.get('axes')} reps={record.get('reps')} time_us={record.get('time_us')} "
                     f"harness={record.get('harness')}\n")
    for key in ("tottime", "cumulative"):
        pstats.Stats(profiler, stream=report).sort_stats(key).print_stats(args.top)
    print(report.getvalue())
    if args.out:
        args.out.write_text(report.getvalue())


if __name__ == "__main__":
    main()
