"""The ``arcengine`` command: run, tui, replay, report, ablate, eval, export, problems."""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from arcengine.domain.errors import UserError, first_leaf
from arcengine.domain.problem import ProblemError, load_problem, shipped_problem_names
from arcengine.guard.child.baselines import REFERENCE_ROUTE
from arcengine.hidden_env import hide_secrets_from_proc
from arcengine.recording.logs import configure_logging
from arcengine.recording.redact import redact_secrets

if TYPE_CHECKING:
    from pydantic import BaseModel

    from arcengine.engine.campaign import Display
    from arcengine.tools.replay import ReplayResult

# Each command imports what it runs: the engine, scipy and Textual take seconds to import, and `eval`,
# `problems` or `--help` need none of them.

DEVICE = click.Choice(["auto", "cpu", "cuda"])
child_memory_option = click.option(
    "--child-memory", type=click.FloatRange(min=0, min_open=True), metavar="GIB",
    help="Resident host memory a candidate's process may use before it is killed [half the machine's].")
json_option = click.option("--json", "json_output", is_flag=True,
                           help="Print one JSON object on stdout and nothing else.")
problem_argument = click.argument("problem")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arcengine")
def app() -> None:
    """Multi-agent GPU kernel search with a deterministic guard.

    PROBLEM is a problem folder or the name of a shipped problem. Add --debug anywhere for tracebacks.
    """


@app.group()
def problems() -> None:
    """List and check problems."""


def _emit_json(document: BaseModel) -> None:
    """A command's --json output: one of the typed documents (CampaignSummary, EvalReport, ReplaySummary)."""
    print(document.model_dump_json(indent=2))


@app.command()
@click.argument("problem", required=False)
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False), metavar="RUN_DIR",
              help="Continue a campaign that was killed or crashed, with its recorded settings (give no PROBLEM).")
@click.option("--agents", type=int, help="Number of agents [3].")
@click.option("--budget", type=int, help="Candidate positions across all agents [24].")
@click.option("--model", help="Provider: offline, anthropic:MODEL, openai:MODEL or replay:RUN_DIR [offline].")
@click.option("--base-url", help="Server for the provider's API: a local vLLM, Ollama or llama.cpp (OpenAI API).")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Stop once provider calls cost this much.")
@click.option("--max-tokens", type=click.IntRange(min=1), metavar="N",
              help="Stop once provider calls used this many tokens (input plus output).")
@click.option("--prices", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="TOML price table (USD per million tokens) overriding the built-in list prices.")
@click.option("--provider-concurrency", type=click.IntRange(min=1), metavar="N",
              help="Provider requests in flight at once [4].")
@click.option("--memory", type=click.Choice(["shared", "private"]), help="Memory scope [shared].")
@click.option("--leaderboard/--no-leaderboard", default=None,
              help="Show agents the leaderboard and siblings' best sources [shown].")
@click.option("--memory-cap", help="Entries kept per kind and kernel type, or none [16].")
@click.option("--device", type=DEVICE, help="auto (the GPU if there is one), cpu or cuda [auto].")
@click.option("--gpus", metavar="all|N|0,1", help="GPUs to benchmark on, one guard worker each [all].")
@click.option("--out", type=click.Path(path_type=Path), help="Parent folder of run folders [runs].")
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="TOML campaign settings (flags win).")
@click.option("--time-limit", type=float, help="Stop after this many seconds.")
@click.option("--target", type=float, help="Stop once the best reaches this speedup (see --target-against).")
@click.option("--target-against", type=click.Choice(["reference", "baseline"]),
              help="What --target is a speedup over [reference].")
@click.option("--baseline", type=click.Choice(["once", "every", "off"]),
              help="Children that time the problem's baseline: the first on each GPU, every one, or none [once].")
@click.option("--plateau", type=int, help="Stop when every agent has gone this many candidates without a KEEP [12].")
@click.option("--seeds", type=int, help="Correctness seeds per workload [5].")
@click.option("--pipeline/--no-pipeline", default=None,
              help="On a GPU, prepare the next candidate (import, compile) while one is timed [on].")
