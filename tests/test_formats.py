"""Problems in the field's formats, read unchanged: KernelBench files with ModelNew candidates and FlashInfer-Trace
definitions with their workloads, judged by the real guard on the CPU; exports load back."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from arcengine.domain.formats import flashinfer
from arcengine.domain.formats.solution import SolutionError
from arcengine.domain.problem import ProblemError, load_problem
from arcengine.guard.child import correctness
from arcengine.tools.evaluate import solution_candidate
from arcengine.tools.export import export_run

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


@pytest.mark.heavy
def test_a_kernelbench_load_inline_candidate_passes(tmp_path: Path) -> None:
    # C++ here, so it runs on the CPU; model_new_add_cuda.py, KernelBench's own example's shape, is judged on a GPU.
    judged = verdict(tmp_path, KERNELBENCH / "1_Add.py", KERNELBENCH / "model_new_add_cpp.py")
    assert judged["verdict"] == "pass", judged["reason"]
    assert any("compiles native code" in warning for warning in judged["warnings"])


# ---------------------------------------------------------------- FlashInfer-Bench datasets and Solutions

GATHER = {
    "name": "gather_rows_h64", "op_type": "paged", "description": "rows of a table by index, scaled",
    "axes": {"N": {"type": "var"}, "M": {"type": "var"}, "H": {"type": "const", "value": 64}},
    "inputs": {"table": {"shape": ["N", "H"], "dtype": "bfloat16"}, "indices": {"shape": ["M"], "dtype": "int32"},
               "scale": {"shape": None, "dtype": "float32"}},
    "outputs": {"out": {"shape": ["M", "H"], "dtype": "bfloat16"}},
    "reference": "import torch\n\n@torch.no_grad()\ndef run(table, indices, scale):\n"
                 "    return (table[indices.long()].float() * scale).to(torch.bfloat16)\n",
}
GATHER_DPS = ("import torch\n\n\ndef gather(table, indices, scale, out):\n"
              "    torch.index_select(table, 0, indices, out=out)\n    out.mul_(scale)\n")
GATHER_RETURNING = ("import torch\n\n\ndef run(table, indices, scale):\n"
                    "    return (table.index_select(0, indices).float() * scale).to(torch.bfloat16)\n")


def dataset(root: Path, definition: dict[str, Any] = GATHER, sizes: tuple[tuple[int, int], ...] = ((50, 7), (300, 33)),
            ) -> tuple[Path, list[torch.Tensor]]:
    """A FlashInfer-Bench dataset as flashinfer-trace lays it out: the definition under definitions/<op_type>/, its
    workload traces under workloads/<op_type>/ (with another definition's line among them), the index tensors as
    safetensors files under blob/, referenced by paths from the dataset's root."""
    from safetensors.torch import save_file

    op, name = definition["op_type"], definition["name"]
    for folder in (f"definitions/{op}", f"workloads/{op}", f"blob/workloads/{op}/{name}"):
        (root / folder).mkdir(parents=True)
    (root / "definitions" / op / f"{name}.json").write_text(json.dumps(definition))
    lines, saved = [], []
    for i, (n, m) in enumerate(sizes):
        indices = torch.randint(0, n, (m,), dtype=torch.int32, generator=torch.Generator().manual_seed(i))
        path = f"./blob/workloads/{op}/{name}/{name}_w{i}.safetensors"
        save_file({"indices": indices}, root / path)
        saved.append(indices)
        inputs = {"table": {"type": "random"}, "scale": {"type": "random"},
                  "indices": {"type": "safetensors", "path": path, "tensor_key": "indices"}}
        lines.append({"definition": name, "solution": None, "evaluation": None,
                      "workload": {"uuid": f"w{i}", "axes": {"N": n, "M": m}, "inputs": inputs}})
    lines.append({"definition": "another", "workload": {"uuid": "x", "axes": {"N": 1}, "inputs": {}}})
    (root / "workloads" / op / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root / "definitions" / op / f"{name}.json", saved


def solution_json(path: Path, source: str, entry: str = "main.py::gather", **spec: object) -> Path:
    document = {"name": path.stem, "definition": "gather_rows_h64", "author": "tests",
                "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": entry, **spec},
                "sources": [{"path": "main.py", "content": source}]}
    path.write_text(json.dumps(document))
    return path


def test_a_definition_inside_a_dataset_finds_its_workloads_and_safetensors_inputs(tmp_path: Path) -> None:
    definition, saved = dataset(tmp_path / "trace")
    problem = load_problem(definition)
    assert [w.axes for w in problem.workloads] == [{"N": 50, "M": 7}, {"N": 300, "M": 33}]  # not another's line
    assert problem.tolerance.matched_ratio == 1.0 and problem.destination_passing is False
    assert len(list((problem.directory / "blobs").glob("*.safetensors"))) == 2  # copied: the folder stands alone
    reference = _module(problem.directory / "reference.py")
    generator = torch.Generator().manual_seed(3)
    table, indices, scale = reference.make_inputs({"N": 300, "M": 33}, generator, "cpu")
    assert torch.equal(indices, saved[1]) and table.shape == (300, 64) and table.dtype == torch.bfloat16
    assert isinstance(scale, float)  # a random scalar input is a Python number, as FlashInfer-Bench makes it
    indices.fill_(0)  # a call that writes its inputs cannot change the next call's
    assert torch.equal(reference.make_inputs({"N": 300, "M": 33}, generator, "cpu")[1], saved[1])


def test_a_solution_json_is_judged_by_its_entry_point_and_called_as_it_declares(tmp_path: Path) -> None:
    definition, _ = dataset(tmp_path / "trace")
    # No destination_passing_style: the schema's default, run(*inputs, *outputs); entry point gather, not run.
    judged = verdict(tmp_path, definition, solution_json(tmp_path / "dps.json", GATHER_DPS))
    assert judged["verdict"] == "pass", judged["reason"]
    # The usual mistake: value-returning code without "destination_passing_style": false.
    returning = solution_json(tmp_path / "returning.json", GATHER_RETURNING, entry="main.py::run")
    judged = verdict(tmp_path, definition, returning)
    assert judged["verdict"] == "fail" and "run() takes 3 positional arguments but 4 were given" in judged["reason"]
    assert "called destination-passing: its 3 inputs, then 1 output tensor(s)" in judged["reason"]


def test_an_exported_solution_passes_eval_there(tmp_path: Path) -> None:
    """The round trip: a run on a dataset's definition exported as a Solution, judged again from that JSON."""
    from tests.test_export import _events, _write_log

    definition, _ = dataset(tmp_path / "trace")
    problem = load_problem(definition)
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    (run / "best.py").write_text(GATHER_RETURNING)
    _write_log(run / "events.jsonl", _events(problem.directory))
    exported = export_run(run, "flashinfer", tmp_path / "solution.json")
    document = json.loads(exported.read_text())
    assert document["definition"] == "gather_rows_h64" and document["spec"]["destination_passing_style"] is False
    judged = verdict(tmp_path, definition, exported)
    assert judged["verdict"] == "pass", judged["reason"]


def test_solutions_arcengine_cannot_judge_are_refused_with_the_reason(tmp_path: Path) -> None:
    definition, _ = dataset(tmp_path / "trace")
    problem = load_problem(definition)

    def refusal(document: dict[str, Any]) -> str:
        path = tmp_path / "refused.json"
        path.write_text(json.dumps(document))
        with pytest.raises(SolutionError) as refused, solution_candidate(problem, path):
            pass
        return str(refused.value)

    document = json.loads(solution_json(tmp_path / "dps.json", GATHER_DPS).read_text())
    cuda = {**document, "spec": {**document["spec"], "language": "cuda", "entry_point": "main.cu::gather"},
            "sources": [{"path": "main.cu", "content": "int x;"}]}
    assert "is cuda; arcengine judges Python and Triton Solutions" in refusal(cuda)
    two = {**document, "sources": [*document["sources"], {"path": "helpers.py", "content": "X = 1\n"}]}
    assert "other Python sources (helpers.py); arcengine's guard judges one module" in refusal(two)
    assert "Entry source file 'kernel.py' not found in sources" in refusal(
        {**document, "spec": {**document["spec"], "entry_point": "kernel.py::gather"}})
    (tmp_path / "other.json").write_text(json.dumps({**document, "definition": "gemm_n128"}))
    completed = arcengine("eval", str(definition), str(tmp_path / "other.json"), env_cache=tmp_path / "cache")
    assert completed.returncode == 2 and "is for definition 'gemm_n128', not 'gather_rows_h64'" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_eval_config_tolerances_are_flashinfer_bench_s(tmp_path: Path) -> None:
    plain = {"name": "gemm_n128", "op_type": "gemm"}
    assert flashinfer.eval_tolerance(plain, None) == {"atol": 1e-2, "rtol": 1e-2, "matched_ratio": 1.0}
    # Its bundled eval_config.yaml: MoE needs 95% of elements matched; LowBitEvaluator's definitions too.
    assert flashinfer.eval_tolerance({"name": "moe_x", "op_type": "moe"}, None)["matched_ratio"] == 0.95
    assert flashinfer.eval_tolerance({"name": "moe_fp8_block_scale_ds", "op_type": "q"}, None)["matched_ratio"] == 0.95
    root = tmp_path / "trace"
    root.mkdir()
    (root / "eval_config.yaml").write_text("op_type_config:\n  gemm:\n    atol: 0.05\n    required_matched_ratio: 0.9\n"
                                           "definition_config:\n  gemm_n128:\n    rtol: 0.001\n")
    assert flashinfer.eval_tolerance(plain, root) == {"atol": 0.05, "rtol": 0.001, "matched_ratio": 0.9}
    # Through an import: the generated problem.toml says what the guard will use.
    moe = {**GATHER, "name": "moe_gather", "op_type": "moe"}
    definition, _ = dataset(tmp_path / "moe", moe, sizes=((20, 5),))
    assert load_problem(definition).tolerance.matched_ratio == 0.95


def test_random_inputs_are_drawn_as_flashinfer_bench_draws_them(tmp_path: Path) -> None:
    names = ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1", "int64", "int32",
             "int16", "int8", "bool"]
    inputs = {f"x_{dtype}": {"shape": ["M", "H"], "dtype": dtype} for dtype in names}
    inputs |= {"alpha": {"shape": None, "dtype": "float32"}, "k": {"shape": None, "dtype": "int32"}}
    axes = {"M": {"type": "var"}, "H": {"type": "const", "value": 64}}
    every = {"name": "every_dtype", "op_type": "test", "axes": axes, "inputs": inputs,
             "outputs": {"y": {"shape": ["M", "H"], "dtype": "float32"}},
             "reference": "import torch\n\ndef run(*inputs):\n    return inputs[0]\n"}
    folder = tmp_path / "every"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(every))
    (folder / "workload.jsonl").write_text(json.dumps({"uuid": "w", "axes": {"M": 512}, "inputs": {}}) + "\n")
    reference = _module(load_problem(folder).directory / "reference.py")
    made = dict(zip(inputs, reference.make_inputs({"M": 512}, torch.Generator().manual_seed(0), "cpu"), strict=True))
    for dtype in names:  # the generated reference and the importer agree on the schema's dtypes
        assert made[f"x_{dtype}"].dtype == reference.torch_dtype(dtype)
        assert reference.torch_dtype(dtype) == getattr(torch, flashinfer.TORCH_DTYPES[dtype])
        assert made[f"x_{dtype}"].shape == (512, 64)
    assert 0.9 < made["x_float32"].std() < 1.1 and made["x_bfloat16"].abs().max() > 3  # standard normal, unclamped
    for dtype in ("float8_e4m3fn", "float8_e5m2"):  # clamped to [-2, 2] before the cast
        values = made[f"x_{dtype}"].float()
        assert values.abs().max() == 2.0 and values.min() == -2.0
    fp4 = correctness.unpack_fp4(made["x_float4_e2m1"])
    assert set(fp4.unique().tolist()) == {-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0}
    assert made["x_int8"].min() == -128 and made["x_int8"].max() == 127
    for dtype in ("int16", "int32", "int64"):
        values = made[f"x_{dtype}"]
        assert values.min() == -1024 and values.max() == 1023  # not [0, 64): negative and wide, as there
    assert set(made["x_bool"].unique().tolist()) == {False, True}
    assert isinstance(made["alpha"], float) and isinstance(made["k"], int) and -1024 <= made["k"] < 1024


