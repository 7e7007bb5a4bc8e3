"""The command line's shared options: the campaign settings ``run`` and ``ablate`` both take (defined once here),
and the rule that names every option's environment variable, ``ARCENGINE_<OPTION>``.

A campaign setting is spelled the same everywhere: ``--max-cost`` on the command line, ``ARCENGINE_MAX_COST`` in
the environment, ``max_cost`` in the ``--config`` file. A flag wins over its variable, the variable over the file,
the file over the default (docs/cli.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

ENV_PREFIX = "ARCENGINE_"
# Options that mean something else in these commands than the campaign setting of the same name get the command's
# name too: ARCENGINE_OUT is the runs folder, and must not move where `report` or `export` write.
OWN_VARIABLE = {("report", "out"), ("export", "out")}

F = TypeVar("F", bound=Callable[..., Any])

DEVICE = click.Choice(["auto", "cpu", "cuda"])

child_memory_option = click.option(
    "--child-memory", type=click.FloatRange(min=0, min_open=True), metavar="GIB",
    help="Resident host memory a candidate's process may use before it is killed [half the machine's].")
json_option = click.option("--json", "json_output", is_flag=True,
                           help="Print one JSON object on stdout and nothing else (progress and lines: stderr).")
precision_option = click.option(
    "--precision", type=click.Choice(["fp32", "fp16", "bf16"]),
    help="A KernelBench problem's precision: inputs and weights cast to it, KernelBench's tolerance for it [fp32].")
out_option = click.option("--out", type=click.Path(path_type=Path, file_okay=False),
                          help="Parent folder of run folders [runs].")

# Every campaign setting a flag sets, in --help's order. Each one's parameter name is its config-file key; the
# values stay None unless given, so that a config file's value shows through (engine/config.py merges them).
CAMPAIGN_OPTIONS: list[Callable[[F], F]] = [
    click.option("--agents", type=int, help="Number of agents [3]."),
    click.option("--budget", type=int, help="Candidate positions across all agents [24]."),
    click.option("--model", help="Provider: offline, anthropic:MODEL, openai:MODEL or replay:RUN_DIR [offline]."),
    click.option("--base-url", help="Server for the provider's API: a local vLLM, Ollama or llama.cpp (OpenAI API)."),
    click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), metavar="USD",
                 help="Stop once provider calls cost this much (refused for a model without a price: see --prices)."),
    click.option("--max-tokens", type=click.IntRange(min=1), metavar="N",
                 help="Stop once provider calls used this many tokens (input plus output)."),
    click.option("--prices", type=click.Path(path_type=Path, exists=True, dir_okay=False),
                 help="TOML price table (USD per million tokens) overriding the built-in list prices."),
    click.option("--provider-concurrency", type=click.IntRange(min=1), metavar="N",
                 help="Provider requests in flight at once [4]."),
    click.option("--memory", type=click.Choice(["shared", "private"]), help="Memory scope [shared]."),
    click.option("--leaderboard/--no-leaderboard", default=None,
                 help="Show agents the leaderboard and siblings' best sources [shown]."),
    click.option("--memory-cap", help="Entries kept per kind and kernel type, or none [16]."),
    click.option("--device", type=DEVICE, help="auto (the GPU if there is one), cpu or cuda [auto]."),
    click.option("--gpus", metavar="all|N|0,1", help="GPUs to benchmark on, one guard worker each [all]."),
    out_option,
    click.option("--config", type=click.Path(path_type=Path, dir_okay=False),
                 help="TOML file of campaign settings, keyed by these options' names (max_cost = 5.0)."),
    click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
                 help="Stop after this many seconds."),
    click.option("--target", type=click.FloatRange(min=0, min_open=True), metavar="X",
                 help="Stop once the best reaches this speedup (see --target-against)."),
    click.option("--target-against", type=click.Choice(["reference", "baseline"]),
                 help="What --target is a speedup over [reference]."),
    click.option("--baseline", type=click.Choice(["once", "every", "off"]),
                 help="Children that time the problem's baseline: the first on each GPU, every one, or none [once]."),
    click.option("--plateau", type=int,
                 help="Stop when every agent has gone this many candidates without a KEEP [12]."),
    click.option("--seeds", type=int, help="Correctness seeds per workload [5]."),
    click.option("--pipeline/--no-pipeline", default=None,
                 help="On a GPU, prepare the next candidate (import, compile) while one is timed [on]."),
    child_memory_option,
    precision_option,
    click.option("--dry-run", is_flag=True,
                 help="Print the settings it would run with, and where each came from, then exit."),
]
# Options of CAMPAIGN_OPTIONS that are not campaign settings (no config-file key).
NOT_SETTINGS = ("config", "dry_run")

CONFIG_EPILOG = (
    "Settings: each option above is also read from ARCENGINE_<OPTION> (ARCENGINE_MAX_COST=5) and, in the "
    "--config TOML file, from its name with underscores (max_cost = 5.0, memory_cap = \"none\"). A flag wins over "
    "its variable, the variable over the file, the file over the default. The file also takes margin, near_band, "
    "suspicious_speedup, r_draft, candidate_timeout_s, provider_timeout_s, provider_retries, split_budget, rng_seed "
    "and max_relaunches. docs/cli.md lists them all.")


def campaign_options(command: F) -> F:
    """Apply every campaign setting's option (``run`` and ``ablate`` share them)."""
    for option in reversed(CAMPAIGN_OPTIONS):
        command = option(command)
    return command