@child_memory_option
@click.option("--tui", is_flag=True, help="Watch the campaign in the terminal UI (q quits and stops it).")
@json_option
def run(problem: str | None, resume: Path | None, agents: int | None, budget: int | None, model: str | None,
        base_url: str | None,
        max_cost: float | None, max_tokens: int | None, prices: Path | None, provider_concurrency: int | None,
        memory: str | None, leaderboard: bool | None, memory_cap: str | None, device: str | None,
        gpus: str | None, out: Path | None, config_file: Path | None,
        time_limit: float | None, target: float | None, target_against: str | None, baseline: str | None,
        plateau: int | None, seeds: int | None, pipeline: bool | None, child_memory: float | None, tui: bool,
        json_output: bool) -> None:
    """Run a campaign: headless (a line per decision, a progress line, and a summary) or in the terminal UI."""
    from arcengine.console import HeadlessDisplay
    from arcengine.engine.campaign import Campaign
    from arcengine.engine.config import build_config

    given = {
        "problem": problem, "agents": agents, "budget": budget, "model": model, "base_url": base_url,
        "max_cost_usd": max_cost, "max_tokens": max_tokens, "prices": prices,
        "provider_concurrency": provider_concurrency, "memory": memory, "leaderboard": leaderboard,
        "memory_cap": memory_cap, "device": device, "gpus": gpus, "out": out, "time_limit_s": time_limit,
        "target_speedup": target, "target_against": target_against, "baseline": baseline, "plateau": plateau,
        "seeds": seeds, "child_memory_gib": child_memory, "pipeline": pipeline,
    }
    if resume is not None:
        extra = [name for name, value in {**given, "config": config_file}.items() if value is not None]
        if extra:
            raise click.UsageError(f"--resume continues with the recorded settings; drop {extra[0]}")
        start: Callable[..., Campaign] = functools.partial(Campaign.resume, resume)
    elif problem is None:
        raise click.UsageError("give a PROBLEM to start a campaign, or --resume RUN_DIR to continue one")
    else:
        start = functools.partial(Campaign, build_config(config_file, given))
    if tui:
        summary = _in_tui(lambda display: start(display=display).run())
        if summary is None:
            print("arcengine: the campaign was stopped from the terminal UI before it finished", file=sys.stderr)
            sys.exit(130)
    else:
        stream = sys.stderr if json_output else sys.stdout
        summary = anyio.run(start(display=HeadlessDisplay(stream)).run)
    if json_output:
        _emit_json(summary)
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
        over_seed = f", {summary.best_over_seed:.3f}x the seed" if summary.best_over_seed else ""
        over_baseline = f", {best.speedup_over_baseline:.3f}x the baseline" if best.speedup_over_baseline else ""
        print(f"best: {best.candidate} by {best.agent}, {best.speedup:.3f}x the reference{over_baseline}{over_seed}")
    if usage.input_tokens or usage.output_tokens:
        cost = f"${usage.cost_usd:.4f}" if summary.cost_known else "cost unknown (no price for this model)"
        print(f"provider {summary.provider}: {usage.calls} calls, {usage.input_tokens} input tokens "
              f"({usage.cached_tokens} cached), {usage.output_tokens} output tokens, {cost}")
    print(f"stopped: {summary.stop_reason}\nrun folder: {summary.run_dir} (best kernel: best.py)")


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
def tui_command(run_dir: Path | None, refresh: float) -> None:
    """Watch a campaign's run folder, live (another process writing it) or finished; q quits.

    RUN_DIR defaults to the newest run folder under runs/."""
    from arcengine_tui.app import CampaignApp

    folder = run_dir or _newest_run(Path("runs"))
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
@json_option
def eval_command(problem: str, candidate: Path, device: str, seeds: int, timeout: float, suspicious_speedup: float,
                 baseline: bool, child_memory: float | None, json_output: bool) -> None:
    """The guard's verdict on one candidate file against the reference: a Python module, or a FlashInfer-Bench
    Solution JSON (its entry source, called as its destination_passing_style says)."""
    from arcengine.tools.evaluate import eval_report, evaluate_file

    loaded = load_problem(problem)
    if not candidate.is_file():
        raise ProblemError(f"candidate {candidate} does not exist")
    decided, used = anyio.run(functools.partial(evaluate_file, loaded, candidate, device, seeds=seeds,
                                                timeout_s=timeout, memory_limit_gib=child_memory,
                                                suspicious_speedup=suspicious_speedup,
                                                baseline="every" if baseline else "off"))
    report = eval_report(decided)
    if json_output:
        _emit_json(report)
    else:
        print(f"{report.verdict.upper()} on {used}: {decided.reason}")
        for warning in report.warnings:
            print(f"  warning: {warning}")
        for w in report.workloads:
            axes = ", ".join(f"{k}={v}" for k, v in w.axes.items())
            tag = " (held out)" if w.held_out else ""
            timing = (f"{w.time_us:.1f} us vs {w.ref_time_us:.1f} us: {w.speedup:.3f}x"
                      if w.time_us and w.ref_time_us and w.speedup else (w.failure or ""))
            if w.speedup_over_baseline and w.baseline_time_us and w.baseline_route != REFERENCE_ROUTE:
                timing += f"; baseline {w.baseline_route} {w.baseline_time_us:.1f} us: {w.speedup_over_baseline:.3f}x"
            print(f"  {axes}{tag}: {'ok' if w.correct else 'FAIL'} {timing}")
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
        sys.exit(1)


