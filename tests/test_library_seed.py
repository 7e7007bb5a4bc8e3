"""The generated seed (arcengine/domain/library_seed.py): a seed for any problem, its route as TUNABLES."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from arcengine.domain import library_seed
from arcengine.domain.conclusions import Recall
from arcengine.domain.problem import load_problem, shipped_problem_names
from arcengine.domain.skills import Skill
from arcengine.domain.tunables import apply_settings, inert, read_conditions, read_tunables
from arcengine.guard.child.baselines import BUILTIN_ROUTES
from arcengine.guard.gate import check_source
from arcengine.providers.base import AgentContext
from arcengine.providers.offline import OfflineProvider
from arcengine.tools.evaluate import evaluate_file

FIXTURES = Path(__file__).parent / "fixtures"
DOUBLED = "def doubled(x):\n    return x * 2 + 1\n"
PROBLEMS = [*shipped_problem_names(), str(FIXTURES / "scale"), str(FIXTURES / "kernelbench" / "1_Add.py")]


@pytest.mark.parametrize("spec", PROBLEMS)
def test_every_problems_generated_seed_passes_the_gate_and_its_tunables_round_trip(spec: str) -> None:
    problem = load_problem(spec)
    source = library_seed.library_seed(problem, "cuda")
    assert check_source(source, problem.entry).ok
    space, settings = read_tunables(source)
    library = [route for route in problem.baseline_routes if route not in BUILTIN_ROUTES]
    assert space["ROUTE"] == library_seed.ROUTES + [f"library:{name}" for name in library]
    knobs = {name for name, knob in library_seed.KNOBS.items() if name in space}  # on a GPU only
    assert set(space) == {"ROUTE", *knobs} and knobs >= {"COORDINATE_DESCENT", "SPLIT_REDUCTIONS"}
    assert settings == {"ROUTE": "eager", **{name: library_seed.KNOBS[name].values[0] for name in knobs}}
    for name, values in space.items():
        for value in values:
            tuned = apply_settings(source, {name: value})
            assert read_tunables(tuned)[1][name] == value
            assert check_source(tuned, problem.entry).ok
            compile(tuned, "library_seed.py", "exec")
    assert set(read_tunables(library_seed.library_seed(problem, "cpu"))[0]) == {"ROUTE"}


def test_library_knobs_are_offered_where_the_reference_calls_for_them_and_matter_only_under_their_routes() -> None:
    gemm = library_seed.library_seed(load_problem("gemm_residual"), "cuda")
    space, _ = read_tunables(gemm)
    when = read_conditions(gemm)
    assert "GEMM_BACKENDS" in space and "CUDNN_BENCHMARK" not in space  # a GEMM, no convolution
    assert when["GEMM_BACKENDS"] == {"ROUTE": ["compile:max-autotune-no-cudagraphs", "compile:max-autotune"]}
    assert when["COORDINATE_DESCENT"]["ROUTE"] == [route for route in space["ROUTE"] if route.startswith("compile:")]
    assert "GEMM_BACKENDS" not in read_tunables(library_seed.library_seed(load_problem("rmsnorm"), "cuda"))[0]

def test_cudnns_search_is_offered_for_a_convolution_and_matters_on_every_route(tmp_path: Path) -> None:
    conv = tmp_path / "conv.py"
    conv.write_text((FIXTURES / "kernelbench" / "1_Add.py").read_text().replace("return a + b",
                                                                                "return torch.conv1d(a, b)"))
    source = library_seed.library_seed(load_problem(conv), "cuda")
    assert "CUDNN_BENCHMARK" in read_tunables(source)[0] and "CUDNN_BENCHMARK" not in read_conditions(source)
    assert check_source(apply_settings(source, {"CUDNN_BENCHMARK": True}), "ModelNew").ok
    assert not inert({"ROUTE": "eager", "CUDNN_BENCHMARK": False}, {"ROUTE": "eager", "CUDNN_BENCHMARK": True},
                     read_conditions(source))


def test_a_problem_with_a_tunable_seed_keeps_it() -> None:
    problem = load_problem(FIXTURES / "scale")
    assert library_seed.tunable_seed(problem, "cpu") == ("seed.py", (FIXTURES / "scale" / "seed.py").read_text())
    kernelbench = load_problem(FIXTURES / "kernelbench" / "1_Add.py")
    assert library_seed.tunable_seed(kernelbench, "cpu")[0] == library_seed.SEED_FILE


def test_the_generated_seed_compiled_passes_the_guard_on_the_cpu(tmp_path: Path) -> None:
    # Its eager route is judged as a seed in tests/test_cli.py's offline campaign on the same problem.
    problem = load_problem(FIXTURES / "kernelbench" / "1_Add.py")
    candidate = tmp_path / "library_seed.py"
    candidate.write_text(apply_settings(library_seed.library_seed(problem), {"ROUTE": "compile:default:dynamic"}))
    decided, _ = anyio.run(evaluate_file, problem, candidate, "cpu")
    assert decided.correct, decided.reason


def test_a_library_route_of_the_generated_seed_passes_the_guard_on_the_cpu(tmp_path: Path) -> None:
    problem = load_problem("softmax")
    candidate = tmp_path / "library_seed.py"
    candidate.write_text(apply_settings(library_seed.library_seed(problem, "cpu"), {"ROUTE": "library:softmax"}))
    decided, _ = anyio.run(evaluate_file, problem, candidate, "cpu")
    assert decided.correct, decided.reason


def test_library_routes_are_left_out_where_baseline_py_would_rebind_the_references_names(tmp_path: Path) -> None:
    folder = tmp_path / "clash"
    shutil.copytree(FIXTURES / "scale", folder)
    (folder / "baseline.py").write_text("import torch\n\n\n" + DOUBLED)
    with (folder / "problem.toml").open("a") as toml:
        toml.write('\n[baseline]\nroutes = ["doubled"]\n')
    space, _ = read_tunables(library_seed.library_seed(load_problem(folder), "cpu"))
    assert space["ROUTE"][-1] == "library:doubled"
    # A make_inputs of its own would replace the reference's in the seed's one module.
    (folder / "baseline.py").write_text("def make_inputs():\n    return ()\n\n\n" + DOUBLED)
    space, _ = read_tunables(library_seed.library_seed(load_problem(folder), "cpu"))
    assert space["ROUTE"] == library_seed.ROUTES


async def test_the_offline_tuner_searches_the_generated_seed_and_its_proposals_pass_the_gate() -> None:
    problem = load_problem(FIXTURES / "kernelbench" / "1_Add.py")
    source = library_seed.library_seed(problem, "cuda")
    skill = Skill(name="routes", description="d", kind="strategy", eligible=("*",), tunables=(), body="b",
                  path=Path("routes.md"))
    provider = OfflineProvider(seed=1)
    working = source
    for _ in range(6):
        context = AgentContext(
            agent_id="a1", strategy=skill, problem_name=problem.name, problem_description="d", kernel_type="k",
            reference_source=problem.reference_source, visible_workloads=[], working_source=working,
            best_source=working, best_speedup=1.0, plateau=0, drafting=False, recall=Recall(wins=[], traps=[]),
            leaderboard=None, feedback=None, device="cuda")
        proposal = await provider.propose(context)
        assert check_source(proposal.source, problem.entry).ok
        assert read_tunables(proposal.source)[1] == proposal.params
        if proposal.params["ROUTE"] == "eager":  # under eager, no Inductor knob is ever the change
            assert proposal.params["ROUTE"] != read_tunables(working)[1]["ROUTE"]
        working = proposal.source  # as if each were kept


def test_knobs_are_offered_for_what_the_code_does_not_what_its_words_say(tmp_path: Path) -> None:
    # KernelBench's 88_MinGPTNewGelu documents itself as "Gaussian Error Linear Units": no GEMM to tune.
    worded = tmp_path / "worded.py"
    worded.write_text((FIXTURES / "kernelbench" / "1_Add.py").read_text().replace(
        "return a + b", '"""A Linear Units function (matmul-free): see the @ note."""\n        return a + b  # no mm'))
    assert "GEMM_BACKENDS" not in read_tunables(library_seed.library_seed(load_problem(worded), "cuda"))[0]
    product = tmp_path / "product.py"
    product.write_text((FIXTURES / "kernelbench" / "1_Add.py").read_text().replace("return a + b", "return a @ b"))
    assert "GEMM_BACKENDS" in read_tunables(library_seed.library_seed(load_problem(product), "cuda"))[0]
