"""The ``arcengine`` command: run, tui, replay, report, ablate, eval, export, runs, clean, problems.

Exit codes (docs/cli.md): 0 done, 1 a kernel failed or was refused (or a replay differs), 2 a usage error, 3 an
internal error, 130 interrupted."""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import anyio
import click

from arcengine.domain.errors import ExitCode, UserError, first_leaf
from arcengine.domain.problem import ProblemError, load_problem, shipped_problem_names
from arcengine.guard.child.baselines import REFERENCE_ROUTE
from arcengine.hidden_env import hide_secrets_from_proc
from arcengine.options import (
    CONFIG_EPILOG,
    DEVICE,
    campaign_options,
    campaign_settings,
    child_memory_option,
    given_sources,
    json_option,
    name_variables,
    out_option,
    precision_option,
)
from arcengine.recording.logs import configure_logging
from arcengine.recording.redact import printable, redact_secrets

if TYPE_CHECKING:
    from pydantic import BaseModel

    from arcengine.engine.campaign import Display
    from arcengine.engine.config import CampaignConfig
    from arcengine.tools.replay import ReplayResult

# Each command imports what it runs: the engine, scipy and Textual take seconds to import, and `eval`,
# `problems` or `--help` need none of them.

problem_argument = click.argument("problem")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.version_option(package_name="arcengine")
def app() -> None:
    """Multi-agent GPU kernel search with a deterministic guard.

    PROBLEM is a problem folder or the name of a shipped problem. Add --debug anywhere for tracebacks. Every
    option also reads ARCENGINE_<OPTION> (ARCENGINE_DEVICE=cpu); exit 0 done, 1 a kernel failed or was refused,
    2 a usage error, 3 an internal error (docs/cli.md).
    """


@app.group()
def problems() -> None:
    """List and check problems."""


def _emit_json(document: BaseModel | dict[str, Any] | list[Any]) -> None:
    """A command's --json output: one of the typed documents (CampaignSummary, EvalReport, ReplaySummary, ...) or a
    plain one."""
    if isinstance(document, dict | list):
        print(json.dumps(document, indent=2, default=str))
    else:
        print(document.model_dump_json(indent=2))


def _warn(line: str) -> None:
    print(f"arcengine: warning: {line}", file=sys.stderr, flush=True)


def _given_on_command_line(ctx: click.Context, names: list[str]) -> list[str]:
    return [name for name in names
            if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]


def _show_settings(ctx: click.Context, config: CampaignConfig, config_file: Path | None,
                   json_output: bool, extra: dict[str, str] | None = None) -> None:
    """--dry-run: the validated settings under the keys a config file takes, and where each came from."""
    from arcengine.engine.config import DEPRECATED_KEYS, read_settings

    in_file = {DEPRECATED_KEYS.get(field, field) for field in read_settings(config_file, {})[0]}
    given = {**given_sources(ctx), **(extra or {})}
    settings = {DEPRECATED_KEYS.get(k, k): v for k, v in config.model_dump(mode="json").items()}
    origin = {key: given.get(key) or ("config file" if key in in_file else "default") for key in settings}
    if json_output:
        _emit_json({"settings": settings, "sources": origin})
        return
    for key, value in settings.items():
        print(f"{key} = {json.dumps(value)}  # {origin[key]}")


@app.command(epilog=CONFIG_EPILOG)
@click.argument("problem", required=False)
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False), metavar="RUN_DIR",
              help="Continue a campaign that was killed or crashed, with its recorded settings (give no PROBLEM).")