def campaign_settings(params: dict[str, Any]) -> dict[str, Any]:
    """The campaign settings among a command's parameters, keyed by option name (None: not given)."""
    names = {_option_name(option) for option in _declared_options()}
    return {name: params[name] for name in names - set(NOT_SETTINGS)}


def given_sources(ctx: click.Context) -> dict[str, str]:
    """The campaign settings this invocation's flags and ARCENGINE_* variables set, and which of the two did."""
    sources: dict[str, str] = {}
    for name in campaign_settings(ctx.params):
        source = ctx.get_parameter_source(name)
        if source == click.core.ParameterSource.COMMANDLINE:
            sources[name] = "flag"
        elif source == click.core.ParameterSource.ENVIRONMENT:
            sources[name] = f"environment ({envvar_name(name)})"
    return sources


def _declared_options() -> list[click.Option]:
    """The click.Option objects CAMPAIGN_OPTIONS declare (read off a throwaway command)."""
    return [param for param in campaign_options(click.Command("probe")).params if isinstance(param, click.Option)]


def _option_name(option: click.Option) -> str:
    assert option.name is not None
    return option.name


def envvar_name(name: str, command: str | None = None) -> str:
    """``max_cost`` -> ``ARCENGINE_MAX_COST``; with a command, ``ARCENGINE_REPORT_OUT``."""
    return ENV_PREFIX + (f"{command}_{name}" if command else name).upper().replace("-", "_")


def long_name(option: click.Option) -> str:
    """The option's first long flag without its dashes, as a key: ``--max-cost`` -> ``max_cost``."""
    flag = next((o for o in option.opts if o.startswith("--")), option.opts[0])
    return flag.lstrip("-").replace("-", "_")


def name_variables(group: click.Group, path: tuple[str, ...] = ()) -> None:
    """Give every option of every command under ``group`` its ARCENGINE_<OPTION> variable (shown in --help), unless
    it names one itself. One rule, applied once, so an option added later gets its variable too."""
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            name_variables(command, (*path, name))
            continue
        for param in command.params:
            if not isinstance(param, click.Option) or param.envvar is not None or param.is_eager:
                continue
            key = long_name(param)
            param.envvar = envvar_name(key, name if (name, key) in OWN_VARIABLE else None)
            param.show_envvar = True
