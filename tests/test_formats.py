"""Problems in the field's formats, read unchanged: KernelBench files with ModelNew candidates and FlashInfer-Trace
definitions with their workloads, judged by the real guard on the CPU; exports load back."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from arcengine.domain.problem import load_problem

KB_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(16, 48)]


def get_init_inputs():
    return [48, 40]
'''

KB_CANDIDATE = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.addmm(self.linear.bias, x, self.linear.weight.t()).clamp_min(0)
'''

DEFINITION = {
    "name": "silu_h64", "op_type": "activation", "description": "SiLU times a scale over rows of 64",
    "axes": {"M": {"type": "var"}, "H": {"type": "const", "value": 64}},
    "inputs": {"x": {"shape": ["M", "H"], "dtype": "bfloat16"}, "scale": {"shape": None, "dtype": "float32"}},
    "outputs": {"y": {"shape": ["M", "H"], "dtype": "bfloat16"}},
    "reference": "import torch\n\n@torch.no_grad()\ndef run(x, scale):\n"
                 "    return (torch.nn.functional.silu(x.float()) * scale).to(torch.bfloat16)\n",
}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def arcengine(*args: str, env_cache: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(env_cache), "HOME": str(env_cache)}
    return subprocess.run([sys.executable, "-m", "arcengine.cli", *args], capture_output=True, text=True,
                          timeout=600, env=env)


def verdict(tmp_path: Path, problem: Path, candidate: Path) -> dict:
    completed = arcengine("eval", str(problem), str(candidate), "--device", "cpu", "--json",
                          env_cache=tmp_path / "cache")
    assert completed.stdout, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_kernelbench_file_with_modelnew_candidates(tmp_path: Path) -> None:
    problem = tmp_path / "19_Linear_ReLU.py"
    problem.write_text(KB_PROBLEM)
    good, wrong, native = tmp_path / "good.py", tmp_path / "wrong.py", tmp_path / "native.py"
    good.write_text(KB_CANDIDATE)
    wrong.write_text(KB_CANDIDATE.replace(".clamp_min(0)", ""))  # forgets the ReLU
    native.write_text("import torch\n\n\ndef run(x):\n    return x\n")
    loaded = load_problem(problem)
    assert loaded.entry == "ModelNew" and len(loaded.workloads) == 1
    assert loaded.baseline_routes == ("eager", "compile")  # KernelBench's two baselines; eager is the reference
    assert verdict(tmp_path, problem, good)["verdict"] == "pass"
    failed = verdict(tmp_path, problem, wrong)
    assert failed["verdict"] == "fail" and "within atol" in failed["reason"]
    rejected = verdict(tmp_path, problem, native)
    assert rejected["verdict"] == "reject" and "no module-level ModelNew" in rejected["reason"]


def test_flashinfer_trace_definition_with_workloads(tmp_path: Path) -> None:
    folder = tmp_path / "silu_h64"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(DEFINITION))
    lines = [{"definition": "silu_h64", "workload": {"uuid": f"w{m}", "axes": {"M": m}, "inputs": {
        "x": {"type": "random"}, "scale": {"type": "scalar", "value": 0.5}}}} for m in (7, 32, 100)]
    (folder / "workload.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    loaded = load_problem(folder)
    assert [w.axes for w in loaded.workloads] == [{"M": 7}, {"M": 32}, {"M": 100}]
    assert loaded.baseline_routes == ("compile",)
    assert loaded.bytes(loaded.workloads[0]) == 2 * 7 * 64 * 2  # x read, y written, bf16
    solution = tmp_path / "solution.py"
    solution.write_text("import torch\n\n\ndef run(x, scale):\n"
                        "    return (x.float() * torch.sigmoid(x.float()) * scale).to(torch.bfloat16)\n")
    assert verdict(tmp_path, folder, solution)["verdict"] == "pass"
    unscaled = tmp_path / "unscaled.py"
    unscaled.write_text("import torch\n\n\ndef run(x, scale):\n"
                        "    return torch.nn.functional.silu(x.float()).to(torch.bfloat16)\n")
    assert verdict(tmp_path, folder, unscaled)["verdict"] == "fail"
    checked = arcengine("problems", "check", str(folder / "definition.json"), "--device", "cpu",
                        env_cache=tmp_path / "cache")
    assert checked.returncode == 0 and "silu_h64: ok on cpu" in checked.stdout


def test_safetensors_inputs_are_refused_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "definition.json").write_text(json.dumps(DEFINITION))
    line = {"uuid": "w", "axes": {"M": 4}, "inputs": {"x": {"type": "safetensors", "path": "a", "tensor_key": "x"}}}
    (tmp_path / "workload.jsonl").write_text(json.dumps(line) + "\n")
    completed = arcengine("problems", "check", str(tmp_path), env_cache=tmp_path / "cache")
    assert completed.returncode == 2 and "safetensors inputs are not supported" in completed.stderr
    assert "Traceback" not in completed.stderr


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_kernelbench_candidate_exports_as_itself_and_runs_against_model(tmp_path: Path) -> None:
    """The generated folder's seed is the problem's Model as ModelNew; it matches Model like KernelBench checks."""
    problem = tmp_path / "19_Linear_ReLU.py"
    problem.write_text(KB_PROBLEM)
    folder = load_problem(problem).directory
    reference, seed = _module(folder / "kernelbench_problem.py"), _module(folder / "seed.py")
    torch.manual_seed(42)
    model = reference.Model(*reference.get_init_inputs())
    torch.manual_seed(42)
    candidate = seed.ModelNew(*reference.get_init_inputs())
    inputs = reference.get_inputs()
    torch.testing.assert_close(candidate(*inputs), model(*inputs))


KERNELBENCH = Path(__file__).parent / "fixtures" / "kernelbench"  # 1_Add.py and its load_inline ModelNew files


def test_a_kernelbench_load_inline_candidate_passes(tmp_path: Path) -> None:
    # C++ here, so it runs on the CPU; model_new_add_cuda.py, KernelBench's own example's shape, is judged on a GPU.
    judged = verdict(tmp_path, KERNELBENCH / "1_Add.py", KERNELBENCH / "model_new_add_cpp.py")
    assert judged["verdict"] == "pass", judged["reason"]
    assert any("compiles native code" in warning for warning in judged["warnings"])