@campaign_options
@click.option("--tui", is_flag=True, help="Watch the campaign in the terminal UI (q quits and stops it).")
@json_option
@click.pass_context
def run(ctx: click.Context, problem: str | None, resume: Path | None, tui: bool, json_output: bool,
        **options: Any) -> None:
    """Run a campaign: headless (a line per decision, a progress line, and a summary) or in the terminal UI."""
    from arcengine.console import HeadlessDisplay
    from arcengine.engine.campaign import Campaign
    from arcengine.engine.config import read_settings, validate

    given = campaign_settings(options)
    if resume is not None:
        # Only what the command line says is refused: ARCENGINE_* variables set for new campaigns do not apply.
        extra = (["problem"] if problem is not None else []) + _given_on_command_line(
            ctx, [*given, "config", "dry_run"])
        if extra:
            raise click.UsageError(f"--resume continues with the recorded settings; drop {extra[0]}")
        start: Callable[..., Campaign] = functools.partial(Campaign.resume, resume)
    elif problem is None and not options["config"]:
        raise click.UsageError("give a PROBLEM to start a campaign, or --resume RUN_DIR to continue one")
    else:
        values, spelled = read_settings(options["config"], {"problem": problem, **given}, _warn)
        config = validate(values, spelled)
        if options["dry_run"]:
            _show_settings(ctx, config, options["config"], json_output, {"problem": "argument"} if problem else None)
            return
        start = functools.partial(Campaign, config)
    if tui:
        summary = _in_tui(lambda display: start(display=display).run())
        if summary is None:
            print("arcengine: the campaign was stopped from the terminal UI before it finished", file=sys.stderr)
            sys.exit(ExitCode.INTERRUPTED)
    else:
        stream = sys.stderr if json_output else sys.stdout
        summary = anyio.run(start(display=HeadlessDisplay(stream)).run)
    if json_output:
        _emit_json(summary)
        _exit_if_no_seed_passed(summary)
        return
    best, gpus, usage = summary.best, summary.gpus, summary.usage
    where = f"{summary.device} (GPUs {', '.join(map(str, gpus))})" if len(gpus) > 1 else summary.device
    print(f"\n{summary.candidates} candidates on {where} in {summary.elapsed_s} s: "
          + ", ".join(f"{k} {v}" for k, v in summary.decisions.items()))
    if len(summary.seeds) > 1:  # one line for them all (one seed: the best's line says what it was worth)
        print("seeds: " + ", ".join(
            f"{seed.file} {seed.decision or 'undecided'}" + (f" {seed.speedup:.3f}x" if seed.speedup else "")
            + (" (the incumbent)" if seed.incumbent else "") for seed in summary.seeds))
    if best:
        print(_best_line(summary))
    if usage.input_tokens or usage.output_tokens:
        cost = f"${usage.cost_usd:.4f}" if summary.cost_known else "cost unknown (no price for this model)"
        print(f"provider {summary.provider}: {usage.calls} calls, {usage.input_tokens} input tokens "
              f"({usage.cached_tokens} cached), {usage.output_tokens} output tokens, {cost}")
    print(f"stopped: {summary.stop_reason}\nrun folder: {summary.run_dir} (best kernel: best.py)")
    _exit_if_no_seed_passed(summary)


def _best_line(summary: Any) -> str:
    """The best kernel's gains. On the CPU the gain over the seed leads: there Triton kernels run in its
    interpreter against PyTorch's native ones, so "0.001x the reference" says nothing about the search."""
    best = summary.best
    ours = f"best: {best.candidate} by {best.agent}"
    over_baseline = f", {best.speedup_over_baseline:.3f}x the baseline" if best.speedup_over_baseline else ""
    if summary.device == "cpu" and summary.best_over_seed:
        return (f"{ours}, {summary.best_over_seed:.3f}x the seed ({best.speedup:.3f}x the reference{over_baseline}: "
                f"on the CPU, Triton runs in its interpreter against PyTorch's native kernels, so the gain over the "
                f"seed is the figure to read)")
    over_seed = f", {summary.best_over_seed:.3f}x the seed" if summary.best_over_seed else ""
    return f"{ours}, {best.speedup:.3f}x the reference{over_baseline}{over_seed}"


