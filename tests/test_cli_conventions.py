"""The command line's conventions (issue 28): exit codes by class, --json on every command, settings spelled as the
flags in the config file and ARCENGINE_* variables with flag > variable > file > default, ablate taking every run
option, and --max-cost refusing a model it cannot price. Real subprocesses where the user's view is the point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from arcengine import cli
from arcengine.domain.errors import ExitCode
from arcengine.engine.config import FILE_ONLY_KEYS, USER_KEYS, CampaignConfig
from arcengine.options import NOT_SETTINGS, campaign_options
from tests.conftest import SCALE


def arcengine(*args: str, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ARCENGINE_")}
    return subprocess.run([sys.executable, "-m", "arcengine.cli", *args], capture_output=True, text=True,
                          env={**environment, **(env or {})}, cwd=cwd, check=False)


def dry_run(*args: str, env: dict[str, str] | None = None) -> tuple[dict, dict]:
    result = arcengine("run", *args, "--dry-run", "--json", env=env)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    return document["settings"], document["sources"]


# -- exit codes -------------------------------------------------------------------------------------------------------

def test_a_usage_error_is_exit_2_with_one_line_and_a_json_error_document() -> None:
    result = arcengine("run", "no-such-problem", "--json")
    assert result.returncode == ExitCode.USAGE == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("arcengine: error: no problem 'no-such-problem'")
    document = json.loads(result.stdout)  # a script reading stdout gets JSON even now
    assert document["exit_code"] == 2 and document["kind"] == "usage" and "no-such-problem" in document["error"]


def test_an_internal_error_is_exit_3_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A bug (any exception that is not a UserError) is told apart from bad input: exit 3, no traceback."""
    def broken(name: str, precision: str | None = None) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "load_problem", broken)
    with pytest.raises(SystemExit) as exited:
        cli.main(["problems", "check", "rmsnorm"])
    assert exited.value.code == ExitCode.INTERNAL == 3
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == "arcengine: internal error: KeyError: 'a bug' (rerun with --debug for the traceback)"


def test_debug_prints_the_traceback_of_an_internal_error(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "load_problem", lambda name, precision=None: 1 / 0)
    with pytest.raises(SystemExit) as exited:
        cli.main(["problems", "check", "rmsnorm", "--debug"])
    assert exited.value.code == 3 and "Traceback" in capsys.readouterr().err


def test_a_campaign_whose_seed_fails_the_guard_is_exit_1(tmp_path: Path) -> None:
    """A failed kernel, not a usage error, and not a success: the summary is printed, the exit status says it."""
    problem = tmp_path / "problem"
    shutil.copytree(SCALE, problem)
    # Wrong (2x, not 2x + 1), with TUNABLES: else the seed generated from the reference is judged beside it.
    (problem / "seed.py").write_text('import torch\n\nK = 2\nTUNABLES = {"K": [2, 3]}\n\n\ndef run(x):\n'
                                     '    return x * K\n')
    result = arcengine("run", str(problem), "--agents", "1", "--budget", "1", "--device", "cpu", "--seeds", "1",
                       "--out", str(tmp_path / "runs"), "--json")
    assert result.returncode == ExitCode.FAILED == 1, result.stderr
    summary = json.loads(result.stdout)
    assert summary["stop_reason"].startswith("the seed fails the guard") and summary["candidates"] == 0


# -- --json everywhere ------------------------------------------------------------------------------------------------

def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[f"{prefix}{name}"] = command
    return found


def test_every_command_but_the_terminal_ui_takes_json() -> None:
    commands = _commands(cli.app)
    assert {"run", "eval", "replay", "ablate", "report", "export", "runs", "clean", "problems list",
            "problems check", "problems seed", "tui"} <= set(commands)
    without = [name for name, command in commands.items()
               if not any("--json" in getattr(p, "opts", ()) for p in command.params)]
    assert without == ["tui"]


