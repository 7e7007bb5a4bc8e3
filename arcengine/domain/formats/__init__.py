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

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

# Unpaired surrogates: a file name's undecodable bytes (os.fsdecode) or a JSON "\ud83d" escape. TOML has no way to
# write them (its \u escapes must be Unicode scalar values) and UTF-8 cannot encode them.
_SURROGATE = re.compile("[\ud800-\udfff]")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arcengine" / "imported"


def folder_for(name: str, contents: Iterable[bytes]) -> Path:
    digest = hashlib.sha256()
    for chunk in contents:
        digest.update(hashlib.sha256(chunk).digest())
    return cache_root() / f"{name}-{digest.hexdigest()[:10]}"


def writable(text: str) -> str:
    """``text`` with every unpaired surrogate replaced by U+FFFD, so it can be written as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def _writable(value: Any) -> Any:
    """``value`` with every unpaired surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, list | tuple):
        return [_writable(v) for v in value]
    if isinstance(value, dict):
        return {_writable(k): _writable(v) for k, v in value.items()}
    return value


def toml_text(document: dict[str, Any]) -> str:
    """A generated problem.toml, written by tomli-w (so tomllib reads back the same values: emoji and every other
    character included, unpaired surrogates as U+FFFD)."""
    return tomli_w.dumps(_writable(document))


def toml_value(value: object) -> str:
    """One value's TOML text, for a file written a line at a time (a dict is an inline table); tomli-w writes it."""
    if isinstance(value, dict):
        pairs = (f"{k if _BARE_KEY.fullmatch(k) else toml_value(k)} = {toml_value(v)}"
                 for k, v in _writable(value).items())
        return "{ " + ", ".join(pairs) + " }"
    if value is None or not isinstance(value, str | int | float | bool | list | tuple):
        raise TypeError(f"no TOML form for {value!r}")
    return tomli_w.dumps({"v": _writable(value)}).removeprefix("v = ").rstrip("\n")


def write_folder(folder: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write the generated problem once (text files, and binary ones such as safetensors inputs, by relative path);
    a finished folder (problem.toml written last) is reused as it is."""
    if (folder / "problem.toml").is_file():
        with contextlib.suppress(OSError):
            os.utime(folder)  # the folder's time is its last use: `arcengine clean --older-than` goes by it
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
