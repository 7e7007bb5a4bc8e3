"""The command line as a user runs it: real subprocesses, real guard children."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, SCALE, scale_source


def arcengine(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arcengine.cli", *args], capture_output=True, text=True,
                          cwd=cwd, check=False)


def test_problems_list_names_the_shipped_problems() -> None:
    listed = arcengine("problems", "list")
    assert listed.returncode == 0
    assert {line.split()[0] for line in listed.stdout.splitlines()} >= {"rmsnorm", "softmax"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "no-such-problem"], "no problem 'no-such-problem'"),
        (["run", "rmsnorm", "--agents", "0"], "agents"),
        (["run", "rmsnorm", "--agents", "4", "--budget", "2"], "budget"),
        (["run", "rmsnorm", "--bogus"], "No such option"),
        (["run", "rmsnorm", "--device", "tpu"], "tpu"),
        (["run", "rmsnorm", "--config", "/no/such.toml"], "does not exist"),
        (["eval", "rmsnorm", "/no/such/candidate.py"], "does not exist"),
        (["problems", "check", "/tmp"], "missing problem.toml"),
        (["run", "rmsnorm", "--gpus", "two"], "'two' is not all, a count (2) or a list of GPU indices (0,1)"),
        (["run", "rmsnorm", "--model", "gpt:4"], "unknown provider 'gpt'"),
        (["replay", "/no/such/run"], "no event log at /no/such/run/events.jsonl"),
        (["report", "/no/such/run"], "no run folder at /no/such/run"),
        (["tui", "/no/such/run"], "/no/such/run is not a run folder"),
        (["export", "/tmp", "--format", "python"], "/tmp has no best.py"),
        (["export", "/tmp", "--format", "onnx"], "'onnx' is not one of"),
        (["run", "--resume", "/no/such/run"], "/no/such/run is not a run folder (no events.jsonl)"),
    ],
)
def test_bad_input_is_one_clear_line(args: list[str], needle: str) -> None:
    result = arcengine(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("arcengine: error:") and needle in lines[0]
    assert "Traceback" not in result.stderr


def _problem_with(tmp_path: Path, edit: str) -> Path:
    """A copy of the scale fixture with one thing wrong."""
    folder = tmp_path / "problem"
    shutil.copytree(SCALE, folder)
    toml = folder / "problem.toml"
    match edit:
        case "no reference":
            (folder / "reference.py").unlink()
        case "toml syntax":
            toml.write_text(toml.read_text() + "\nname = [\n")
        case "name not a string":
            toml.write_text(re.sub(r"^name = .*$", "name = 5", toml.read_text(), flags=re.MULTILINE))
        case "unknown axis":
            toml.write_text(re.sub(r"^flops = .*$", 'flops = "2 * Q"', toml.read_text(), flags=re.MULTILINE))
        case "no workloads":
            toml.write_text(re.sub(r"\[\[workloads\]\][^[]*", "", toml.read_text()))
    return folder


@pytest.mark.parametrize(("edit", "needle"), [
    ("no reference", "missing reference.py"),
    ("toml syntax", "problem.toml: "),
    ("name not a string", "name must be a string, not int (5); put it in quotes"),
    ("unknown axis", "uses unknown axis 'Q'"),
    ("no workloads", "needs at least one [[workloads]] entry"),
])
def test_a_malformed_problem_folder_is_one_clear_line(tmp_path: Path, edit: str, needle: str) -> None:
    result = arcengine("problems", "check", str(_problem_with(tmp_path, edit)), "--device", "cpu")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("arcengine: error:") and needle in line, line


@pytest.mark.parametrize(("content", "needle"), [
    ('agents = "many"\n', "agents: Input should be a valid integer"),
    ("agents = 3\nbudget = \n", "c.toml: "),
    ("agnets = 3\n", "agnets: Extra inputs are not permitted"),
])
def test_a_bad_config_file_is_one_clear_line(tmp_path: Path, content: str, needle: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text(content)
    result = arcengine("run", "rmsnorm", "--config", str(config))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert needle in line, line


def test_a_damaged_event_log_is_one_clear_line_and_stays_as_it_was(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"v":1,"seq":1}\n{"broken\n{"v":1}\n')
    before = log.read_bytes()
    for command in (["replay", str(tmp_path)], ["report", str(tmp_path)], ["run", "--resume", str(tmp_path)]):
        result = arcengine(*command)
        assert result.returncode == 2, command
        (line,) = result.stderr.strip().splitlines()
        assert "events.jsonl:1: not a valid event" in line, (command, line)
    assert log.read_bytes() == before


@pytest.mark.parametrize(
    ("body", "imports", "verdict", "code"),
    [
        ("return x * 2 + 1", "import os\nimport torch\nLEVEL = os.environ.get('LEVEL')", "pass", 0),
        ("return x * 2", "import torch", "fail", 1),
        ("return x * 2 + 1", "import torch\nimport subprocess", "reject", 1),
    ],
)
def test_eval_json_verdicts(tmp_path: Path, body: str, imports: str, verdict: str, code: int) -> None:
    candidate = tmp_path / ("candidate" if verdict == "pass" else "candidate.py")  # a file need not end in .py
    candidate.write_text(scale_source(body, imports))
    result = arcengine("eval", str(SCALE), str(candidate), "--device", "cpu", "--json")
    assert result.returncode == code, result.stderr
    document = json.loads(result.stdout)
    assert document["verdict"] == verdict
    if verdict == "pass":
        assert any("reads the environment" in warning for warning in document["warnings"])  # allowed, said
        assert document["speedup"] > 0
        assert {w["held_out"] for w in document["workloads"]} == {False, True}
        assert all(w["correct"] and w["time_us"] > 0 and w["ref_time_us"] > 0 for w in document["workloads"])
        assert set(document["workloads"][0]) >= {"axes", "held_out", "correct", "time_us", "ref_time_us", "speedup"}


def test_an_offline_campaign_on_a_problem_without_tunables_searches_the_generated_seed(tmp_path: Path) -> None:
    # A KernelBench problem's seed is its Model, with no TUNABLES: the generated library seed (the reference, eager
    # or through torch.compile) is judged beside it and the offline tuner searches its route (issue 29).
    result = arcengine("run", str(FIXTURES / "kernelbench" / "1_Add.py"), "--agents", "1", "--budget", "1",
                       "--device", "cpu", "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["candidates"] == 1 and summary["stop_reason"] == "candidate budget spent"
    assert "[seed library_seed.py] KEEP" in result.stderr
    candidates = Path(summary["run_dir"], "candidates")
    assert "ROUTE = " in (candidates / "c0001.py").read_text()


def test_problems_seed_writes_the_tunable_seed_or_a_generated_one(tmp_path: Path) -> None:
    out = tmp_path / "seed.py"
    result = arcengine("problems", "seed", str(SCALE), "--out", str(out), "--device", "cpu", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["generated"] is False  # the fixture's seed declares TUNABLES
    assert out.read_text() == (SCALE / "seed.py").read_text()
    result = arcengine("problems", "seed", str(FIXTURES / "kernelbench" / "1_Add.py"), "--out", str(out))
    assert result.returncode == 0 and "generated from its reference" in result.stdout
    assert "class ModelNew(Model)" in out.read_text() and "TUNABLES = " in out.read_text()
    assert "COORDINATE_DESCENT = " in out.read_text()  # on a GPU, Inductor's knobs are tunables too
    result = arcengine("problems", "seed", str(FIXTURES / "kernelbench" / "1_Add.py"), "--out", str(out), "--device",
                       "cpu")
    assert result.returncode == 0 and "GPU only" in result.stdout and "COORDINATE_DESCENT" not in out.read_text()
    result = arcengine("problems", "seed", str(SCALE), "--out", str(tmp_path / "missing" / "seed.py"))
    assert result.returncode == 2 and result.stderr.strip().startswith("arcengine: error: cannot write")


def test_run_json_prints_only_the_summary(tmp_path: Path) -> None:
    # One agent, two candidates: enough decision lines on stderr to show stdout stays the summary alone.
    result = arcengine("run", str(SCALE), "--agents", "1", "--budget", "2", "--device", "cpu", "--out",
                       str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # nothing else on stdout
    assert set(summary) >= {"run_dir", "device", "candidates", "decisions", "best", "stop_reason"}
    assert summary["device"] == "cpu" and summary["candidates"] == 2
    assert set(summary["decisions"]) == {"KEEP", "ACCEPT", "REVERT", "REJECT"}
    assert sum(summary["decisions"].values()) == 2
    assert set(summary["best"]) >= {"speedup", "agent", "candidate"}
    assert Path(summary["run_dir"], "best.py").is_file()
    assert "KEEP" in result.stderr or "REVERT" in result.stderr or "ACCEPT" in result.stderr  # lines on stderr


def test_problems_check_passes_on_the_cpu() -> None:
    result = arcengine("problems", "check", str(SCALE), "--device", "cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok on cpu" in result.stdout


@pytest.mark.parametrize(("device", "leads"), [("cpu", "1.730x the seed (0.001x the reference"),
                                               ("cuda", "6.560x the reference, 0.760x the baseline, 1.730x the seed")])
def test_the_best_line_leads_with_the_gain_over_the_seed_on_the_cpu(device: str, leads: str) -> None:
    # On the CPU interpreted Triton runs against native PyTorch: the demo's "0.001x the reference" says nothing.
    from types import SimpleNamespace

    from arcengine.cli import _best_line

    speedup = 0.001 if device == "cpu" else 6.56
    best = SimpleNamespace(candidate="c0012", agent="a2", speedup=speedup,
                           speedup_over_baseline=None if device == "cpu" else 0.76)
    line = _best_line(SimpleNamespace(best=best, device=device, best_over_seed=1.73))
    assert line.startswith(f"best: c0012 by a2, {leads}")
    assert ("figure to read" in line) == (device == "cpu")
