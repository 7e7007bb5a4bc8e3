"""FlashInfer-Trace definitions (``definition.json`` with its ``reference``) and their workloads, in either layout:

- a FlashInfer-Bench dataset (flashinfer-ai/flashinfer-trace): ``definitions/<op_type>/<name>.json``, its workloads in
  ``workloads/<op_type>/<name>.jsonl`` (any ``.jsonl`` under ``workloads/`` whose lines name the definition),
  safetensors inputs under ``blob/``, Solutions under ``solutions/``; a definition file named anywhere inside is
  imported with its workloads, paths in them read from the dataset's root;
- a folder of its own (SOL-ExecBench): ``definition.json`` with ``workload.jsonl`` beside it.

Followed: const and var axes, the schema's dtypes (``float4_e2m1`` as torch.float4_e2m1fn_x2, two values per byte,
so a shape counts bytes), input and output tensor specs, the reference's ``run`` taking the inputs in the
definition's order, workload lines as traces (``{"definition", "workload": {...}}``) or bare workloads,
``random``, ``scalar`` and ``safetensors`` inputs (each file checked against the definition's shape and dtype and
copied into the generated folder), random inputs drawn as FlashInfer-Bench draws them (flashinfer_reference.py),
and its tolerances: atol = rtol = 1e-2 and every element matched, but where its eval config says otherwise per
op type or per definition (its bundled one: MoE needs 95% of elements matched), or where the dataset's own
``eval_config.yaml`` or its workloads' ``tolerance`` (SOL-ExecBench) do. Not supported: ``constraints`` (not
enforced on random inputs) and ``sampling`` definitions, which FlashInfer-Bench judges statistically. All
workloads are visible; mark some ``held_out`` in the generated problem.toml to hold them out. The roofline floor
counts each input and output tensor moved once.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from arcengine.domain.formats import folder_for, toml_value, write_folder

# The schema's dtypes (flashinfer_bench.data.definition.DType) as torch names; float8_e4m3 is an older spelling.
TORCH_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3fn",
                "float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "float4_e2m1": "float4_e2m1fn_x2",
                "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8", "bool": "bool"}
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
               "float4_e2m1": 1, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "bool": 1}
# FlashInfer-Bench's eval config (flashinfer_bench/bench/config.py): defaults, then per op type, then per definition.
DEFAULT_EVAL = {"atol": 1e-2, "rtol": 1e-2, "required_matched_ratio": None}
BUNDLED_EVAL_CONFIG: dict[str, Any] = {"op_type_config": {"moe": {"required_matched_ratio": 0.95}}}  # eval_config.yaml
LOWBIT_MATCHED_RATIO = 0.95  # LowBitEvaluator's, for definitions named *moe_fp8_block_scale* that set none
STATISTICAL_OP_TYPES = ("sampling",)  # judged by FlashInfer-Bench over many trials, not element by element
REFERENCE_TEMPLATE = Path(__file__).with_name("flashinfer_reference.py")
INPUT_TYPES = ("random", "scalar", "safetensors")  # flashinfer_bench.data.workload.InputSpec
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"


class FlashInferFormatError(ValueError):
    pass


def definition_path(path: Path) -> Path | None:
    """The definition.json a path names (the file, or a folder holding one), if it looks like FlashInfer-Trace."""
    candidate = path / "definition.json" if path.is_dir() else path
    if candidate.suffix != ".json" or not candidate.is_file():
        return None
    try:
        data = json.loads(candidate.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return None
    keys = ("name", "axes", "inputs", "outputs", "reference")
    return candidate if isinstance(data, dict) and all(k in data for k in keys) else None


def dataset_root(definition_file: Path) -> Path | None:
    """The dataset folder a definition file lies in (the parent of its ``definitions`` folder), if any."""
    for parent in definition_file.resolve().parents:
        if parent.name == "definitions":
            return parent.parent
    return None


def materialize(definition_file: Path) -> Path:
    definition = json.loads(definition_file.read_text(encoding="utf-8"))
    _check_definition(definition)
    root = dataset_root(definition_file)
    workloads = [_bare(w) for w in _read_workloads(definition_file, definition, root)]
    if not workloads:
        raise FlashInferFormatError(f"{definition_file}: no workloads found (workload.jsonl beside it, or lines naming "
                                    f"{definition['name']!r} in a .jsonl under the dataset's workloads/)")
    blobs = _copy_blobs(definition, workloads, root or definition_file.parent)
    var_axes = [a for a, spec in definition["axes"].items() if spec.get("type") == "var"]
    name = re.sub(r"[^A-Za-z0-9_]+", "_", str(definition["name"])).strip("_") or "definition"
    files: dict[str, str | bytes] = {
        "definition.json": json.dumps(definition, indent=1),
        "workloads.jsonl": "".join(json.dumps(w) + "\n" for w in workloads),
        "definition_reference.py": str(definition["reference"]),
        "reference.py": REFERENCE_TEMPLATE.read_text(encoding="utf-8"),
        "seed.py": str(definition["reference"]),
        "problem.toml": _problem_toml(definition, name, workloads, var_axes, eval_tolerance(definition, root)),
        **blobs,
    }
    folder = folder_for(f"flashinfer-{name}", [s if isinstance(s, bytes) else s.encode() for s in files.values()])
    return write_folder(folder, files)


def _check_definition(definition: dict[str, Any]) -> None:
    op_type = str(definition.get("op_type") or "")
    if op_type in STATISTICAL_OP_TYPES:
        raise FlashInferFormatError(f"{definition['name']}: {op_type} definitions are judged by FlashInfer-Bench over "
                                    "many trials (total variation distance); arcengine compares outputs element by "
                                    "element and cannot judge them")
    for kind in ("inputs", "outputs"):
        for tensor, spec in definition[kind].items():
            dtype = spec.get("dtype")
            if dtype not in TORCH_DTYPES:
                raise FlashInferFormatError(f"{kind[:-1]} {tensor}: unknown dtype {dtype!r} (the schema's: "
                                            f"{', '.join(TORCH_DTYPES)})")
            if dtype == "float4_e2m1":
                _require_fp4()


def _require_fp4() -> None:
    import torch  # only for the float4 check: importing torch costs seconds

    if not hasattr(torch, "float4_e2m1fn_x2"):
        raise FlashInferFormatError(f"float4_e2m1 needs torch.float4_e2m1fn_x2 (torch 2.8 or later); torch "
                                    f"{torch.__version__} has none")


def _read_workloads(definition_file: Path, definition: dict[str, Any], root: Path | None) -> list[dict[str, Any]]:
    name = definition["name"]
    beside = [definition_file.with_name(n) for n in ("workload.jsonl", "workloads.jsonl")]
    for path in beside + _dataset_workload_files(root, name, str(definition.get("op_type") or "")):
        lines = _naming(path, name)
        if lines:
            return lines
    if root is not None:  # as FlashInfer-Bench reads a dataset: every workload file, grouped by definition
        for path in sorted((root / "workloads").rglob("*.jsonl")):
            lines = _naming(path, name, named=True)
            if lines:
                return lines
    return []


def _dataset_workload_files(root: Path | None, name: str, op_type: str) -> list[Path]:
    if root is None:
        return []
    workloads = root / "workloads"
    return [workloads / op_type / f"{name}.jsonl", workloads / f"{name}.jsonl",
            *sorted(workloads.rglob(f"{name}.jsonl"))]


def _naming(path: Path, name: str, named: bool = False) -> list[dict[str, Any]]:
    """The lines of a workload file that belong to definition ``name`` (bare workloads belong to any, unless
    ``named``: another definition's file)."""
    if not path.is_file():
        return []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if line.get("definition", None if named else name) == name]


