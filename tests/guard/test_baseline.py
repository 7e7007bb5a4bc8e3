"""The baseline: its routes checked and timed by a real child beside the reference, the gain over it decided, and
a campaign's later children reading theirs through the reference."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from arcengine.domain.problem import ProblemError, load_problem
from arcengine.guard.baseline_times import BaselineCache, BaselineTime, chain_holds
from arcengine.guard.contract import ChildResult, WorkloadOutcome
from arcengine.guard.decision import Thresholds, judge
from tests.conftest import SCALE, scale_source
from tests.guard.test_child import REFERENCE, WORKLOADS, _evaluate
from tests.test_cli import arcengine

LIBRARY = """
import torch

def doubled(x):
    return x + x

def tripled(x):  # not what the reference computes: no baseline
    return x * 3

def raises(x):
    raise RuntimeError("no such library on this machine")
"""


# The reference in a slow formulation: two hundred copies after the product, so every correct route, torch.compile
# of it included, is faster and wins (a route the reference outruns is not the baseline: the reference is).
SLOW_TAIL = "    for _ in range(200):\n        y = y.clone()\n    return y\n"
SLOW_REFERENCE = REFERENCE.replace("    return x * 2\n", "    y = x * 2\n" + SLOW_TAIL)


def _with_baseline(tmp_path: Path, routes: list[str], source: str = LIBRARY, reference: str = SLOW_REFERENCE,
                   **extra: object) -> dict:
    library = tmp_path / "baseline.py"
    library.write_text(source)
    return _evaluate(tmp_path, "def run(x):\n    return x * 2.0\n", reference=reference,
                     baseline={"routes": routes, "module": str(library)}, **extra)


def test_a_child_times_every_correct_route_and_names_the_fastest(tmp_path: Path) -> None:
    result = _with_baseline(tmp_path, ["doubled", "tripled", "raises"])
    assert result["correct"], result["failure"]
    assert result["baseline_failure"] is None
    for workload in result["workloads"]:
        assert set(workload["baseline_times_us"]) == {"doubled"}
        assert "expected" in workload["baseline_failures"]["tripled"] or "elements" in workload["baseline_failures"][
            "tripled"]
        assert "no such library" in workload["baseline_failures"]["raises"]
        assert workload["baseline_route"] == "doubled"
        assert workload["baseline_time_us"] == workload["baseline_times_us"]["doubled"] > 0
        assert len(workload["baseline_paired_ratios"]) == workload["reps"]
    assert result["seconds"]["baseline"] > 0


def test_a_route_the_reference_outruns_leaves_the_reference_as_the_baseline(tmp_path: Path) -> None:
    """A user who has the reference can run it: a route slower than it is timed and listed, but not the
    baseline."""
    slow_route = "def doubled(x):\n    y = x + x\n" + SLOW_TAIL
    result = _with_baseline(tmp_path, ["doubled"], source=slow_route, reference=REFERENCE)
    assert result["correct"], result["failure"]
    for workload in result["workloads"]:
        assert set(workload["baseline_times_us"]) == {"doubled"}
        assert workload["baseline_route"] == "reference"
        assert workload["baseline_time_us"] == workload["ref_time_us"] < workload["baseline_times_us"]["doubled"]
        assert len(workload["baseline_paired_ratios"]) == workload["reps"]


def test_a_baseline_that_does_not_load_leaves_the_candidate_judged(tmp_path: Path) -> None:
    result = _with_baseline(tmp_path, ["doubled"], source="raise ImportError('cublas missing')\n")
    assert result["correct"], result["failure"]
    assert "cublas missing" in result["baseline_failure"]
    assert all(w["baseline_route"] is None and not w["baseline_times_us"] for w in result["workloads"])


def test_a_child_without_a_baseline_times_none(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    return x * 2.0\n")
    assert result["correct"]
    assert all(w["baseline_route"] is None for w in result["workloads"])
    assert result["seconds"]["baseline"] == 0


@pytest.mark.heavy
def test_torch_compile_of_the_reference_is_a_route_compiled_per_workload(tmp_path: Path) -> None:
    result = _evaluate(tmp_path, "def run(x):\n    return x * 2.0\n", reference=SLOW_REFERENCE,
                       baseline={"routes": ["compile"]}, workloads=WORKLOADS[:1])
    assert result["correct"], result["failure"]
    workload = result["workloads"][0]
    assert workload["baseline_failures"] == {}
    # Timed beside the reference (which of the two is faster depends on the machine's load: not asserted).
    assert workload["baseline_times_us"].get("compile", 0) > 0
    assert result["seconds"]["baseline"] > 0  # its compilation, apart from the candidate's phases


def test_a_candidate_equal_to_the_baseline_is_within_the_noise_of_it(tmp_path: Path) -> None:
    """The same code as candidate and as baseline route: 1.0 lies inside the spread of their paired per-round
    ratios (5th to 95th percentile), as the pairing promises."""
    same = "def run(x):\n    return x * 2.0\n"
    library = tmp_path / "baseline.py"
    library.write_text(same.replace("def run", "def same"))
    big = [{"index": 0, "axes": {"M": 512, "N": 2048}, "held_out": False}]
    timing = {"warmup": 2, "min_reps": 20, "max_reps": 40, "target_rel_se": 0.001, "max_seconds_per_workload": 2.0}
    result = _evaluate(tmp_path, same, workloads=big, timing=timing,
                       baseline={"routes": ["same"], "module": str(library)})
    assert result["correct"], result["failure"]
    ratios = result["workloads"][0]["baseline_paired_ratios"]
    assert len(ratios) >= 20
    deciles = statistics.quantiles(ratios, n=20)
    assert deciles[0] <= 1.0 <= deciles[-1], ratios


# ---------------------------------------------------------------- the decision


def _result(ref_us: float, time_us: float, **baseline: object) -> ChildResult:
    entry = {"index": 0, "correct": True, "time_us": time_us, "ref_time_us": ref_us, "ref_rel_se": 0.001,
             "paired_ratios": [], **baseline}
    return ChildResult.model_validate({"ok": True, "correct": True, "workloads": [entry]})


def _scale_gpu_workload():
    problem = load_problem(SCALE)
    return problem, [problem.workloads[0]]


def test_the_gain_over_a_baseline_timed_in_the_child_is_the_paired_ratio() -> None:
    problem, workloads = _scale_gpu_workload()
    verdict = judge(_result(100.0, 10.0, baseline_route="compile", baseline_time_us=20.0), problem, workloads,
                    Thresholds(0.0, 0.0), None, has_incumbent=False)
    assert verdict.speedup == pytest.approx(10.0)
    assert verdict.speedup_over_baseline == pytest.approx(2.0)
    assert verdict.workloads[0].baseline_route == "compile"


def test_a_later_child_reads_its_gain_through_the_reference_while_the_reference_agrees() -> None:
    problem, workloads = _scale_gpu_workload()
    kept = {0: BaselineTime("compile", time_us=20.0, ref_time_us=100.0, ref_rel_se=0.001)}
    agreeing = judge(_result(102.0, 10.0), problem, workloads, Thresholds(0.0, 0.0), None, False, baselines=kept)
    assert agreeing.speedup_over_baseline == pytest.approx(10.2 * 0.2)
    assert agreeing.workloads[0].baseline_route == "compile"
    moved = judge(_result(130.0, 10.0), problem, workloads, Thresholds(0.0, 0.0), None, False, baselines=kept)
    assert moved.speedup is not None and moved.speedup_over_baseline is None


def test_without_a_baseline_the_reference_stands_in_and_says_so() -> None:
    problem, workloads = _scale_gpu_workload()
    verdict = judge(_result(100.0, 50.0), problem, workloads, Thresholds(0.0, 0.0), None, has_incumbent=False)
    assert verdict.speedup_over_baseline == verdict.speedup == pytest.approx(2.0)
    assert verdict.workloads[0].baseline_route == "reference"


def test_the_eager_route_is_the_reference_by_name_and_each_route_has_its_ratio() -> None:
    """KernelBench's two baselines: eager (the reference, timed once as the reference) and torch.compile. Where the
    reference beat the timed routes it is named eager, and the report gives the gain over each, as KernelBench's
    "speedup over eager" and "speedup over torch.compile"."""
    from arcengine.domain.events import CandidateDecided
    from arcengine.tools.evaluate import eval_report

    problem, workloads = _scale_gpu_workload()
    compile_lost = _result(100.0, 50.0, baseline_route="reference", baseline_time_us=100.0,
                           baseline_times_us={"compile": 125.0})
    verdict = judge(compile_lost, problem, workloads, Thresholds(0.0, 0.0), None, has_incumbent=False,
                    routes=("eager", "compile"))
    workload = verdict.workloads[0]
    assert workload.baseline_route == "eager" and workload.speedup_over_baseline == pytest.approx(2.0)
    assert workload.baseline_times_us == {"eager": 100.0, "compile": 125.0}
    report = eval_report(CandidateDecided(candidate_id="c", agent_id="eval", decision="KEEP", reason="", correct=True,
                                          speedup=verdict.speedup, workloads=list(verdict.workloads),
                                          speedup_over_baseline=verdict.speedup_over_baseline))
    assert report.speedup_over_routes == pytest.approx({"eager": 2.0, "compile": 2.5})
    assert report.workloads[0].speedup_over_routes == pytest.approx({"eager": 2.0, "compile": 2.5})
    assert "2.000x over eager, 2.500x over compile" in report.baseline
    # Without eager among the routes the same result names the reference, and only the timed route has a time.
    plain = judge(compile_lost, problem, workloads, Thresholds(0.0, 0.0), None, has_incumbent=False,
                  routes=("compile",))
    assert plain.workloads[0].baseline_route == "reference"
    assert plain.workloads[0].baseline_times_us == {"compile": 125.0}


def test_with_eager_alone_nothing_more_is_timed_and_the_reference_stands_in() -> None:
    """On a CPU a KernelBench problem's routes are eager alone (torch.compile's C++ build is left out): no child
    times a baseline, the reference stands in as ever, and eager's time is the reference's."""
    from arcengine.guard.child.baselines import timed_routes

    assert timed_routes(("eager",)) == () and timed_routes(("eager", "compile")) == ("compile",)
    problem, workloads = _scale_gpu_workload()
    verdict = judge(_result(100.0, 50.0), problem, workloads, Thresholds(0.0, 0.0), None, has_incumbent=False,
                    routes=("eager",))
    assert verdict.workloads[0].baseline_route == "reference"
    assert verdict.workloads[0].baseline_times_us == {"eager": 100.0}


def _records(entries: list[dict]) -> list[WorkloadOutcome]:
    return [WorkloadOutcome.model_validate(entry) for entry in entries]


def test_the_cache_times_once_per_gpu_and_again_once_the_reference_moves() -> None:
    cache = BaselineCache("once", declared=True)
    assert cache.wanted(0)
    timed = [{"index": 0, "baseline_route": "compile", "baseline_time_us": 20.0, "ref_time_us": 100.0}]
    cache.learn(0, _records(timed), timed=True)
    assert not cache.wanted(0) and cache.wanted(1)
    cache.learn(0, _records([{"index": 0, "ref_time_us": 101.0}]), timed=False)
    assert not cache.wanted(0)
    cache.learn(0, _records([{"index": 0, "ref_time_us": 150.0}]), timed=False)
    assert cache.wanted(0)
    assert BaselineCache("every", declared=True).wanted(0)
    assert not BaselineCache("once", declared=False).wanted(0)
    assert not BaselineCache("off", declared=True).wanted(0)


def test_one_small_kernel_in_its_noise_keeps_the_baseline_and_a_device_that_moved_drops_it() -> None:
    # Two children's medians of a 20 us reference differ by up to 5% on an H200; all workloads at once is the device.
    kept = {i: BaselineTime("compile", 10.0, ref, 0.001) for i, ref in enumerate([20.0, 200.0, 400.0, 800.0])}
    one_noisy = [{"index": 0, "ref_time_us": 21.6}, *({"index": i, "ref_time_us": kept[i].ref_time_us}
                                                    for i in (1, 2, 3))]
    assert chain_holds(kept, _records(one_noisy))
    assert not chain_holds(kept, _records([{**one_noisy[0], "ref_time_us": 24.0}, *one_noisy[1:]]))  # 20% on one shape
    all_moved = [{"index": i, "ref_time_us": kept[i].ref_time_us * 1.07} for i in range(4)]
    assert not chain_holds(kept, _records(all_moved))
    cache = BaselineCache("once", declared=True)
    timed = [{"index": i, "baseline_route": "compile", "baseline_time_us": 10.0, "ref_time_us": t.ref_time_us}
             for i, t in kept.items()]
    cache.learn(0, _records(timed), timed=True)
    cache.learn(0, _records(one_noisy), timed=False)
    assert not cache.wanted(0)
    cache.learn(0, _records(all_moved), timed=False)
    assert cache.wanted(0)


# ---------------------------------------------------------------- the problem's declaration


def _problem_with(tmp_path: Path, table: str, library: str | None = None) -> Path:
    folder = tmp_path / "scale"
    shutil.copytree(SCALE, folder)
    with (folder / "problem.toml").open("a") as toml:
        toml.write(f"\n[baseline]\n{table}\n")
    if library is not None:
        (folder / "baseline.py").write_text(library)
    return folder


def _slow_reference(folder: Path) -> Path:
    """The scale fixture's reference made slow, so a declared route is the baseline on every shape."""
    reference = folder / "reference.py"
    reference.write_text(reference.read_text().replace("    return x * 2 + 1\n", "    y = x * 2 + 1\n" + SLOW_TAIL))
    return folder


