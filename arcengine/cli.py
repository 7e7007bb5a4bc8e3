"""The ``arcengine`` command: run, eval, problems."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import anyio
import click
import typer

from arcengine.campaign import Campaign, CampaignError
from arcengine.config import ConfigError, build_config
from arcengine.display import HeadlessDisplay
from arcengine.evaluate import evaluate_file, verdict_json
from arcengine.eventlog import EventLogError
from arcengine.guard.service import GuardError
from arcengine.problem import ProblemError, load_problem, shipped_problem_names
from arcengine.providers.base import ProviderError
from arcengine.skills import SkillError

# Errors whose message is the whole story: one line, no traceback.
USER_ERRORS = (ProblemError, ConfigError, CampaignError, GuardError, SkillError, ProviderError, EventLogError)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, help="Multi-agent GPU kernel search with a deterministic guard.")
problems_app = typer.Typer(no_args_is_help=True, help="List and check problems.")
app.add_typer(problems_app, name="problems")

Device = Annotated[str, typer.Option(help="auto (the GPU if there is one), cpu or cuda.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout and nothing else.")]


def _emit_json(document: dict[str, Any]) -> None:
    print(json.dumps(document, indent=2))


@app.command()
def run(
    problem: Annotated[str, typer.Argument(help="A problem folder or the name of a shipped problem.")],
    agents: Annotated[int | None, typer.Option(help="Number of agents [3].")] = None,
    budget: Annotated[int | None, typer.Option(help="Candidate positions across all agents [24].")] = None,
    model: Annotated[str | None, typer.Option(help="Provider: offline, or NAME:MODEL [offline].")] = None,
    memory: Annotated[str | None, typer.Option(help="shared or private [shared].")] = None,
    memory_cap: Annotated[str | None, typer.Option(help="Entries kept per kind and kernel type, or none [16].")] = None,
    device: Annotated[str | None, typer.Option(help="auto, cpu or cuda [auto].")] = None,
    out: Annotated[Path | None, typer.Option(help="Parent folder of run folders [runs].")] = None,
    config: Annotated[Path | None, typer.Option(help="A TOML file of campaign settings (flags win).")] = None,
    time_limit: Annotated[float | None, typer.Option(help="Stop after this many seconds.")] = None,
    target: Annotated[float | None, typer.Option(help="Stop once the best reaches this speedup.")] = None,
    plateau: Annotated[int | None, typer.Option(help="Stop when every agent has gone this long without KEEP.")] = None,
    seeds: Annotated[int | None, typer.Option(help="Correctness seeds per workload [3].")] = None,
    json_output: JsonFlag = False,
) -> None:
    """Run a campaign headless: a line per decision, a progress line, and a summary."""
    settings = build_config(config, {
        "problem": problem, "agents": agents, "budget": budget, "model": model, "memory": memory,
        "memory_cap": memory_cap, "device": device, "out": out, "time_limit_s": time_limit,
        "target_speedup": target, "plateau": plateau, "seeds": seeds,
    })
    stream = sys.stderr if json_output else sys.stdout
    campaign = Campaign(settings, display=HeadlessDisplay(stream))
    summary = anyio.run(campaign.run)
    if json_output:
        _emit_json(summary)
        return
    best = summary["best"]
    print(f"\n{summary['candidates']} candidates on {summary['device']} in {summary['elapsed_s']} s: "
          + ", ".join(f"{k} {v}" for k, v in summary["decisions"].items()))
    if best:
        over_seed = f", {summary['best_over_seed']:.3f}x the seed" if summary["best_over_seed"] else ""
        print(f"best: {best['candidate']} by {best['agent']}, {best['speedup']:.3f}x the reference{over_seed}")
    print(f"stopped: {summary['stop_reason']}\nrun folder: {summary['run_dir']} (best kernel: best.py)")


@app.command("eval")
def eval_command(
    problem: Annotated[str, typer.Argument(help="A problem folder or the name of a shipped problem.")],
    candidate: Annotated[Path, typer.Argument(help="The candidate module (exposes run(*inputs)).")],
    device: Device = "auto",
    seeds: Annotated[int, typer.Option(help="Correctness seeds per workload.")] = 3,
    json_output: JsonFlag = False,
) -> None:
    """The guard's verdict on one candidate file against the reference."""
    loaded = load_problem(problem)
    if not candidate.is_file():
        raise ProblemError(f"candidate {candidate} does not exist")
    decided, used = anyio.run(evaluate_file, loaded, candidate, device, seeds)
    document = verdict_json(decided)
    if json_output:
        _emit_json(document)
    else:
        print(f"{document['verdict'].upper()} on {used}: {decided.reason}")
        for w in document["workloads"]:
            axes = ", ".join(f"{k}={v}" for k, v in w["axes"].items())
            tag = " (held out)" if w["held_out"] else ""
            timing = (f"{w['time_us']:.1f} us vs {w['ref_time_us']:.1f} us: {w['speedup']:.3f}x"
                      if w["time_us"] and w["ref_time_us"] and w["speedup"] else (w["failure"] or ""))
            print(f"  {axes}{tag}: {'ok' if w['correct'] else 'FAIL'} {timing}")
        if decided.speedup:
            print(f"speedup (geometric mean over visible workloads): {decided.speedup:.3f}x")
    if document["verdict"] != "pass":
        raise typer.Exit(1)


@problems_app.command("list")
def problems_list() -> None:
    """The shipped problems."""
    for name in shipped_problem_names():
        problem = load_problem(name)
        print(f"{name:<18} {problem.category:<3} {problem.kernel_type:<14} "
              f"{len(problem.workloads)} GPU / {len(problem.cpu_workloads)} CPU workloads  "
              f"{problem.description.splitlines()[0][:70] if problem.description else ''}")


@problems_app.command("check")
def problems_check(
    problem: Annotated[str, typer.Argument(help="A problem folder or the name of a shipped problem.")],
    device: Device = "auto",
) -> None:
    """Check a problem: expressions evaluate, the reference runs, the seed is correct on every workload."""
    loaded = load_problem(problem)  # parses the TOML and evaluates every expression
    decided, used = anyio.run(evaluate_file, loaded, loaded.seed_path, device)
    if not decided.correct:
        print(f"{loaded.name}: FAIL on {used}: {decided.reason}")
        raise typer.Exit(1)
    print(f"{loaded.name}: ok on {used}: reference runs, seed correct on "
          f"{len(decided.workloads)} workloads, seed speedup {decided.speedup or 0:.3f}x")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    command = typer.main.get_command(app)
    try:
        command.main(args=argv, prog_name="arcengine", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        print(f"arcengine: error: {error.format_message()}", file=sys.stderr)
        sys.exit(2)
    except click.Abort:
        print("arcengine: interrupted", file=sys.stderr)
        sys.exit(130)
    except USER_ERRORS as error:
        if debug:
            traceback.print_exc()
        print(f"arcengine: error: {error}", file=sys.stderr)
        sys.exit(2)
    except Exception as error:
        if debug:
            traceback.print_exc()
        print(f"arcengine: internal error: {type(error).__name__}: {error} (rerun with --debug for the traceback)",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
