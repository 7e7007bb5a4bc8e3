"""KernelBench's precisions (``--precision fp32|fp16|bf16``): inputs and weights cast as KernelBench casts them,
compared with KernelBench's tolerance for the precision (src/kernelbench/eval.py: 1e-4 in fp32, 1e-2 in fp16 and
bf16), on the CPU with the fixtures of tests/fixtures/kernelbench."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import torch

from arcengine.domain.formats.kernelbench import PRECISIONS
from arcengine.domain.problem import ProblemError, load_problem
from arcengine.engine.campaign import Campaign
from tests.conftest import SCALE
from tests.test_formats import KB_PROBLEM, arcengine

KERNELBENCH = Path(__file__).parent / "fixtures" / "kernelbench"

# Class labels beside the logits, as level 1's 95_CrossEntropyLoss: KernelBench's cast would make them floats.
CROSS_ENTROPY = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


def get_inputs():
    return [torch.rand(8, 10), torch.randint(0, 10, (8,))]


def get_init_inputs():
    return []
'''

# 0.2% off everywhere: within KernelBench's fp16 and bf16 tolerance (1e-2), far outside its fp32 one (1e-4).
SLIGHTLY_OFF = '''import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ((a.float() + b.float()) * 1.002).to(a.dtype)
'''


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("precision", "tolerance"), [("fp32", 1e-4), ("fp16", 1e-2), ("bf16", 1e-2)])
def test_each_precision_is_its_own_problem_with_kernelbench_s_tolerance(precision: str, tolerance: float) -> None:
    problem = load_problem(KERNELBENCH / "1_Add.py", precision)
    assert (problem.tolerance.atol, problem.tolerance.rtol, problem.tolerance.matched_ratio) == (tolerance,
                                                                                                  tolerance, 1.0)
    assert problem.workloads[0].dtype == PRECISIONS[precision]
    assert problem.name == ("1_add" if precision == "fp32" else f"1_add_{precision}")
    assert problem.baseline_routes == ("eager", "compile") and problem.baseline_routes_for("cpu") == ("eager",)


def test_fp32_is_the_default_and_every_precision_has_its_own_folder() -> None:
    folders = {p: load_problem(KERNELBENCH / "1_Add.py", p).directory for p in PRECISIONS}
    assert len(set(folders.values())) == 3
    assert load_problem(KERNELBENCH / "1_Add.py").directory == folders["fp32"]


def test_inputs_and_weights_are_cast_and_model_new_gets_model_s_weights(tmp_path: Path) -> None:
    (tmp_path / "19_Linear_ReLU.py").write_text(KB_PROBLEM)
    folder = load_problem(tmp_path / "19_Linear_ReLU.py", "bf16").directory
    reference = _module(folder / "reference.py", "kb_bf16_reference")
    seed = _module(folder / "seed.py", "kb_bf16_seed")
    generator = torch.Generator().manual_seed(7)
    (x,) = reference.make_inputs({"CASE": 1}, generator, torch.device("cpu"))
    assert x.dtype == torch.bfloat16
    out = reference.run(x)
    assert out.dtype == torch.bfloat16
    candidate = reference.candidate_run(seed, torch.device("cpu"))  # the seed is Model as ModelNew
    assert torch.equal(candidate(x), out)
    # The reference is KernelBench's: Model built after seed 42 in float32, then cast (weights rounded to bf16).
    torch.manual_seed(42)
    model = seed.Model(48, 40)
    assert torch.equal(reference._references[torch.device("cpu")].linear.weight, model.linear.weight.bfloat16())


def test_integer_inputs_keep_their_dtype(tmp_path: Path) -> None:
    (tmp_path / "95_CrossEntropyLoss.py").write_text(CROSS_ENTROPY)
    folder = load_problem(tmp_path / "95_CrossEntropyLoss.py", "fp16").directory
    reference = _module(folder / "reference.py", "kb_ce_reference")
    logits, labels = reference.make_inputs({"CASE": 1}, torch.Generator().manual_seed(3), torch.device("cpu"))
    assert logits.dtype == torch.float16 and labels.dtype == torch.int64
    assert reference.run(logits, labels).dtype == torch.float16


def test_a_precision_for_a_native_problem_is_an_error() -> None:
    with pytest.raises(ProblemError, match="for KernelBench problem files"):
        load_problem(SCALE, "bf16")


def test_a_campaign_loads_its_kernelbench_problem_in_the_configured_precision(campaign_config) -> None:
    campaign = Campaign(campaign_config(problem=str(KERNELBENCH / "1_Add.py"), precision="bf16"))
    assert campaign.problem.name == "1_add_bf16" and campaign.problem.tolerance.atol == 1e-2


def test_eval_judges_with_the_precision_s_tolerance(tmp_path: Path) -> None:
    """The same candidate, 0.2% off: a pass in bf16, a fail in fp32 (KernelBench's default)."""
    candidate = tmp_path / "model_new_off.py"
    candidate.write_text(SLIGHTLY_OFF)

    def judged(*precision: str) -> dict:
        done = arcengine("eval", str(KERNELBENCH / "1_Add.py"), str(candidate), "--device", "cpu", "--json",
                         *precision, env_cache=tmp_path / "cache")
        assert done.stdout, done.stderr[-2000:]
        return json.loads(done.stdout)

    bf16 = judged("--precision", "bf16")
    assert bf16["verdict"] == "pass", bf16["reason"]
    # On the CPU the routes are eager alone: the reference, by its name, with the gain over it.
    assert bf16["speedup_over_routes"] == pytest.approx({"eager": bf16["speedup"]})
    fp32 = judged()
    assert fp32["verdict"] == "fail" and "atol=0.0001 rtol=0.0001" in fp32["reason"]