def _exit_if_no_seed_passed(summary: Any) -> None:
    """A campaign whose every seed failed the guard had no kernel to improve: exit 1, as a failed eval (the summary,
    and the run folder, stand)."""
    if summary.seeds and not any(seed.decision == "KEEP" for seed in summary.seeds):
        sys.exit(ExitCode.FAILED)


def _in_tui(start: Callable[[Display], Awaitable[Any]]) -> Any:
    """Run ``start(display)`` (a campaign or a replay) on the terminal UI's loop with every event pushed to the
    view; its result, or None if the user quit first."""
    from arcengine_tui.app import CampaignApp, PushToView

    view = CampaignApp(None)
    view.drive = functools.partial(start, PushToView(view))
    view.run()
    return view.result


@app.command("tui")
@click.argument("run_dir", required=False, type=click.Path(path_type=Path))
@click.option("--refresh", type=click.FloatRange(min=0.05), default=0.25, show_default=True, metavar="SECONDS",
              help="How often the view reads the event log.")
@out_option
def tui_command(run_dir: Path | None, refresh: float, out: Path | None) -> None:
    """Watch a campaign's run folder, live (another process writing it) or finished; q quits. A full-screen view:
    the one command without --json (`arcengine runs --json` lists the runs).

    RUN_DIR defaults to the newest run folder under --out (runs/)."""
    from arcengine_tui.app import CampaignApp

    folder = run_dir or _newest_run(out or Path("runs"))
    if not (folder / "events.jsonl").is_file():
        raise ProblemError(f"{folder} is not a run folder (no events.jsonl); give one, e.g. runs/<campaign-id>")
    CampaignApp(folder, refresh).run()


def _newest_run(parent: Path) -> Path:
    runs = sorted((p for p in parent.glob("*/events.jsonl")), key=lambda p: p.stat().st_mtime)
    if not runs:
        raise ProblemError(f"no run folders under {parent}/; give RUN_DIR")
    return runs[-1].parent


