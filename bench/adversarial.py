"""Run the adversarial catalogue (tests/adversarial/catalogue.toml) through `arcengine eval --json` and record, per
entry, the verdict the guard should give against the one it gave.

    python bench/adversarial.py OUT.json [--device cuda|cpu] [--only NAME ...] [--include-unsafe]
                                         [--hang-timeout S] [--entry-timeout S] [--jobs N]
                                         [--order-from EARLIER.json]

Every entry runs in its own `arcengine eval` process with API-key canaries in its environment; a verdict that quotes a
canary counts as a leak (not caught, whatever the verdict). One entry failing, hanging or crashing never stops the
run: each has a wall-clock limit, and OUT.json is rewritten after every entry, so a run cut short still leaves its
figures. On `--device cuda` every entry runs, the GPU-only ones included; on cpu the GPU-only ones are skipped.
Entries marked `skip` run only with --include-unsafe. With --jobs N, N entries are judged at once (on one GPU they
share it); an entry not caught then is judged again alone. With --order-from, the entries that took longest in
that earlier run start first, so the slowest (the hangs) do not start last and set the run's length.

The test suite (tests/adversarial/test_catalogue.py) imports this file for the same loading, running and judging.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import secrets
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # imported by the tests too: find provenance.py
from provenance import ROOT, commit

ADVERSARIAL = ROOT / "tests" / "adversarial"
CATALOGUE = ADVERSARIAL / "catalogue.toml"
VERDICTS = ("reject", "fail", "pass")

GUARD_DEFAULT_TIMEOUT_S = 600.0  # what `arcengine eval` uses without --timeout
OUTER_MARGIN_S = 240.0  # device profiling (up to 180 s) and process start, beyond the guard's own limit
CANARY_NAMES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ARCENGINE_CANARY_TOKEN")


class CatalogueError(ValueError):
    """The catalogue file is malformed; the message names the entry and the field."""


@dataclass(frozen=True)
class Entry:
    name: str  # "<problem folder>/<file stem>"
    path: Path
    problem: str  # a shipped problem's name, or a folder relative to the repository root
    verdicts: tuple[str, ...]  # any of these is the expected verdict
    reasons: tuple[str, ...]  # the reason must contain one of these
    cpu: bool  # False: GPU only
    description: str
    source: str
    timeout_s: float | None = None  # the guard's wall-clock limit for this entry (entries that hang)
    skip: str | None = None  # why it does not run by default
    ci: bool = True  # False: left out of the CPU test run (its time budget); the bench still runs it
    child_memory_gib: float | None = None  # the guard's host-memory limit for this entry (memory bombs)
    max_speedup: float | None = None  # a pass must not be faster than this over the reference (honest-speed cheats)

    @property
    def problem_argument(self) -> str:
        folder = ROOT / self.problem
        return str(folder) if folder.is_dir() else self.problem


def _strings(raw: object, where: str) -> tuple[str, ...]:
    values = (raw,) if isinstance(raw, str) else tuple(raw) if isinstance(raw, list) else ()
    if not values or not all(isinstance(v, str) and v for v in values):
        raise CatalogueError(f"{where}: expected a non-empty string or list of strings, got {raw!r}")
    return values


def _entry(raw: Mapping[str, Any], index: int) -> Entry:
    where = f"{CATALOGUE.name} entry {index} ({raw.get('path', '?')})"
    try:
        path = ADVERSARIAL / str(raw["path"])
        verdicts = _strings(raw["verdict"], f"{where}: verdict")
        if not set(verdicts) <= set(VERDICTS):
            raise CatalogueError(f"{where}: verdict must be among {VERDICTS}, got {verdicts}")
        timeout = raw.get("timeout_s")
        return Entry(
            name=str(Path(raw["path"]).with_suffix("")),
            path=path,
            problem=str(raw["problem"]),
            verdicts=verdicts,
            reasons=_strings(raw["reason"], f"{where}: reason"),
            cpu=bool(raw["cpu"]),
            description=str(raw["description"]),
            source=str(raw["source"]),
            timeout_s=float(timeout) if timeout is not None else None,
            skip=str(raw["skip"]) if raw.get("skip") else None,
            ci=bool(raw.get("ci", True)),
            child_memory_gib=float(raw["child_memory_gib"]) if "child_memory_gib" in raw else None,
            max_speedup=float(raw["max_speedup"]) if "max_speedup" in raw else None,
        )
    except KeyError as error:
        raise CatalogueError(f"{where}: missing {error.args[0]!r}") from None


def load_catalogue(path: Path = CATALOGUE) -> list[Entry]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [_entry(raw, i) for i, raw in enumerate(data.get("entry", []))]


# ---------------------------------------------------------------- running one entry


def eval_command(entry: Entry, device: str, timeout_s: float | None = None, python: str = sys.executable) -> list[str]:
    """The command line that judges `entry`: `arcengine eval ... --json`, with its limits if it has any."""
    # The baseline is the problem's own code: the catalogue judges the candidate's conduct, not the baseline's.
    args = ["eval", entry.problem_argument, str(entry.path), "--device", device, "--json", "--no-baseline"]
    if timeout_s is not None:
        args += ["--timeout", f"{timeout_s:g}"]
    if entry.child_memory_gib is not None:
        args += ["--child-memory", f"{entry.child_memory_gib:g}"]
    return [python, "-m", "arcengine.cli", *args]


def canary_environment(base: Mapping[str, str] | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment for `arcengine eval` with API-key canaries added, and the canary values."""
    env = dict(os.environ if base is None else base)
    canaries = tuple(f"sk-canary-{secrets.token_hex(12)}" for _ in CANARY_NAMES)
    env.update(zip(CANARY_NAMES, canaries, strict=True))
    return env, canaries


