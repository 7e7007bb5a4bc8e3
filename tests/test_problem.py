"""arcengine/domain/problem.py: safe expressions, the native folder format and its errors, and the shipped problems."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from arcengine.domain.problem import (
    Problem,
    ProblemError,
    Workload,
    evaluate_expression,
    load_problem,
    resolve_problem_dir,
    shipped_problem_names,
)

REFERENCE = '''\
import torch


def make_inputs(axes, generator, device):
    return (torch.randn(axes["M"], axes["N"], generator=generator, device=device),)


def run(x):
    return x * 2
'''
SEED = "def run(x):\n    return x + x\n"
TOML = '''\
name = "double"
kernel_type = "elementwise"
category = "L1"
description = """
  Doubles a matrix.
"""
dtype = "float32"

[tolerance]
atol = 1e-3
rtol = 2e-3
matched_ratio = 0.99

[sol]
flops = "M * N"
bytes = "2 * M * N * 4"

[[workloads]]
axes = { M = 3, N = 5 }

[[workloads]]
axes = { M = 64, N = 100 }
dtype = "bfloat16"

[[workloads]]
axes = { M = 7, N = 9 }
held_out = true

[[cpu_workloads]]
axes = { M = 2, N = 3 }

[[cpu_workloads]]
axes = { M = 1, N = 1 }
held_out = true
'''


def _write_problem(root: Path, toml: str = TOML, *, skip: str | None = None) -> Path:
    folder = root / "double"
    folder.mkdir()
    files = {"problem.toml": toml, "reference.py": REFERENCE, "seed.py": SEED}
    for name, text in files.items():
        if name != skip:
            (folder / name).write_text(text, encoding="utf-8")
    return folder


# -- expressions ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("4 * M * N", 4 * 3 * 5),
        ("2 * M * N * 2 + 2 * N", 2 * 3 * 5 * 2 + 2 * 5),
        ("(M + N) // 2", 4),
        ("N / 2", 2.5),
        ("N % M", 2),
        ("M ** 2 - N", 4),
        ("-M + 10", 7),
        ("1.5 * N", 7.5),
    ],
)
def test_evaluate_expression_arithmetic(expression: str, expected: float) -> None:
    value = evaluate_expression(expression, {"M": 3, "N": 5})
    assert value == expected
    assert isinstance(value, float)


def test_evaluate_expression_names_the_unknown_axis() -> None:
    with pytest.raises(ProblemError, match="unknown axis 'K'"):
        evaluate_expression("M * K", {"M": 3})


@pytest.mark.parametrize(
    "expression",
    ["abs(M)", "max(M, 2)", "M.real", "M.__class__", '__import__("os")', '__import__("os").system("true")',
     "'M' * 2", "M if M else 1", "M < 2", "[M][0]", "lambda: M"],
)
def test_evaluate_expression_rejects_anything_but_arithmetic(expression: str) -> None:
    with pytest.raises(ProblemError):
        evaluate_expression(expression, {"M": 3})


def test_evaluate_expression_reports_a_syntax_error() -> None:
    with pytest.raises(ProblemError, match="does not parse"):
        evaluate_expression("M *", {"M": 3})


def test_evaluate_expression_division_by_zero_is_a_problem_error() -> None:
    with pytest.raises(ProblemError):
        evaluate_expression("M / (N - N)", {"M": 3, "N": 5})


# -- load_problem -----------------------------------------------------------------------------------------

def test_load_problem_reads_the_folder(tmp_path: Path) -> None:
    folder = _write_problem(tmp_path)
    problem = load_problem(folder)
    assert isinstance(problem, Problem)
    assert (problem.name, problem.kernel_type, problem.category) == ("double", "elementwise", "L1")
    assert problem.description == "Doubles a matrix."
    assert (problem.tolerance.atol, problem.tolerance.rtol, problem.tolerance.matched_ratio) == (1e-3, 2e-3, 0.99)
    assert problem.directory == folder.resolve()
    assert problem.reference_path.read_text(encoding="utf-8") == REFERENCE
    assert problem.seed_path.read_text(encoding="utf-8") == SEED
    assert [w.axes for w in problem.workloads] == [{"M": 3, "N": 5}, {"M": 64, "N": 100}, {"M": 7, "N": 9}]
    assert [w.index for w in problem.workloads] == [0, 1, 2]
    assert [w.held_out for w in problem.workloads] == [False, False, True]
    assert [w.dtype for w in problem.workloads] == ["float32", "bfloat16", "float32"]
    assert [w.held_out for w in problem.cpu_workloads] == [False, True]
    w = problem.workloads[1]
    assert problem.flops(w) == 64 * 100
    assert problem.bytes(w) == 2 * 64 * 100 * 4
    assert w.label() == "M=64, N=100"


def test_load_problem_accepts_a_string_path(tmp_path: Path) -> None:
    folder = _write_problem(tmp_path)
    assert load_problem(str(folder)).name == "double"


def test_workloads_for_cpu_and_cuda(tmp_path: Path) -> None:
    problem = load_problem(_write_problem(tmp_path))
    assert problem.workloads_for("cpu") == problem.cpu_workloads
    assert problem.workloads_for("cuda") == problem.workloads
    assert problem.workloads_for("cpu") != problem.workloads_for("cuda")


def test_defaults_for_optional_keys(tmp_path: Path) -> None:
    toml = TOML.replace('category = "L1"\n', "").replace('dtype = "float32"\n', "")
    toml = toml.replace('description = """\n  Doubles a matrix.\n"""\n', "")
    problem = load_problem(_write_problem(tmp_path, toml))
    assert problem.category == "L1" and problem.description == ""
    assert problem.workloads[0].dtype == "float32"


def test_destination_passing_is_declared_by_the_problem_and_reaches_the_child_and_the_agents(tmp_path: Path) -> None:
    from arcengine.guard.decision import Thresholds
    from arcengine.guard.service import GuardService
    from arcengine.providers.prompt import contract
    from arcengine.recording.bus import Bus

    for root in "abc":
        (tmp_path / root).mkdir()
    assert load_problem(_write_problem(tmp_path / "a")).destination_passing is False
    problem = load_problem(_write_problem(tmp_path / "b", 'destination_passing = true\n' + TOML))
    assert problem.destination_passing is True
    guard = GuardService(problem, Bus(None), Thresholds(0.0, 0.0), seeds=1, timeout_s=10.0)
    assert guard.child_spec(problem.seed_path, None, 0).destination_passing is True
    assert "run(*inputs, *outputs)" in contract("run", True) and "return None" in contract("run", True)
    assert "run(*inputs, *outputs)" not in contract("run", False)
    with pytest.raises(ProblemError, match="destination_passing must be true or false"):
        load_problem(_write_problem(tmp_path / "c", 'destination_passing = "yes"\n' + TOML))


@pytest.mark.parametrize("missing", ["problem.toml", "reference.py", "seed.py"])
def test_missing_file(tmp_path: Path, missing: str) -> None:
    folder = _write_problem(tmp_path, skip=missing)
    with pytest.raises(ProblemError, match=f"missing {missing}"):
        load_problem(folder)


def test_bad_toml(tmp_path: Path) -> None:
    folder = _write_problem(tmp_path, TOML.replace('name = "double"', "name = double"))
    with pytest.raises(ProblemError, match=r"problem\.toml: .*line 1"):
        load_problem(folder)


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('name = "double"\n', "", "name"),
        ('kernel_type = "elementwise"\n', "", "kernel_type"),
        ("atol = 1e-3\n", "", "atol"),
        ("matched_ratio = 0.99\n", "", "matched_ratio"),
        ('flops = "M * N"\n', "", "flops"),
        ('[sol]\nflops = "M * N"\nbytes = "2 * M * N * 4"\n', "", "sol"),
    ],
)
def test_missing_key_is_named(tmp_path: Path, old: str, new: str, key: str) -> None:
    assert old in TOML
    folder = _write_problem(tmp_path, TOML.replace(old, new))
    with pytest.raises(ProblemError, match=f"missing key '{key}'"):
        load_problem(folder)


@pytest.mark.parametrize("axes", ["{ M = 3.5, N = 5 }", '{ M = "3", N = 5 }', "{ M = true, N = 5 }",
                                  "{ M = 0, N = 5 }", "{ M = -3, N = 5 }", "{}"])
def test_non_integer_axes(tmp_path: Path, axes: str) -> None:
    folder = _write_problem(tmp_path, TOML.replace("axes = { M = 3, N = 5 }", f"axes = {axes}"))
    with pytest.raises(ProblemError, match=r"workloads\[0\]: axes must be a table of positive integers"):
        load_problem(folder)


def test_non_integer_cpu_axes(tmp_path: Path) -> None:
    folder = _write_problem(tmp_path, TOML.replace("axes = { M = 2, N = 3 }", "axes = { M = 2, N = 0.5 }"))
    with pytest.raises(ProblemError, match=r"cpu_workloads\[0\]"):
        load_problem(folder)


@pytest.mark.parametrize("table", ["workloads", "cpu_workloads"])
def test_missing_workload_table(tmp_path: Path, table: str) -> None:
    toml = "\n".join(
        block for block in TOML.split("\n\n") if not block.startswith(f"[[{table}]]")
    )
    folder = _write_problem(tmp_path, toml)
    with pytest.raises(ProblemError, match=f"at least one \\[\\[{table}\\]\\]"):
        load_problem(folder)


def test_expression_over_an_unknown_axis(tmp_path: Path) -> None:
    folder = _write_problem(tmp_path, TOML.replace('flops = "M * N"', 'flops = "M * N * K"'))
    with pytest.raises(ProblemError, match="unknown axis 'K'"):
        load_problem(folder)


def test_expression_with_a_call(tmp_path: Path) -> None:
    folder = _write_problem(tmp_path, TOML.replace('bytes = "2 * M * N * 4"', 'bytes = "len(M)"'))
    with pytest.raises(ProblemError, match="only arithmetic"):
        load_problem(folder)


def test_resolve_unknown_name_lists_the_shipped_problems() -> None:
    with pytest.raises(ProblemError) as info:
        resolve_problem_dir("no-such-problem-xyz")
    message = str(info.value)
    assert "no-such-problem-xyz" in message
    assert "rmsnorm" in message and "softmax" in message


def test_resolve_shipped_name_and_folder(tmp_path: Path) -> None:
    assert resolve_problem_dir("rmsnorm").name == "rmsnorm"
    assert (resolve_problem_dir("rmsnorm") / "problem.toml").is_file()
    folder = _write_problem(tmp_path)
    assert resolve_problem_dir(folder) == folder.resolve()


def test_load_unknown_problem_name() -> None:
    with pytest.raises(ProblemError, match="not a shipped problem"):
        load_problem("no-such-problem-xyz")


# -- shipped problems -------------------------------------------------------------------------------------

def test_shipped_problem_names() -> None:
    assert {"rmsnorm", "softmax"} <= set(shipped_problem_names())


def _not_power_of_two(w: Workload) -> bool:
    return any(v & (v - 1) for v in w.axes.values())


@pytest.mark.parametrize("name", ["rmsnorm", "softmax"])
def test_row_problems_span_decode_to_prefill(name: str) -> None:
    problem = load_problem(name)
    assert problem.name == name
    gpu, cpu = problem.workloads, problem.cpu_workloads
    assert any(_not_power_of_two(w) for w in cpu)
    ms = [w.axes["M"] for w in gpu]
    assert min(ms) <= 32 and max(ms) == 16384
    assert max(w.axes["N"] for w in gpu) >= 8192
    for w in gpu + cpu:
        assert problem.flops(w) > 0 and problem.bytes(w) > 0
    assert problem.reference_path.is_file() and problem.seed_path.is_file()
    assert 0 < problem.tolerance.matched_ratio <= 1


SUITE = {"rmsnorm", "softmax", "gemm_residual", "silu_mul", "rope", "decoder_mlp", "moe_forward",
         "fp8_block_gemm", "paged_prefill_gqa"}


def test_the_suite_covers_the_four_categories() -> None:
    problems = [load_problem(name) for name in shipped_problem_names()]
    assert {p.name for p in problems} >= SUITE
    assert {"L1", "L2", "Q", "FI"} <= {p.category for p in problems}


@pytest.mark.parametrize("name", sorted(SUITE))
def test_suite_problem_has_realistic_visible_and_unseen_held_out_workloads(name: str) -> None:
    problem = load_problem(name)
    visible = [w for w in problem.workloads if not w.held_out]
    held_out = [w for w in problem.workloads if w.held_out]
    assert len(visible) >= 8 and len(held_out) >= 2
    for workload in held_out:  # a held-out shape uses an axis value no visible shape has
        assert any(v not in {u.axes.get(k) for u in visible} for k, v in workload.axes.items())
    assert any(_not_power_of_two(w) for w in problem.workloads)
    assert all(problem.flops(w) >= 0 and problem.bytes(w) > 0 for w in problem.workloads)
    assert (problem.directory / "README.md").is_file()
    if problem.cpu_unsupported is None:
        assert any(w.held_out for w in problem.cpu_workloads) and any(not w.held_out for w in problem.cpu_workloads)


# The checks that take half a minute or more on two cores go first (conftest.py).
SLOW_CPU_CHECKS = {"moe_forward", "paged_prefill_gqa"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.heavy] if name in SLOW_CPU_CHECKS else [])
                                  for name in sorted(SUITE)])
def test_problems_check_passes_on_the_cpu_or_says_why_it_cannot_run_there(name: str) -> None:
    result = subprocess.run([sys.executable, "-m", "arcengine.cli", "problems", "check", name, "--device", "cpu"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    problem = load_problem(name)
    expected = f"{name}: skipped: " if problem.cpu_unsupported else f"{name}: ok on cpu"
    assert result.stdout.startswith(expected), result.stdout