def test_a_problem_declares_its_routes_and_the_cpu_skips_torch_compile_by_default(tmp_path: Path) -> None:
    problem = load_problem(_problem_with(tmp_path, 'routes = ["compile", "doubled"]', LIBRARY))
    assert problem.baseline_routes_for("cuda") == ("compile", "doubled")
    assert problem.baseline_routes_for("cpu") == ("doubled",)
    eager = load_problem(_problem_with(tmp_path / "eager", 'routes = ["eager", "compile"]'))  # no baseline.py needed
    assert eager.baseline_routes_for("cuda") == ("eager", "compile") and eager.baseline_routes_for("cpu") == ("eager",)
    assert load_problem(SCALE).baseline_routes_for("cuda") == ()


def test_a_route_that_is_not_defined_is_a_problem_error(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="cublas_gemm not defined"):
        load_problem(_problem_with(tmp_path, 'routes = ["cublas_gemm"]', LIBRARY))
    with pytest.raises(ProblemError, match="routes and cpu_routes only"):
        load_problem(_problem_with(tmp_path / "b", 'route = ["compile"]'))


def test_eval_reports_the_gain_over_the_baseline_and_falls_back_to_the_reference(tmp_path: Path) -> None:
    folder = _problem_with(tmp_path, 'routes = ["compile", "plain"]',
                           "def plain(x):\n    return x * 2 + 1\n")
    _slow_reference(folder)
    candidate = tmp_path / "candidate.py"
    candidate.write_text(scale_source("return x * 2 + 1"))
    result = arcengine("eval", str(folder), str(candidate), "--device", "cpu", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["speedup_over_baseline"] > 0
    assert re.search(r"x the baseline \(plain\); [0-2]/2 shapes faster than baseline", document["baseline"])
    for w in document["workloads"]:
        assert w["baseline_route"] == "plain" and list(w["baseline_times_us"]) == ["plain"]  # no compile on a CPU
        assert w["speedup_over_baseline"] == pytest.approx(w["baseline_time_us"] / w["time_us"])
    without = json.loads(arcengine("eval", str(folder), str(candidate), "--device", "cpu", "--json",
                                   "--no-baseline").stdout)
    assert {w["baseline_route"] for w in without["workloads"]} == {"reference"}
    assert "the reference: no route declared, correct or faster" in without["baseline"]


@pytest.mark.heavy
def test_torch_compile_of_a_kernelbench_model_is_its_baseline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """KernelBench's own baseline, torch.compile of Model, compiled through the generated reference."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # where imported problems are generated
    from arcengine.domain.formats import kernelbench
    from tests.test_formats import KB_CANDIDATE, KB_PROBLEM

    (tmp_path / "19_Linear_ReLU.py").write_text(KB_PROBLEM)
    folder = kernelbench.materialize(tmp_path / "19_Linear_ReLU.py")
    work = tmp_path / "child"
    work.mkdir()
    shutil.copy(folder / "kernelbench_problem.py", work)
    result = _evaluate(work, KB_CANDIDATE, reference=(folder / "reference.py").read_text(),
                       workloads=[{"index": 0, "axes": {"CASE": 1}, "held_out": False}],
                       baseline={"routes": ["compile"]})
    assert result["correct"], result["failure"]
    workload = result["workloads"][0]
    assert workload["baseline_failures"] == {} and "compile" in workload["baseline_times_us"]
    # on a CPU, eager Linear+ReLU can outrun its compilation: then the reference is the baseline
    faster = "compile" if workload["baseline_times_us"]["compile"] <= workload["ref_time_us"] else "reference"
    assert workload["baseline_route"] == faster


# ---------------------------------------------------------------- a campaign


@pytest.mark.heavy
async def test_a_campaign_reports_the_gain_over_the_baseline_and_can_target_it(tmp_path: Path, campaign_config) -> None:
    from arcengine.domain.events import BestImproved, CandidateDecided
    from arcengine.engine.campaign import Campaign
    from arcengine.providers.scripted import ScriptedProvider
    from arcengine.recording.eventlog import read_events

    folder = _slow_reference(_problem_with(tmp_path, 'routes = ["plain"]', "def plain(x):\n    return x * 2 + 1\n"))
    fast = scale_source("return x * 2 + 1")
    config = campaign_config(problem=str(folder), budget=3, plateau=None, baseline="every")
    summary = await Campaign(config, provider=ScriptedProvider([fast], cycle=True)).run()
    assert summary.best is not None and (summary.best.speedup_over_baseline or 0) > 0
    events = list(read_events(Path(summary.run_dir) / "events.jsonl"))
    decided = [e for e in events if isinstance(e, CandidateDecided) and e.correct]
    assert decided and all(e.speedup_over_baseline for e in decided)
    assert all(w.baseline_route == "plain" for e in decided for w in e.workloads)
    # Timed in every child (``every``), a KEEP's confirming one included: its verdict is the one reported when it
    # does not confirm.
    assert all("plain" in w.baseline_times_us for e in decided for w in e.workloads)
    assert all(e.speedup_over_baseline for e in events if isinstance(e, BestImproved))

    targeted = campaign_config(problem=str(folder), budget=6, plateau=None, target_speedup=1e-6,
                               target_against="baseline", baseline="every", out=tmp_path / "targeted")
    stopped = await Campaign(targeted, provider=ScriptedProvider([fast], cycle=True)).run()
    assert stopped.stop_reason == "target speedup 1e-06x over the baseline reached"


def test_a_candidate_whose_host_outlasts_its_gpu_time_is_named_host_bound() -> None:
    """The guard times the GPU (the head start hides the host side); eval warns where the candidate's host side per
    call outlasts that time, as a vendor library called through Python does on small shapes: an eager loop of
    such calls runs at the host's pace. A GPU-bound candidate gets no warning, nor a CPU one (no host figure)."""
    from arcengine.domain.events import CandidateDecided, WorkloadResult
    from arcengine.tools.evaluate import HOST_KEY, eval_report

    def decided(host_us: dict[int, float]) -> CandidateDecided:
        workloads = [WorkloadResult(index=i, axes={"T": t}, held_out=False, correct=True, time_us=20.0,
                                    ref_time_us=100.0, speedup=5.0, harness={HOST_KEY: host_us[i]} if i in host_us
                                    else {}) for i, t in enumerate((1, 4096))]
        return CandidateDecided(candidate_id="c", agent_id="eval", decision="KEEP", reason="", correct=True,
                                speedup=5.0, workloads=workloads, warnings=["gate's own"])

    bound = eval_report(decided({0: 48.0, 1: 5.0})).warnings
    assert bound[0] == "gate's own" and len(bound) == 2
    assert bound[1].startswith("host-bound on 1/2 workloads (T=1: 48.0 us of host per call against 20.0 us")
    assert eval_report(decided({0: 5.0, 1: 5.0})).warnings == ["gate's own"]
    assert eval_report(decided({})).warnings == ["gate's own"]