def _bare(line: dict[str, Any]) -> dict[str, Any]:
    workload = line.get("workload", line)
    for tensor, given in workload.get("inputs", {}).items():
        if given.get("type") not in INPUT_TYPES:
            raise FlashInferFormatError(f"workload {workload.get('uuid')}: input {tensor} is of type "
                                        f"{given.get('type')!r} (the schema's: {', '.join(INPUT_TYPES)})")
    return {"uuid": workload.get("uuid"), "axes": workload.get("axes", {}), "inputs": dict(workload.get("inputs", {})),
            "tolerance": line.get("tolerance") or workload.get("tolerance") or {}}


def _copy_blobs(definition: dict[str, Any], workloads: list[dict[str, Any]], base: Path) -> dict[str, bytes]:
    """The safetensors files the workloads name, each checked and renamed by its content (``blobs/<hash>``), the
    workloads' inputs rewritten to point at the copies: the generated folder holds everything it needs."""
    blobs: dict[str, bytes] = {}
    for workload in workloads:
        for tensor, given in list(workload["inputs"].items()):
            if given.get("type") != "safetensors":
                continue
            path = Path(given["path"]) if Path(given["path"]).is_absolute() else base / given["path"]
            data = _read_blob(path, tensor, workload)
            copy = f"blobs/{hashlib.sha256(data).hexdigest()[:16]}.safetensors"
            if copy not in blobs:
                blobs[copy] = data
            _check_blob(data, path, definition, workload, tensor, str(given.get("tensor_key")))
            workload["inputs"][tensor] = {**given, "path": copy}
    return blobs