@dataclass
class Outcome:
    verdict: str  # reject | fail | pass | error (no verdict document)
    reason: str
    returncode: int | None
    seconds: float
    document: dict[str, Any] | None = None
    stdout: str = ""
    stderr: str = ""
    leaked: list[str] = field(default_factory=list)  # where a canary showed up

    @property
    def speedup(self) -> float | None:
        return (self.document or {}).get("speedup")


def run_entry(entry: Entry, device: str, env: Mapping[str, str], canaries: Sequence[str] = (),
              timeout_s: float | None = None, outer_timeout_s: float | None = None) -> Outcome:
    """Judge one entry in a fresh `arcengine eval` process. Never raises: a crash or hang is an 'error' outcome."""
    guard_timeout = timeout_s if timeout_s is not None else entry.timeout_s
    command = eval_command(entry, device, guard_timeout)
    limit = outer_timeout_s or (guard_timeout or GUARD_DEFAULT_TIMEOUT_S) + OUTER_MARGIN_S
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=dict(env), timeout=limit,
                              check=False)
    except subprocess.TimeoutExpired as expired:
        return Outcome("error", f"arcengine eval did not finish within {limit:.0f} s", None,
                       time.monotonic() - started, stdout=_text(expired.stdout), stderr=_text(expired.stderr))
    except OSError as error:
        return Outcome("error", f"could not start arcengine eval: {error}", None, time.monotonic() - started)
    seconds = time.monotonic() - started
    leaked = [where for where, text in (("stdout", done.stdout), ("stderr", done.stderr))
              if any(canary in text for canary in canaries)]
    try:
        document = json.loads(done.stdout)
        verdict, reason = str(document["verdict"]), str(document["reason"])
    except (ValueError, KeyError, TypeError):
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return Outcome("error", f"no verdict document (exit {done.returncode}): {tail[0][:300]}", done.returncode,
                       seconds, None, done.stdout, done.stderr, leaked)
    return Outcome(verdict, reason, done.returncode, seconds, document, done.stdout, done.stderr, leaked)


def _text(value: str | bytes | None) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value or ""