@app.command("replay")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Parent folder of the replay's run folder [runs].")
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
            sys.exit(130)
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
        sys.exit(1)


@app.command("ablate")
@problem_argument
@click.option("--configs", default="single,multi-bounded,multi-unbounded", show_default=True,
              help="Comma-separated configurations: single, multi-bounded, multi-unbounded.")
@click.option("--trajectories", type=click.IntRange(min=1), default=3, show_default=True,
              help="Campaigns per configuration.")
@click.option("--budget", type=click.IntRange(min=1), required=True, help="Candidate positions per campaign.")
@click.option("--agents", type=click.IntRange(min=2), default=4, show_default=True,
              help="Agents of the multi-agent configurations.")
@click.option("--model", default="offline", show_default=True, help="Provider, as for run.")
@click.option("--device", type=DEVICE, default="auto", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), help="Ablation folder [runs/ablate-PROBLEM].")
def ablate_command(problem: str, configs: str, trajectories: int, budget: int, agents: int, model: str,
                   device: str, out: Path | None) -> None:
    """The paper's fixed-budget ablation: each configuration run K times with the budget split evenly across its
    agents, then a report with geometric-mean speedups, bootstrap intervals and exact permutation tests."""
    from arcengine.console import HeadlessDisplay
    from arcengine.tools.ablate import ablate, configurations

    names = configurations(configs)
    folder = out or Path("runs") / f"ablate-{load_problem(problem).name}"
    base = {"problem": problem, "budget": budget, "agents": agents, "model": model, "device": device}

    def lines(name: str, trajectory: int) -> HeadlessDisplay:
        print(f"== {name}, trajectory {trajectory + 1} of {trajectories}", flush=True)
        return HeadlessDisplay(sys.stdout)

    report = anyio.run(functools.partial(ablate, base, names, trajectories, folder, lines))
    print(f"report: {report / 'report.md'}")


@app.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Report folder [RUN_DIR/report of the first run].")
def report_command(run_dirs: tuple[Path, ...], out: Path | None) -> None:
    """Markdown and JSON report of one or more runs: best kernels per workload, trajectories, and across
    configurations geometric means with 95% bootstrap intervals and exact permutation tests."""
    from arcengine.tools.report import write_report

    folder = write_report(list(run_dirs), out)
    print(f"report: {folder / 'report.md'} (and report.json, trajectory.png)")


@app.command("export")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["python", "kernelbench", "flashinfer"]), default="python",
              show_default=True, help="A standalone module, a KernelBench ModelNew file, or a FlashInfer-Bench "
                                      "Solution JSON.")