@app.command("eval")
@problem_argument
@click.argument("candidate", type=click.Path(path_type=Path))
@click.option("--device", type=DEVICE, default="auto", show_default=True)
@click.option("--seeds", type=int, default=5, show_default=True, help="Correctness seeds per workload.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              metavar="SECONDS", help="Wall clock for the candidate's process.")
@click.option("--suspicious-speedup", type=click.FloatRange(min=1, min_open=True), default=10.0, show_default=True,
              metavar="X", help="A pass this many times faster than the reference on a workload is confirmed by a "
                                "second, fresh child.")
@click.option("--baseline/--no-baseline", default=True, show_default=True,
              help="Check and time the problem's baseline (what a user would otherwise run) beside the reference.")
@child_memory_option
@precision_option
@json_option
def eval_command(problem: str, candidate: Path, device: str, seeds: int, timeout: float, suspicious_speedup: float,
                 baseline: bool, child_memory: float | None, precision: str | None, json_output: bool) -> None:
    """The guard's verdict on one candidate file against the reference: a Python module, or a FlashInfer-Bench
    Solution JSON (its entry source, called as its destination_passing_style says)."""
    from arcengine.progress import Progress
    from arcengine.tools.evaluate import eval_report, evaluate_file

    loaded = load_problem(problem, precision)
    if not candidate.is_file():
        raise ProblemError(f"candidate {candidate} does not exist")
    with Progress(label="eval") as progress:
        decided, used = anyio.run(functools.partial(evaluate_file, loaded, candidate, device, seeds=seeds,
                                                    timeout_s=timeout, memory_limit_gib=child_memory,
                                                    suspicious_speedup=suspicious_speedup,
                                                    baseline="every" if baseline else "off", on_step=progress.step))
    report = eval_report(decided)
    if json_output:
        _emit_json(report)
    else:
        # What the candidate raised is in the reason and the failures: shown as plain lines (no terminal escapes).
        print(printable(f"{report.verdict.upper()} on {used}: {decided.reason}"))
        for warning in report.warnings:
            print(f"  warning: {warning}")
        for w in report.workloads:
            axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
            tag = " (held out)" if w.held_out else ""
            timing = (f"{w.time_us:.1f} us vs {w.ref_time_us:.1f} us: {w.speedup:.3f}x"
                      if w.time_us and w.ref_time_us and w.speedup else (w.failure or ""))
            if w.speedup_over_baseline and w.baseline_time_us and w.baseline_route != REFERENCE_ROUTE:
                timing += f"; baseline {w.baseline_route} {w.baseline_time_us:.1f} us: {w.speedup_over_baseline:.3f}x"
            print(printable(f"  {axes}{tag}: {'ok' if w.correct else 'FAIL'} {timing}"))
        if decided.speedup:
            print(f"speedup (geometric mean over visible workloads): {decided.speedup:.3f}x the reference, "
                  f"{report.baseline}")
        if decided.suspicious:
            print(f"checked twice ({decided.suspicious}): "
                  f"{'confirmed' if decided.confirmed else 'not confirmed'} by a fresh child")
        phases = decided.guard_phases
        # Loading holds the imports, a C++ extension built at import among them; compiling, the first calls' JIT.
        print(f"guard: {decided.guard_seconds:.1f} s, of which loading {phases.get('load', 0.0):.1f} s, "
              f"compiling {phases.get('precompile', 0.0) + phases.get('compile', 0.0):.1f} s, "
              f"checking {phases.get('correctness', 0.0):.1f} s, timing {phases.get('timing', 0.0):.1f} s")
    if report.verdict != "pass":
        sys.exit(ExitCode.FAILED)


@app.command("replay")
@click.argument("run_dir", type=click.Path(path_type=Path))
@out_option
@click.option("--speed", type=click.FloatRange(min=0, min_open=True),
              help="Pace decisions at the recorded gaps divided by this (default: as fast as possible).")
@click.option("--until", "until_seq", type=click.IntRange(min=1), metavar="SEQ",
              help="Replay the recorded events up to this sequence number.")
@click.option("--tui", is_flag=True, help="Watch the replay in the terminal UI.")
@json_option
def replay_command(run_dir: Path, out: Path | None, speed: float | None, until_seq: int | None, tui: bool,
                   json_output: bool) -> None:
    """Re-drive the engine from a campaign's event log (recorded replies and decisions; no network, no GPU) and
    check that every agent gets the same decisions in the same order. Exit 1 where they differ."""
    from arcengine.console import HeadlessDisplay
    from arcengine.engine.summary import ReplaySummary
    from arcengine.tools.replay import replay_run

    def start(display: Display) -> Awaitable[ReplayResult]:
        return replay_run(run_dir, out or Path("runs"), speed=speed, until_seq=until_seq, display=display)

    if tui:
        result = _in_tui(start)
        if result is None:
            sys.exit(ExitCode.INTERRUPTED)
    else:
        result = anyio.run(start, HeadlessDisplay(sys.stderr if json_output else sys.stdout))
    if json_output:
        report = ReplaySummary(**dict(result.summary), replayed=str(run_dir), divergence=result.divergence)
        _emit_json(report)
    elif result.divergence:
        print(f"replay DIVERGED from {run_dir}: {result.divergence}")
    else:
        print(f"replay reproduced {run_dir}: the same decisions per agent, in the same order "
              f"({result.summary.candidates} candidates); replay folder {result.summary.run_dir}")
    if result.divergence:
        sys.exit(ExitCode.FAILED)


ABLATE_DEFAULTS: dict[str, Any] = {"agents": 4}  # where the ablation's defaults differ from a campaign's


@app.command("ablate", epilog=CONFIG_EPILOG)
@problem_argument
@click.option("--configs", default="single,multi-bounded,multi-unbounded", show_default=True,
              help="Comma-separated configurations: single, multi-bounded, multi-unbounded.")
@click.option("--trajectories", type=click.IntRange(min=1), default=3, show_default=True,
              help="Campaigns per configuration.")
@campaign_options
@json_option
@click.pass_context
def ablate_command(ctx: click.Context, problem: str, configs: str, trajectories: int, json_output: bool,
                   **options: Any) -> None:
    """The paper's fixed-budget ablation: each configuration run K times with the budget (required) split evenly
    across its agents (4 unless --agents), then a report with geometric-mean speedups, bootstrap intervals and exact
    permutation tests. It takes every setting `run` takes; the ablation folder is OUT/ablate-PROBLEM."""
    from arcengine.console import HeadlessDisplay
    from arcengine.engine.config import read_settings, validate
    from arcengine.tools.ablate import CONFIGURATIONS, ablate, configurations

    names = configurations(configs)
    given, spelled = read_settings(options["config"], {"problem": problem, **campaign_settings(options)}, _warn)
    base = {**ABLATE_DEFAULTS, **given}
    if "budget" not in base:
        raise click.UsageError("ablate needs a budget: --budget N (or budget in the config file), the candidate "
                               "positions every campaign gets")
    checked = validate({**base, **CONFIGURATIONS[names[-1]]}, spelled)  # a bad setting fails now, not in an hour
    if base["agents"] < 2 and any(name != "single" for name in names):
        raise click.UsageError(f"the multi-agent configurations need --agents 2 or more (got {base['agents']})")
    folder = checked.out / f"ablate-{load_problem(problem).name}"
    if options["dry_run"]:
        _show_settings(ctx, validate(base, spelled), options["config"], json_output,
                       {"problem": "argument", **{k: "ablate's default" for k in ABLATE_DEFAULTS if k not in given}})
        return
    stream = sys.stderr if json_output else sys.stdout

    def lines(name: str, trajectory: int) -> HeadlessDisplay:
        print(f"== {name}, trajectory {trajectory + 1} of {trajectories}", file=stream, flush=True)
        return HeadlessDisplay(stream)

    report = anyio.run(functools.partial(ablate, base, names, trajectories, folder, lines))
    if json_output:
        _emit_json({"folder": str(folder), "report": str(report / "report.md"),
                    "report_json": str(report / "report.json"), "configurations": names,
                    "trajectories": trajectories})
        return
    print(f"report: {report / 'report.md'}")


@app.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Report folder [RUN_DIR/report of the first run].")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write one self-contained HTML page here: plot, leaderboard, workloads, kept kernels' diffs.")
@json_option
def report_command(run_dirs: tuple[Path, ...], out: Path | None, html: Path | None, json_output: bool) -> None:
    """Markdown and JSON report of one or more runs: best kernels per workload, trajectories, and across
    configurations geometric means with 95% bootstrap intervals and exact permutation tests."""
    from arcengine.tools.report import write_html, write_report

    folder = write_report(list(run_dirs), out)
    page = write_html(list(run_dirs), html) if html is not None else None
    if json_output:
        _emit_json({"folder": str(folder), "files": sorted(str(p) for p in folder.iterdir() if p.is_file()),
                    "html": str(page) if page is not None else None})
        return
    print(f"report: {folder / 'report.md'} (and report.json, trajectory.png)")
    if page is not None:
        print(f"html: {page}")