def mismatch(entry: Entry, outcome: Outcome) -> str | None:
    """Why the outcome is not what the catalogue expects for the entry (None: caught as expected)."""
    if outcome.leaked:
        return f"an API-key canary appears in the verdict ({', '.join(outcome.leaked)})"
    if outcome.verdict not in entry.verdicts:
        return f"verdict {outcome.verdict!r}, expected {' or '.join(entry.verdicts)}: {outcome.reason}"
    if not any(needle in outcome.reason for needle in entry.reasons):
        return f"reason {outcome.reason!r} contains none of {list(entry.reasons)}"
    speedup = outcome.speedup
    if outcome.verdict == "pass" and entry.max_speedup is not None and (speedup is None or speedup > entry.max_speedup):
        return f"passed at {speedup}x the reference, more than the honest {entry.max_speedup}x"
    return None


# ---------------------------------------------------------------- the benchmark


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("arcengine", "torch", "triton"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _selected(entries: Iterable[Entry], device: str, only: Sequence[str], unsafe: bool) -> list[tuple[Entry, str]]:
    """(entry, why it is skipped or '') for every catalogue entry."""
    chosen = []
    for entry in entries:
        why = ""
        if only and entry.name not in only:
            continue
        if entry.skip and not unsafe:
            why = f"unsafe, needs --include-unsafe: {entry.skip}"
        elif not entry.cpu and device == "cpu":
            why = "GPU only"
        chosen.append((entry, why))
    return chosen


def _longest_first(entries: list[Entry], earlier: Path | None) -> list[Entry]:
    """The entries, those that took longest in an earlier run first (new ones first of all: their time is
    unknown); as given without an earlier run."""
    if earlier is None:
        return entries
    seconds = {row["name"]: (row.get("got") or {}).get("seconds") or 0.0
               for row in json.loads(earlier.read_text(encoding="utf-8"))["entries"]}
    return sorted(entries, key=lambda entry: -seconds.get(entry.name, float("inf")))


def redact(text: str, canaries: Sequence[str]) -> str:
    """`text` with every canary value replaced by a placeholder (results files are committed)."""
    for name, canary in zip(CANARY_NAMES, canaries, strict=False):
        text = text.replace(canary, f"<canary {name}>")
    return text


def _record(entry: Entry, outcome: Outcome | None, skipped: str, canaries: Sequence[str]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": entry.name, "problem": entry.problem, "path": str(entry.path.relative_to(ROOT)), "cpu": entry.cpu,
        "description": entry.description, "source": entry.source,
        "expected": {"verdict": list(entry.verdicts), "reason": list(entry.reasons)},
    }
    if outcome is None:
        return {**row, "skipped": skipped, "caught": None}
    why = mismatch(entry, outcome)
    return {
        **row,
        "got": {"verdict": outcome.verdict, "reason": redact(outcome.reason, canaries), "speedup": outcome.speedup,
                "returncode": outcome.returncode, "seconds": round(outcome.seconds, 2), "leaked": outcome.leaked,
                "timer": _timer(outcome)},
        "caught": why is None,
        "mismatch": redact(why, canaries) if why else None,
    }


def _timer(outcome: Outcome) -> str | None:
    """Which timer the guard's child used (None where no child timed anything: a gate refusal, a crash)."""
    device = (outcome.document or {}).get("device")
    return str(device["timer"]) if isinstance(device, dict) and device.get("timer") else None


def _headline(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    ran = [r for r in rows if r["caught"] is not None]
    missed = [r["name"] for r in ran if not r["caught"]]
    timers = Counter(r["got"].get("timer") for r in ran if r["got"].get("timer"))
    return {"caught": len(ran) - len(missed), "total": len(ran), "skipped": len(rows) - len(ran),
            "not_caught": missed, "leaks": [r["name"] for r in ran if r["got"]["leaked"]], "timers": dict(timers)}


def _judge(entry: Entry, device: str, env: Mapping[str, str], canaries: Sequence[str], hang_timeout_s: float,
           entry_timeout_s: float | None) -> Outcome:
    timeout = max(entry.timeout_s, hang_timeout_s) if entry.timeout_s is not None else None
    try:
        return run_entry(entry, device, env, canaries, timeout_s=timeout, outer_timeout_s=entry_timeout_s)
    except Exception as error:  # never stop the run for one entry
        return Outcome("error", f"runner error: {type(error).__name__}: {error}", None, 0.0)


def run_benchmark(out: Path, device: str, only: Sequence[str], unsafe: bool, hang_timeout_s: float,
                  entry_timeout_s: float | None, command: str, jobs: int = 1,
                  order_from: Path | None = None) -> dict[str, Any]:
    """Judge the selected entries, ``jobs`` at a time; an entry not caught while others shared the device is
    judged again alone (contention can slow a child past its timeout, never make a cheat look honest)."""
    env, canaries = canary_environment()
    document: dict[str, Any] = {
        "benchmark": "adversarial catalogue",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": None,
        "versions": _versions(),
        "commit": commit(),
        "command": command,
        "catalogue": str(CATALOGUE.relative_to(ROOT)),
        "headline": {},
        "entries": [],
    }
    selected = _selected(load_catalogue(), device, only, unsafe)
    outcomes: dict[str, Outcome] = {}

    def judge(entry: Entry) -> Outcome:
        return _judge(entry, device, env, canaries, hang_timeout_s, entry_timeout_s)

    def report(entry: Entry, outcome: Outcome, note: str = "") -> None:
        status = "caught" if mismatch(entry, outcome) is None else "NOT CAUGHT"
        print(f"{entry.name:<44} {status:<10} {outcome.verdict}: {redact(outcome.reason, canaries)[:110]}{note}",
              flush=True)

    retried: set[str] = set()

    def save() -> None:  # after every entry, so a run cut short still leaves its figures
        rows = []
        for entry, skipped in selected:
            outcome = outcomes.get(entry.name)
            if outcome is None and not skipped:
                continue  # not judged yet
            if document["device"] is None and outcome and outcome.document and outcome.document.get("device"):
                document["device"] = outcome.document["device"]
            rows.append({**_record(entry, outcome, skipped, canaries), "judged_again_alone": entry.name in retried})
        document["entries"], document["headline"] = rows, {**_headline(rows), "jobs": jobs}
        out.write_text(json.dumps(document, indent=2))

    runnable = _longest_first([entry for entry, skipped in selected if not skipped], order_from)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(judge, entry): entry for entry in runnable}
        for future in as_completed(futures):
            entry = futures[future]
            outcomes[entry.name] = future.result()
            report(entry, outcomes[entry.name])
            save()
    if jobs > 1:
        for entry in runnable:
            if mismatch(entry, outcomes[entry.name]) is not None:
                outcomes[entry.name] = judge(entry)
                retried.add(entry.name)
                report(entry, outcomes[entry.name], " (judged again, alone)")
                save()
    save()
    return document


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write the results JSON")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--only", nargs="*", default=[], help="entry names (e.g. scale/all_zeros)")
    parser.add_argument("--include-unsafe", action="store_true", help="also run entries marked skip")
    parser.add_argument("--hang-timeout", type=float, default=90.0,
                        help="minimum guard timeout for entries that hang (compiling on a GPU takes time) [90]")
    parser.add_argument("--entry-timeout", type=float, default=None,
                        help="wall-clock limit per entry [guard timeout + 240 s]")
    parser.add_argument("--jobs", type=int, default=1,
                        help="entries judged at once; a miss is judged again alone [1]")
    parser.add_argument("--order-from", type=Path, default=None, metavar="EARLIER.json",
                        help="an earlier run's results: its slowest entries start first")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join([Path(sys.executable).name, *sys.argv]) if argv is None else " ".join(argv)
    document = run_benchmark(args.out, args.device, args.only, args.include_unsafe, args.hang_timeout,
                             args.entry_timeout, command, args.jobs, args.order_from)
    print(json.dumps(document["headline"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