def _read_blob(path: Path, tensor: str, workload: dict[str, Any]) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise FlashInferFormatError(f"workload {workload['uuid']}: input {tensor}: cannot read {path}: "
                                    f"{error.strerror or error}") from None
    if data.startswith(LFS_POINTER):
        raise FlashInferFormatError(f"{path} is a Git LFS pointer, not the file: fetch it first "
                                    f"(git lfs pull --include {path.name!r} in the dataset)")
    return data


def _check_blob(data: bytes, path: Path, definition: dict[str, Any], workload: dict[str, Any], tensor: str,
                key: str) -> None:
    """As FlashInfer-Bench's load_safetensors: the key present, the definition's shape and dtype."""
    import safetensors.torch  # torch with it: only for datasets whose workloads name safetensors files
    import torch

    if tensor not in definition["inputs"]:
        raise FlashInferFormatError(f"workload {workload['uuid']}: {tensor} is no input of {definition['name']}")
    try:
        tensors = safetensors.torch.load(data)
    except Exception as error:  # the format's own errors are varied (SafetensorError, KeyError for unknown dtypes)
        raise FlashInferFormatError(f"{path}: safetensors cannot load it into torch: {type(error).__name__}: "
                                    f"{error}") from None
    if key not in tensors:
        raise FlashInferFormatError(f"{path}: no tensor {key!r} (it holds {', '.join(sorted(tensors)) or 'none'})")
    spec, sizes = definition["inputs"][tensor], _sizes(definition, workload)
    want = [sizes.get(axis) for axis in spec.get("shape") or []]
    got = tensors[key]
    if list(got.shape) != want:
        raise FlashInferFormatError(f"{path}: {key} has shape {list(got.shape)}, input {tensor} needs {want}")
    if got.dtype != getattr(torch, TORCH_DTYPES[spec["dtype"]]):
        raise FlashInferFormatError(f"{path}: {key} is {got.dtype}, input {tensor} needs {spec['dtype']}")


def _sizes(definition: dict[str, Any], workload: dict[str, Any]) -> dict[str, int]:
    consts = {a: s["value"] for a, s in definition["axes"].items() if s.get("type") == "const"}
    return {**consts, **workload["axes"]}


# ---------------------------------------------------------------- tolerances