@app.command("export")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["python", "kernelbench", "flashinfer"]), default="python",
              show_default=True, help="A standalone module, a KernelBench ModelNew file, or a FlashInfer-Bench "
                                      "Solution JSON.")
@click.option("--out", type=click.Path(path_type=Path), help="Where to write [RUN_DIR/export/].")
@json_option
def export_command(run_dir: Path, fmt: str, out: Path | None, json_output: bool) -> None:
    """Export a campaign's best kernel."""
    from arcengine.tools.export import export_run

    written = export_run(run_dir, fmt, out)
    if json_output:
        _emit_json({"format": fmt, "path": str(written)})
        return
    print(written)


class Duration(click.ParamType):
    """An age: a number and s, m, h or d (7d); seconds, as a float."""

    name = "age"
    UNITS: ClassVar[dict[str, float]] = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip().lower()
        try:
            seconds = float(text[:-1]) * self.UNITS[text[-1]] if text[-1:] in self.UNITS else float(text) * 86400
        except ValueError:
            self.fail(f"{value!r} is not an age such as 30m, 12h or 7d", param, ctx)
        if seconds < 0:
            self.fail(f"{value!r} is a negative age", param, ctx)
        return seconds


@app.command("runs")
@out_option
@json_option
def runs_command(out: Path | None, json_output: bool) -> None:
    """The run folders under --out (runs/, ablations' inside it too), oldest first: problem, best, decisions and
    state: running (a process writes it), finished, stopped (by the user) or crashed; the last two resume."""
    from arcengine.tools.runs import list_runs

    rows = list_runs(out or Path("runs"))
    if json_output:
        _emit_json([row.model_dump(mode="json") for row in rows])
        return
    if not rows:
        print(f"no run folders under {out or Path('runs')}/", file=sys.stderr)
        return
    print(f"{'run folder':<40} {'problem':<16} {'best':>9} {'decisions':>11} state")
    for row in rows:
        best = f"{row.best:.3f}x" if row.best is not None else "-"
        decided = f"{row.decisions}/{row.budget}" if row.budget else str(row.decisions)
        state = row.state + (f" (pid {row.pid})" if row.pid else "")
        print(f"{row.run_dir:<40} {row.problem:<16} {best:>9} {decided:>11} {state}")