@click.option("--out", type=click.Path(path_type=Path), help="Where to write [RUN_DIR/export/].")
def export_command(run_dir: Path, fmt: str, out: Path | None) -> None:
    """Export a campaign's best kernel."""
    from arcengine.tools.export import export_run

    print(export_run(run_dir, fmt, out))


@problems.command("list")
def problems_list() -> None:
    """The shipped problems."""
    for name in shipped_problem_names():
        problem = load_problem(name)
        print(f"{name:<18} {problem.category:<3} {problem.kernel_type:<14} "
              f"{len(problem.workloads)} GPU / "
              f"{'no' if problem.cpu_unsupported else len(problem.cpu_workloads)} CPU workloads  "
              f"{problem.description.splitlines()[0][:70] if problem.description else ''}")


@problems.command("check")
@problem_argument
@click.option("--device", type=DEVICE, default="auto", show_default=True)
def problems_check(problem: str, device: str) -> None:
    """Check a problem: expressions evaluate, the reference runs, every seed is correct on every workload."""
    from arcengine.guard.service import DeviceUnsupported
    from arcengine.tools.evaluate import evaluate_files

    loaded = load_problem(problem)  # parses the TOML, evaluates every expression, finds every seed file

    def seed_paths(used: str) -> list[Path]:
        return [loaded.directory / file for file in loaded.seed_files_for(used)]

    try:
        verdicts, used = anyio.run(evaluate_files, loaded, seed_paths, device)
    except DeviceUnsupported as unsupported:
        print(f"{loaded.name}: skipped: {unsupported}")
        return
    if len(verdicts) == 1:  # one seed: the lines as they always read
        decided = verdicts[0]
        if not decided.correct:
            print(f"{loaded.name}: FAIL on {used}: {decided.reason}")
            sys.exit(1)
        print(f"{loaded.name}: ok on {used}: reference runs, seed correct on "
              f"{len(decided.workloads)} workloads, seed speedup {decided.speedup or 0:.3f}x")
    else:  # several: a line per seed, then the verdict, which names every seed that failed
        judged = list(zip(loaded.seed_files_for(used), verdicts, strict=True))
        for file, decided in judged:
            print(f"{loaded.name}: seed {file}: " + (
                f"ok on {used}: correct on {len(decided.workloads)} workloads, speedup {decided.speedup or 0:.3f}x"
                if decided.correct else f"FAIL on {used}: {decided.reason}"))
        failed = [file for file, decided in judged if not decided.correct]
        if failed:
            print(f"{loaded.name}: FAIL on {used}: {len(failed)} of {len(verdicts)} seeds fail the guard: "
                  f"{', '.join(failed)}")
            sys.exit(1)
        print(f"{loaded.name}: ok on {used}: reference runs, all {len(verdicts)} seeds correct")
        decided = verdicts[0]
    for route in loaded.baseline_routes_for(decided.device.get("kind", used)):
        correct = sum(1 for w in decided.workloads if route in w.baseline_times_us)
        failures = [w.baseline_failures[route] for w in decided.workloads if route in w.baseline_failures]
        print(f"  baseline {route}: correct on {correct}/{len(decided.workloads)} workloads"
              + (f"; failed on {len(failures)}, first: {failures[0]}" if failures else ""))


def main(argv: list[str] | None = None) -> None:
    if argv is None:  # the command line, not a call from Python: keys leave the /proc-visible environment
        argv = sys.argv[1:]
        hide_secrets_from_proc(argv)
    debug = "--debug" in argv
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
        print(f"arcengine: error: {error.format_message()}", file=sys.stderr)
        sys.exit(2)
    except click.Abort:
        print("arcengine: interrupted", file=sys.stderr)
        sys.exit(130)
    except UserError as error:  # its message is the whole story: one line, no traceback
        if debug:
            traceback.print_exc()
        print(f"arcengine: error: {redact_secrets(str(error))}", file=sys.stderr)
        sys.exit(2)
    except Exception as error:
        if debug:
            traceback.print_exc()
        print(f"arcengine: internal error: {type(error).__name__}: {redact_secrets(str(error))} "
              "(rerun with --debug for the traceback)",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