def test_problems_list_json_is_one_document_on_stdout() -> None:
    result = arcengine("problems", "list", "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert {"rmsnorm", "softmax"} <= {p["name"] for p in listed}
    assert set(listed[0]) >= {"name", "kernel_type", "gpu_workloads", "cpu_workloads"}


# -- settings: config keys, variables, precedence ----------------------------------------------------------------

def test_every_option_reads_an_arcengine_variable() -> None:
    for name, command in _commands(cli.app).items():
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_eager:
                assert isinstance(param.envvar, str) and param.envvar.startswith("ARCENGINE_"), (name, param.opts)
    run = _commands(cli.app)["run"]
    variables = {p.name: p.envvar for p in run.params if isinstance(p, click.Option)}
    assert variables["max_cost"] == "ARCENGINE_MAX_COST" and variables["config"] == "ARCENGINE_CONFIG"
    report = _commands(cli.app)["report"]  # another meaning of --out: another variable
    assert {p.name: p.envvar for p in report.params if isinstance(p, click.Option)}["out"] == "ARCENGINE_REPORT_OUT"


def test_config_keys_are_the_flags_names_and_cover_every_field() -> None:
    """Each flag's key is a field or translates to one, and every field a flag does not set is a file-only key."""
    probe = campaign_options(click.Command("probe"))
    keys = {p.name for p in probe.params} - set(NOT_SETTINGS)
    fields = {USER_KEYS.get(key, key) for key in keys}
    assert fields <= set(CampaignConfig.model_fields)
    assert set(CampaignConfig.model_fields) - fields - {"problem"} == set(FILE_ONLY_KEYS)
    assert "max_cost" in keys and "max_cost_usd" not in keys


def test_run_help_lists_the_variables_and_the_file_only_keys() -> None:
    result = arcengine("run", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "ARCENGINE_MAX_COST" in text and "max_cost = 5.0" in text
    assert all(key in text for key in FILE_ONLY_KEYS)


def test_precedence_is_flag_then_variable_then_file_then_default(tmp_path: Path) -> None:
    config = tmp_path / "campaign.toml"
    config.write_text("agents = 5\nbudget = 30\nplateau = 7\nmax_cost = 2.5\nmargin = 0.03\n")
    env = {"ARCENGINE_AGENTS": "4", "ARCENGINE_BUDGET": "20"}
    settings, sources = dry_run("rmsnorm", "--config", str(config), "--agents", "6", env=env)
    assert (settings["agents"], sources["agents"]) == (6, "flag")  # flag over variable and file
    assert (settings["budget"], sources["budget"]) == (20, "environment (ARCENGINE_BUDGET)")  # variable over file
    assert (settings["plateau"], sources["plateau"]) == (7, "config file")  # file over default
    assert (settings["max_cost"], sources["max_cost"]) == (2.5, "config file")
    assert (settings["margin"], sources["margin"]) == (0.03, "config file")
    assert (settings["seeds"], sources["seeds"]) == (5, "default")
    assert "max_cost_usd" not in settings


def test_the_config_file_given_by_its_variable(tmp_path: Path) -> None:
    config = tmp_path / "campaign.toml"
    config.write_text("agents = 2\nbudget = 8\n")
    settings, sources = dry_run("rmsnorm", env={"ARCENGINE_CONFIG": str(config), "ARCENGINE_DEVICE": "cpu"})
    assert (settings["agents"], settings["budget"], settings["device"]) == (2, 8, "cpu")
    assert sources["device"] == "environment (ARCENGINE_DEVICE)"


def test_the_old_spelling_still_works_with_a_warning(tmp_path: Path) -> None:
    config = tmp_path / "campaign.toml"
    config.write_text("max_cost_usd = 3.0\ntime_limit_s = 60\n")
    result = arcengine("run", "rmsnorm", "--config", str(config), "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["settings"]["max_cost"] == 3.0
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 2 and all(line.startswith("arcengine: warning: config file") for line in warnings)
    assert "max_cost_usd is deprecated, write max_cost" in warnings[0]


def test_both_spellings_at_once_is_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "campaign.toml"
    config.write_text("max_cost_usd = 3.0\nmax_cost = 4.0\n")
    result = arcengine("run", "rmsnorm", "--config", str(config))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith("max_cost_usd and max_cost are the same setting; "
                                                           "keep max_cost")


def test_a_bad_variable_is_a_usage_error_naming_it() -> None:
    result = arcengine("run", "rmsnorm", "--dry-run", env={"ARCENGINE_MAX_COST": "lots"})
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "ARCENGINE_MAX_COST" in line and "lots" in line


def test_resume_ignores_variables_but_refuses_flags(tmp_path: Path) -> None:
    """A variable set for new campaigns must not block --resume; a flag still does."""
    refused = arcengine("run", "--resume", str(tmp_path), "--device", "cpu")
    assert refused.returncode == 2 and "drop device" in refused.stderr
    ignored = arcengine("run", "--resume", str(tmp_path), env={"ARCENGINE_DEVICE": "cpu"})
    assert ignored.returncode == 2 and "is not a run folder" in ignored.stderr


# -- ablate takes every run option --------------------------------------------------------------------------------

def test_ablate_takes_every_run_setting() -> None:
    commands = _commands(cli.app)
    options = {name: {p.name for p in command.params if isinstance(p, click.Option)}
               for name, command in commands.items() if name in ("run", "ablate")}
    # --resume and --tui are run's modes (one campaign; a screen), not settings
    assert options["run"] - options["ablate"] == {"resume", "tui"}
    # the same objects' definitions, not copies that could drift
    run_help = {p.name: p.help for p in commands["run"].params}
    assert all(run_help[p.name] == p.help for p in commands["ablate"].params if p.name in run_help)


def test_ablate_reads_the_config_file_variables_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "ablate.toml"
    config.write_text('budget = 6\nbase_url = "http://127.0.0.1:9/v1"\nmax_tokens = 1000\n')
    result = arcengine("ablate", "rmsnorm", "--config", str(config), "--gpus", "1", "--dry-run", "--json",
                       env={"ARCENGINE_MAX_COST": "1.5"})
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    settings, sources = document["settings"], document["sources"]
    assert (settings["budget"], settings["base_url"], settings["max_tokens"]) == (6, "http://127.0.0.1:9/v1", 1000)
    assert (settings["gpus"], settings["max_cost"], settings["agents"]) == ("1", 1.5, 4)
    assert sources["agents"] == "ablate's default" and sources["gpus"] == "flag"


def test_ablate_without_a_budget_is_a_usage_error() -> None:
    result = arcengine("ablate", "rmsnorm")
    assert result.returncode == 2 and "ablate needs a budget" in result.stderr


# -- --max-cost and prices ----------------------------------------------------------------------------------------

UNPRICED = "openai:model-nobody-priced"


def test_max_cost_refuses_a_model_without_a_price(tmp_path: Path) -> None:
    """Never reaches the network: the refusal comes before the first call (the server address is a closed port)."""
    result = arcengine("run", "rmsnorm", "--model", UNPRICED, "--base-url", "http://127.0.0.1:9/v1",
                       "--max-cost", "5", "--device", "cpu", "--out", str(tmp_path))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("arcengine: error: --max-cost needs a price for openai:model-nobody-priced")
    assert "--prices" in line
    assert list(tmp_path.iterdir()) == []  # no run folder was started


def test_max_cost_with_a_price_file_naming_the_model_starts(tmp_path: Path) -> None:
    from arcengine.engine.campaign import Campaign

    prices = tmp_path / "prices.toml"
    prices.write_text('[models."model-nobody-priced"]\ninput = 1.0\noutput = 2.0\n')
    config = CampaignConfig(problem="rmsnorm", model=UNPRICED, base_url="http://127.0.0.1:9/v1", max_cost_usd=5.0,
                            prices=prices, out=tmp_path)
    assert getattr(Campaign(config).provider, "priced", False)  # built, not run: nothing is called


def test_an_unpriced_model_without_a_cost_cap_still_starts(tmp_path: Path) -> None:
    from arcengine.engine.campaign import Campaign

    config = CampaignConfig(problem="rmsnorm", model=UNPRICED, base_url="http://127.0.0.1:9/v1", out=tmp_path)
    assert not getattr(Campaign(config).provider, "priced", True)  # counted as "cost unknown", as before


# -- the documented page --------------------------------------------------------------------------------------------

def test_docs_cli_lists_every_setting_its_variable_and_the_exit_codes() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    probe = campaign_options(click.Command("probe"))
    for param in probe.params:
        if param.name in NOT_SETTINGS:
            continue
        row = f"| `{'/'.join(param.opts + param.secondary_opts)}` | `{param.name}`"
        assert row in page and f"`ARCENGINE_{param.name.upper()}`" in page, param.name
    assert all(f"`{key}`" in page for key in FILE_ONLY_KEYS)
    assert all(f"| {int(code)} |" in page for code in ExitCode)


def test_report_and_export_json(tmp_path: Path) -> None:
    from tests.test_runs import finished

    run_dir = finished(tmp_path / "run")
    (run_dir / "best.py").write_text("import torch\n\n\ndef run(x):\n    return x * 2 + 1\n")
    report = arcengine("report", str(run_dir), "--json")
    assert report.returncode == 0, report.stderr
    assert {Path(f).name for f in json.loads(report.stdout)["files"]} >= {"report.md", "report.json"}
    exported = arcengine("export", str(run_dir), "--json", env={"ARCENGINE_EXPORT_OUT": str(tmp_path / "x.py")})
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == {"format": "python", "path": str(tmp_path / "x.py")}
    assert (tmp_path / "x.py").is_file()


def test_a_reason_with_terminal_escapes_prints_as_one_plain_line() -> None:
    # A candidate's exception message reaches the decision line: ESC sequences and carriage returns in it erased
    # the line and printed a fake KEEP (red team round 9). Every console line is printable characters only.
    import io

    from arcengine.console import HeadlessDisplay
    from arcengine.recording.redact import printable

    assert printable("a\x1b[2K\x1b[G\r[4/4] KEEP\nb\tc") == "a [2K [G [4/4] KEEP b c"
    assert printable("plain") == "plain"
    display = HeadlessDisplay.__new__(HeadlessDisplay)
    display.quiet, display.stream = False, io.StringIO()
    display._print("REVERT \x1b[2K\r[4/4] a1 KEEP 9.99x")
    assert display.stream.getvalue() == "REVERT  [2K [4/4] a1 KEEP 9.99x\n"