@app.command("clean")
@out_option
@click.option("--older-than", type=Duration(), metavar="AGE",
              help="Remove what was last written (a run) or used (an imported problem) more than AGE ago: 30m, 12h, "
                   "7d.")
@click.option("--all", "everything", is_flag=True, help="Remove regardless of age.")
@click.option("--unfinished", is_flag=True,
              help="Also stopped and crashed runs (which --resume could continue); never a running one.")
@click.option("--runs/--no-runs", "runs", default=True, show_default=True, help="Remove run folders.")
@click.option("--cache/--no-cache", "cache", default=True, show_default=True,
              help="Remove imported problems (KernelBench, FlashInfer-Trace) from the cache.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option
def clean_command(out: Path | None, older_than: float | None, everything: bool, unfinished: bool, runs: bool,
                  cache: bool, dry_run: bool, json_output: bool) -> None:
    """Remove finished run folders under --out and the imported-problem cache, by age (--older-than) or all
    (--all). A running campaign's folder is never touched (its lock is taken before removing), nor an imported
    problem an unfinished run there was started on."""
    from arcengine.tools.runs import clean_plan, remove

    if everything == (older_than is not None):
        raise click.UsageError("say what to remove: --older-than AGE (e.g. 7d) or --all")
    plan = clean_plan(out or Path("runs"), older_than, unfinished=unfinished, runs=runs, cache=cache)
    removed, skipped = (plan, []) if dry_run else remove(plan)
    for line in skipped:
        _warn(f"kept {line}")
    if json_output:
        _emit_json({"dry_run": dry_run, "removed": [item.model_dump() for item in removed], "skipped": skipped,
                    "bytes": sum(item.bytes for item in removed)})
        return
    verb = "would remove" if dry_run else "removed"
    for item in removed:
        print(f"{verb} {item.kind} {item.path}" + (f" ({item.state})" if item.state else "")
              + f", {item.bytes / 1e6:.1f} MB, {item.age_s / 86400:.1f} days old")
    print(f"{verb} {len(removed)} folders, {sum(item.bytes for item in removed) / 1e6:.1f} MB")


@problems.command("list")
@json_option
def problems_list(json_output: bool) -> None:
    """The shipped problems."""
    listed = [load_problem(name) for name in shipped_problem_names()]
    if json_output:
        _emit_json([{"name": problem.name, "category": problem.category, "kernel_type": problem.kernel_type,
                     "gpu_workloads": len(problem.workloads),
                     "cpu_workloads": None if problem.cpu_unsupported else len(problem.cpu_workloads),
                     "description": problem.description} for problem in listed])
        return
    for name, problem in zip(shipped_problem_names(), listed, strict=True):
        print(f"{name:<18} {problem.category:<3} {problem.kernel_type:<14} "
              f"{len(problem.workloads)} GPU / "
              f"{'no' if problem.cpu_unsupported else len(problem.cpu_workloads)} CPU workloads  "
              f"{problem.description.splitlines()[0][:70] if problem.description else ''}")


@problems.command("seed")
@problem_argument
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="where to write the seed (a .py file)")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cuda", show_default=True,
              help="whose seeds to look at (a problem may name CPU seeds apart)")