def test_float4_outputs_are_compared_as_their_values() -> None:
    codes = torch.randint(0, 256, (64, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    packed = codes.view(torch.float4_e2m1fn_x2)
    tolerance = correctness.Tolerance(1e-2, 1e-2, 1.0)
    assert correctness.compare_tensor(packed.clone(), packed, tolerance).failure is None
    flipped = codes.clone()
    flipped[3, 5] ^= 0x02  # one value of one byte: 0.5 becomes 1.5, say
    failure = correctness.compare_tensor(flipped.view(torch.float4_e2m1fn_x2), packed, tolerance).failure
    assert failure is not None and "of elements within" in failure
    large = torch.randint(0, 256, (2048, 64), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    sampled = correctness.sample_output(large, 7)  # as an audit draws positions (not all of them)
    assert isinstance(sampled, correctness.Sample) and sampled.values.numel() < large.numel()
    assert correctness.compare_samples(sampled, large, 7, tolerance).failure is None


def _refusal(tmp_path: Path, definition: dict[str, Any], line: dict[str, Any] | None = None) -> str:
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(definition))
    line = line or {"uuid": "w", "axes": {"M": 4, "N": 8}, "inputs": {}}
    (folder / "workload.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(ProblemError) as refused:
        load_problem(folder)
    return str(refused.value)


def test_definitions_and_workloads_the_guard_cannot_follow_are_refused_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from safetensors.torch import save_file

    float64 = {**GATHER, "outputs": {"out": {"shape": ["M", "H"], "dtype": "float64"}}}
    assert "output out: unknown dtype 'float64' (the schema's: float32" in _refusal(tmp_path, float64)
    assert "judged by FlashInfer-Bench over many trials" in _refusal(tmp_path, {**GATHER, "op_type": "sampling"})
    odd = {"uuid": "w", "axes": {"M": 4, "N": 8}, "inputs": {"table": {"type": "zeros"}}}
    refused = _refusal(tmp_path, GATHER, odd)
    assert "input table is of type 'zeros' (the schema's: random, scalar, safetensors)" in refused

    def blob(name: str, **tensors: torch.Tensor) -> dict[str, Any]:
        save_file(tensors, tmp_path / name)
        given = {"type": "safetensors", "path": str(tmp_path / name), "tensor_key": "indices"}
        return {"uuid": "w", "axes": {"M": 4, "N": 8}, "inputs": {"indices": given}}

    wrong_shape = blob("shape.safetensors", indices=torch.zeros(5, dtype=torch.int32))
    assert "indices has shape [5], input indices needs [4]" in _refusal(tmp_path, GATHER, wrong_shape)
    wrong_dtype = blob("dtype.safetensors", indices=torch.zeros(4, dtype=torch.int64))
    assert "indices is torch.int64, input indices needs int32" in _refusal(tmp_path, GATHER, wrong_dtype)
    other_key = blob("key.safetensors", idx=torch.zeros(4))
    assert "no tensor 'indices' (it holds idx)" in _refusal(tmp_path, GATHER, other_key)
    pointer = blob("lfs.safetensors", indices=torch.zeros(4, dtype=torch.int32))
    (tmp_path / "lfs.safetensors").write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:00\n")
    assert "is a Git LFS pointer, not the file" in _refusal(tmp_path, GATHER, pointer)
    monkeypatch.delattr(torch, "float4_e2m1fn_x2")
    fp4 = {**GATHER, "inputs": {**GATHER["inputs"], "table": {"shape": ["N", "H"], "dtype": "float4_e2m1"}}}
    assert "float4_e2m1 needs torch.float4_e2m1fn_x2 (torch 2.8 or later)" in _refusal(tmp_path, fp4)


def test_kernelbench_inputs_are_drawn_on_the_device(tmp_path: Path) -> None:
    """get_inputs() runs under the device's context: its factory calls make the tensors there, never a CPU copy
    first (seconds a call for a large input, and the guard draws fresh inputs for every timed call)."""
    problem = tmp_path / "19_Linear_ReLU.py"
    problem.write_text(KB_PROBLEM.replace("return [torch.randn(16, 48)]",
                                          "return [torch.randn(16, 48), torch.empty(0).device.type]"))
    reference = _module(load_problem(problem).directory / "reference.py")
    x, drawn_on = reference.make_inputs({"CASE": 1}, torch.Generator().manual_seed(3), torch.device("meta"))
    assert drawn_on == "meta" and x.device.type == "meta"
    again = reference.make_inputs({"CASE": 1}, torch.Generator().manual_seed(3), torch.device("cpu"))[0]
    assert torch.equal(again, reference.make_inputs({"CASE": 1}, torch.Generator().manual_seed(3), "cpu")[0])


def test_a_kernelbench_model_calling_an_op_that_refuses_values_outside_zero_one_gets_needles_in_range() -> None:
    """On a GPU such an op refuses with a device-side assert, which leaves the judge's process unusable."""
    fixtures = Path(__file__).parent / "fixtures" / "kernelbench"
    assert load_problem(fixtures / "binary_cross_entropy.py").distributions[-1] == "needles_in_range"
    assert load_problem(fixtures / "95_CrossEntropyLoss_8192.py").distributions[-1] == "needles"


def test_kernelbench_problems_are_also_checked_on_their_draw_reshaped(tmp_path: Path) -> None:
    """The reshaped draw changes the values' distribution, so an answer made from the draw's known statistics fails
    (red team round 18), and keeps what an op or an honest kernel may rely on (round 18's honest hunt): zeros,
    signs, +-1, symmetry, ranges such as [0, 1), probability rows, and integer tensors as they are."""
    problem = tmp_path / "structured.py"
    problem.write_text(KB_PROBLEM.replace(
        "return [torch.randn(16, 48)]",
        "a = torch.randn(32, 32)\n    return [a + a.T, torch.triu(a), torch.rand(4096), "
        "torch.randint(0, 2, (64,)) * 2 - 1, torch.randint(0, 2, (64,)).float() * 2 - 1, "
        "torch.rand(8, 100).softmax(dim=-1)]"))
    loaded = load_problem(problem)
    assert loaded.distributions == ("normal", "reshaped", "needles")
    reference = _module(loaded.directory / "reference.py")
    normal = reference.make_inputs({"CASE": 1}, torch.Generator().manual_seed(3), "cpu")
    shaped = reference.make_inputs({"CASE": 1}, torch.Generator().manual_seed(3), "cpu", distribution="reshaped")
    symmetric, triangle, unit, labels, signs, rows = shaped
    assert torch.equal(symmetric, symmetric.T) and not torch.allclose(symmetric, normal[0])
    assert torch.equal(triangle.sign(), normal[1].sign())  # zeros (the lower triangle) and signs stay
    assert unit.min() >= 0 and unit.max() < 1 and abs(unit.mean().item() - normal[2].mean().item()) > 0.02
    assert torch.equal(labels, normal[3])  # integers untouched
    assert torch.equal(signs, normal[4])  # +-1 stays +-1
    assert torch.allclose(rows.sum(-1), torch.ones(8)) and not torch.allclose(rows, normal[5])


def test_a_kernelbench_draw_leaves_no_trace_of_its_seed_in_torchs_generators(tmp_path: Path) -> None:
    """Red team round 19: torch.initial_seed() was the call's seed after its inputs were drawn, so a module could
    draw them again and tell KernelBench's own draw from the reshaped one, for free."""
    problem = tmp_path / "leak.py"
    problem.write_text(KB_PROBLEM)
    reference = _module(load_problem(problem).directory / "reference.py")
    (drawn,) = reference.make_inputs({"CASE": 1}, torch.Generator().manual_seed(3), "cpu")
    assert torch.initial_seed() != 3
    again = torch.Generator().manual_seed(torch.initial_seed())
    assert not torch.equal(torch.randn(drawn.shape, generator=again), drawn)
    assert torch.equal(torch.randn(drawn.shape, generator=torch.Generator().manual_seed(3)), drawn)  # the draw itself