def eval_tolerance(definition: dict[str, Any], root: Path | None) -> dict[str, float]:
    """atol, rtol and the matched ratio FlashInfer-Bench would judge this definition with: its defaults, then its
    eval config's layer for the op type, then the one for the definition. The config is the dataset's own
    ``eval_config.yaml`` where it has one (as ``flashinfer-bench run --config`` replaces the bundled config), else
    the one flashinfer-bench ships."""
    config = _dataset_eval_config(root)
    resolved = dict(DEFAULT_EVAL)
    for table, key in (("op_type_config", definition.get("op_type")), ("definition_config", definition["name"])):
        layer = (config.get(table) or {}).get(key) or {}
        resolved |= {k: float(layer[k]) for k in DEFAULT_EVAL if layer.get(k) is not None}
    resolved |= {k: float(config[k]) for k in DEFAULT_EVAL if config.get(k) is not None}  # top level wins, as there
    ratio = resolved["required_matched_ratio"]
    if ratio is None and "moe_fp8_block_scale" in str(definition["name"]):
        ratio = LOWBIT_MATCHED_RATIO
    return {"atol": float(resolved["atol"]), "rtol": float(resolved["rtol"]),  # type: ignore[arg-type]
            "matched_ratio": 1.0 if ratio is None else float(ratio)}


def _dataset_eval_config(root: Path | None) -> dict[str, Any]:
    path = root / "eval_config.yaml" if root is not None else None
    if path is None or not path.is_file():
        return BUNDLED_EVAL_CONFIG
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise FlashInferFormatError(f"{path}: {error}") from None
    if not isinstance(config, dict):
        raise FlashInferFormatError(f"{path}: an eval config is a mapping (op_type_config, definition_config, ...)")
    return config


# ---------------------------------------------------------------- problem.toml


def _problem_toml(definition: dict[str, Any], name: str, workloads: list[dict[str, Any]], var_axes: list[str],
                  tolerance: dict[str, float]) -> str:
    # SOL-ExecBench's workloads carry their own tolerance: the loosest of theirs wins over the eval config's.
    atol = max([tolerance["atol"], *[w["tolerance"]["max_atol"] for w in workloads if "max_atol" in w["tolerance"]]])
    rtol = max([tolerance["rtol"], *[w["tolerance"]["max_rtol"] for w in workloads if "max_rtol" in w["tolerance"]]])
    distinct = len({json.dumps(w["axes"], sort_keys=True) for w in workloads}) == len(workloads)
    header = {
        "name": name,
        "kernel_type": str(definition.get("op_type") or definition.get("type") or "flashinfer"),
        "category": "FI",
        "description": str(definition.get("description") or f"FlashInfer-Trace definition {definition['name']}"),
        "dtype": next(iter(definition["outputs"].values()))["dtype"],
        "distributions": ["normal"],
    }
    lines = [f"{key} = {toml_value(value)}" for key, value in header.items()]
    # The baseline a user of the definition would otherwise run: its reference under torch.compile.
    lines += ["", "[baseline]", 'routes = ["compile"]', "",
              "[tolerance]", f"atol = {atol!r}", f"rtol = {rtol!r}", f"matched_ratio = {tolerance['matched_ratio']!r}",
              "", "[sol]", 'flops = "0"', f"bytes = {toml_value(_bytes_expression(definition))}", ""]
    for table in ("workloads", "cpu_workloads"):
        for index, workload in enumerate(workloads, start=1):
            axes = {a: int(workload["axes"][a]) for a in var_axes} if distinct and var_axes else {"WORKLOAD": index}
            lines += [f"[[{table}]]", f"axes = {toml_value(axes)}", ""]
    return "\n".join(lines)


def _bytes_expression(definition: dict[str, Any]) -> str:
    """Each input and output tensor moved once, over the var axes (const axes folded in)."""
    consts = {a: s["value"] for a, s in definition["axes"].items() if s.get("type") == "const"}
    terms = []
    for spec in [*definition["inputs"].values(), *definition["outputs"].values()]:
        if not spec.get("shape"):
            continue
        size = DTYPE_BYTES.get(spec["dtype"], 4) * math.prod(consts.get(a, 1) for a in spec["shape"])
        variables = [a for a in spec["shape"] if a not in consts]
        terms.append(" * ".join([repr(size), *variables]))
    return " + ".join(terms) or "0"