@precision_option
@json_option
def problems_seed(problem: str, out: Path, device: str, precision: str | None, json_output: bool) -> None:
    """Write the seed a search starts from: the problem's first seed with TUNABLES, else one generated from its
    reference (eager, torch.compile or a library route of baseline.py, as TUNABLES)."""
    from arcengine.domain.library_seed import SEED_FILE, tunable_seed

    loaded = load_problem(problem, precision)
    file, source = tunable_seed(loaded, device)
    try:
        out.write_text(source, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {out}: {error.strerror or error}") from None
    generated = file == SEED_FILE
    if json_output:
        _emit_json({"problem": loaded.name, "out": str(out), "seed": file, "generated": generated})
        return
    knobs = "and Inductor's choices for its Triton kernels " if device == "cuda" else "(Inductor's knobs: GPU only) "
    what = (f"its {file}" if not generated else
            f"generated from its reference (eager, torch.compile or a library route {knobs}as TUNABLES)")
    print(f"{loaded.name}: wrote {out}: {what}")


@problems.command("check")
@problem_argument
@click.option("--device", type=DEVICE, default="auto", show_default=True)
@precision_option
@json_option
def problems_check(problem: str, device: str, precision: str | None, json_output: bool) -> None:
    """Check a problem: expressions evaluate, the reference runs, every seed is correct on every workload."""
    from arcengine.guard.service import DeviceUnsupported
    from arcengine.progress import Progress
    from arcengine.tools.evaluate import CheckedBaseline, CheckedSeed, CheckReport, eval_report, evaluate_files

    loaded = load_problem(problem, precision)  # parses the TOML, evaluates every expression, finds every seed file

    def seed_paths(used: str) -> list[Path]:
        return [loaded.directory / file for file in loaded.seed_files_for(used)]

    try:
        with Progress(label=f"check {loaded.name}") as progress:
            verdicts, used = anyio.run(functools.partial(evaluate_files, loaded, seed_paths, device,
                                                         on_step=progress.step))
    except DeviceUnsupported as unsupported:
        if json_output:
            _emit_json(CheckReport(problem=loaded.name, ok=True, device=None, skipped=str(unsupported), seeds=[],
                                   baselines=[]))
        else:
            print(f"{loaded.name}: skipped: {unsupported}")
        return
    judged = list(zip(loaded.seed_files_for(used), verdicts, strict=True))
    failed = [file for file, decided in judged if not decided.correct]
    decided = verdicts[0]
    routes = loaded.baseline_routes_for(decided.device.get("kind", used)) if not failed else []
    baselines = [CheckedBaseline(route=route, correct=sum(1 for w in decided.workloads if route in w.baseline_times_us),
                                 workloads=len(decided.workloads),
                                 failures=[w.baseline_failures[route] for w in decided.workloads
                                           if route in w.baseline_failures]) for route in routes]
    if json_output:
        _emit_json(CheckReport(problem=loaded.name, ok=not failed, device=used, skipped=None, baselines=baselines,
                               seeds=[CheckedSeed(file=file, verdict="pass" if d.correct else eval_report(d).verdict,
                                                  reason=d.reason, workloads=len(d.workloads), speedup=d.speedup)
                                      for file, d in judged]))
    else:
        _print_check(loaded.name, used, judged, failed, baselines)
    if failed:
        sys.exit(ExitCode.FAILED)


def _print_check(name: str, used: str, judged: list[tuple[str, Any]], failed: list[str],
                 baselines: list[Any]) -> None:
    if len(judged) == 1:  # one seed: the lines as they always read
        decided = judged[0][1]
        if failed:
            print(f"{name}: FAIL on {used}: {decided.reason}")
            return
        print(f"{name}: ok on {used}: reference runs, seed correct on "
              f"{len(decided.workloads)} workloads, seed speedup {decided.speedup or 0:.3f}x")
    else:  # several: a line per seed, then the verdict, which names every seed that failed
        for file, decided in judged:
            print(f"{name}: seed {file}: " + (
                f"ok on {used}: correct on {len(decided.workloads)} workloads, speedup {decided.speedup or 0:.3f}x"
                if decided.correct else f"FAIL on {used}: {decided.reason}"))
        if failed:
            print(f"{name}: FAIL on {used}: {len(failed)} of {len(judged)} seeds fail the guard: {', '.join(failed)}")
            return
        print(f"{name}: ok on {used}: reference runs, all {len(judged)} seeds correct")
    for baseline in baselines:
        print(f"  baseline {baseline.route}: correct on {baseline.correct}/{baseline.workloads} workloads"
              + (f"; failed on {len(baseline.failures)}, first: {baseline.failures[0]}" if baseline.failures else ""))


name_variables(app)  # every option above reads ARCENGINE_<OPTION>


def _exit_with(code: ExitCode, message: str, json_errors: bool) -> NoReturn:
    """The one error line on stderr (and, after --json, a JSON document on stdout a script can read)."""
    kind = {ExitCode.FAILED: "failed", ExitCode.USAGE: "usage", ExitCode.INTERNAL: "internal"}.get(code, "error")
    if json_errors:
        print(json.dumps({"error": message, "kind": kind, "exit_code": int(code)}))
    print(f"arcengine: {'internal error' if code == ExitCode.INTERNAL else 'error'}: {message}", file=sys.stderr)
    sys.exit(code)


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def main(argv: list[str] | None = None) -> None:
    if argv is None:  # the command line, not a call from Python: keys leave the /proc-visible environment
        argv = sys.argv[1:]
        hide_secrets_from_proc(argv)
    debug = "--debug" in argv or _truthy("ARCENGINE_DEBUG")
    json_errors = "--json" in argv or _truthy("ARCENGINE_JSON")
    argv = [a for a in argv if a != "--debug"]
    configure_logging(None)
    try:
        try:
            app.main(args=argv, prog_name="arcengine", standalone_mode=False)
        except BaseExceptionGroup as group:  # a task group's one failure is what the user must see
            raise first_leaf(group) from group
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        _exit_with(ExitCode.USAGE, error.format_message(), json_errors)
    except click.Abort:
        print("arcengine: interrupted", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    except UserError as error:  # its message is the whole story: one line, no traceback
        if debug:
            traceback.print_exc()
        _exit_with(error.exit_code, redact_secrets(str(error)), json_errors)
    except Exception as error:
        if debug:
            traceback.print_exc()
        _exit_with(ExitCode.INTERNAL, f"{type(error).__name__}: {redact_secrets(str(error))} "
                   "(rerun with --debug for the traceback)", json_errors)


if __name__ == "__main__":
    main()
