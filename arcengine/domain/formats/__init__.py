"""Problems in the formats the field already uses, read unchanged: each is turned into a native problem folder
(problem.toml, reference.py, seed.py) in arcengine's cache, keyed by the content's hash, and judged as one.

- KernelBench: a problem file with ``Model``, ``get_inputs`` and ``get_init_inputs``; candidates define
  ``ModelNew`` (built with the same weight seed as ``Model``, as KernelBench does).
- FlashInfer-Trace: a definition (``definitions/<op_type>/<name>.json`` in a FlashInfer-Bench dataset, or a
  ``definition.json`` with ``workload.jsonl`` beside it, as SOL-ExecBench lays it out) and its workloads; candidates
  define ``run`` taking the definition's inputs in order (or, as a destination-passing Solution, its inputs and
  then its outputs).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arcengine" / "imported"


def folder_for(name: str, contents: Iterable[bytes]) -> Path:
    digest = hashlib.sha256()
    for chunk in contents:
        digest.update(hashlib.sha256(chunk).digest())
    return cache_root() / f"{name}-{digest.hexdigest()[:10]}"


def toml_value(value: object) -> str:
    """A TOML literal for the simple values generated problem files use (JSON strings are valid TOML ones)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")


def write_folder(folder: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write the generated problem once (text files, and binary ones such as safetensors inputs, by relative path);
    a finished folder (problem.toml written last) is reused as it is."""
    if (folder / "problem.toml").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in sorted(files.items(), key=lambda item: item[0] == "problem.toml"):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, target)
    return folder
