"""Profile one guard child (judge and workers) on the rmsnorm seed, with an incumbent, as a campaign child runs."""
import cProfile, io, json, os, pstats, sys, time
from pathlib import Path
OUT = Path(os.environ.get("OUT", "/tmp/prof")); OUT.mkdir(parents=True, exist_ok=True)
from arcengine.guard import child, worker
orig_serve = worker.Worker.serve
def serve(self):
    import __main__
    getattr(__main__, "prof").disable()  # the judge's profiler, inherited through fork (3.12 refuses a second one)
    prof = cProfile.Profile(); prof.enable()
    try:
        orig_serve(self)
    finally:
        prof.disable(); prof.dump_stats(str(OUT / f"worker-{self.role}.prof"))
worker.Worker.serve = serve
from arcengine.guard import channel, roles
orig_kill = roles.RemoteRole.kill
def kill(self):  # let the worker exit through serve (and dump its profile) before the kill
    if not self.closed:
        try:
            channel.send(self.sock, {"op": "exit"}); self.sock.settimeout(10); self.sock.recv(1)
        except OSError:
            pass
    orig_kill(self)
roles.RemoteRole.kill = kill
from arcengine.bus import Bus
from arcengine.guard.decision import Thresholds
from arcengine.guard.service import Guard
from arcengine.problem import load_problem
problem = load_problem(sys.argv[1] if len(sys.argv) > 1 else "rmsnorm")
guard = Guard(problem, Bus(None), Thresholds(0.0, 0.0), seeds=5, timeout_s=600)
guard.device = os.environ.get("DEVICE", "cuda")
seed = problem.seed_path
spec = guard.child_spec(seed, seed, 0)
work = Path("/tmp/profwork"); work.mkdir(exist_ok=True)
spec["result"] = str(work / "result.json")
(work / "spec.json").write_text(json.dumps(spec))
prof = cProfile.Profile()
started = time.perf_counter()
prof.enable()
child.run_spec_file(str(work / "spec.json"))
prof.disable()
wall = time.perf_counter() - started
prof.dump_stats(str(OUT / "judge.prof"))
result = json.loads((work / "result.json").read_text())
print("wall", round(wall, 2), "correct", result["correct"], result["failure"], "phases", {k: round(v, 2) for k, v in result["seconds"].items()})
for w in result["workloads"]:
    print(w["index"], "reps", w["reps"], "rel_se", round(w["rel_se"] or 0, 4), "ref_rel_se", round(w.get("ref_rel_se") or 0, 4), "time", round(w["time_us"], 2), "timing_s", round(w["harness"].get("timing_s", 0), 2))
for name in ["judge", "worker-candidate", "worker-reference", "worker-incumbent"]:
    path = OUT / f"{name}.prof"
    if path.exists():
        s = io.StringIO(); pstats.Stats(str(path), stream=s).sort_stats("cumulative").print_stats(28)
        text = s.getvalue(); (OUT / f"{name}.txt").write_text(text)
        s = io.StringIO(); pstats.Stats(str(path), stream=s).sort_stats("tottime").print_stats(25)
        (OUT / f"{name}-tottime.txt").write_text(s.getvalue())
