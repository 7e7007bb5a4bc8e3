"""Campaign configuration: a TOML file and command-line flags, merged and validated."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from arcengine.domain.errors import UserError
from arcengine.guard.decision import SUSPICIOUS_SPEEDUP
from arcengine.guard.gpus import GPUS_PATTERN


class ConfigError(UserError):
    pass


class CampaignConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem: str
    precision: Literal["fp32", "fp16", "bf16"] | None = Field(None, description="a KernelBench problem's precision: "
                                                              "inputs and weights cast to it, KernelBench's "
                                                              "tolerance for it [fp32]")
    agents: int = Field(3, ge=1, le=256)
    budget: int = Field(24, ge=1, description="candidate positions across all agents")
    model: str = "offline"
    base_url: str | None = Field(None, description="an OpenAI-compatible or Anthropic-compatible server")
    provider_concurrency: int = Field(4, ge=1, description="requests in flight to the provider at once")
    provider_timeout_s: float = Field(300.0, gt=0, description="per request, before the SDK retries")
    provider_retries: int = Field(4, ge=0, description="the SDK's retries on 429, 5xx and timeouts")
    prices: Path | None = Field(None, description="TOML price table overriding the built-in list prices")
    max_tokens: int | None = Field(None, ge=1, description="STOP once providers used this many tokens")
    max_cost_usd: float | None = Field(None, gt=0, description="STOP once providers cost this much")
    memory: Literal["shared", "private"] = "shared"
    memory_cap: int | None = Field(16, ge=1, description="per kind and kernel type; None keeps all")
    leaderboard: bool = True
    device: Literal["auto", "cpu", "cuda"] = "auto"
    gpus: str = Field("all", description="GPUs the guard benchmarks on: all, a count (2) or indices (0,1); "
                                         "one worker each")
    out: Path = Path("runs")
    margin: float = Field(0.02, ge=0.0, lt=1.0, description="KEEP needs a paired gain beyond this")
    near_band: float = Field(0.05, ge=0.0, lt=1.0, description="ACCEPT within this of the incumbent")
    suspicious_speedup: float = Field(SUSPICIOUS_SPEEDUP, gt=1.0, description="a pass this many times faster than "
                                      "the reference on a workload is confirmed by a second, fresh child")
    r_draft: int = Field(4, ge=1, description="plateau count at which an agent drafts")
    plateau: int | None = Field(12, ge=1, description="STOP when every agent's plateau count reaches it")
    target_speedup: float | None = Field(None, gt=0)
    target_against: Literal["reference", "baseline"] = Field("reference", description="what target_speedup is a "
                                                             "speedup over")
    baseline: Literal["once", "every", "off"] = Field("once", description="children that time the problem's "
                                                      "baseline: the first on each GPU (later ones read theirs "
                                                      "through the reference), every one, or none")
    time_limit_s: float | None = Field(None, gt=0)
    candidate_timeout_s: float = Field(300.0, gt=0, description="wall clock per guard child")
    # On: measured faster on the H200 with the same decisions (bench/results/pipeline-h200.json).
    pipeline: bool = Field(True, description="on a GPU, the next child prepares (imports, compiles) while one "
                                              "is checked and timed")
    child_memory_gib: float | None = Field(None, gt=0, description="resident host memory per guard child "
                                           "[half the machine's]")
    seeds: int = Field(5, ge=1, le=32, description="correctness seeds per workload")
    split_budget: bool = Field(False, description="each agent gets budget // agents positions (ablations)")
    rng_seed: int = 0
    max_relaunches: int = Field(3, ge=0)

    @field_validator("gpus")
    @classmethod
    def _gpus_spelled_right(cls, value: str) -> str:
        if not re.match(GPUS_PATTERN, value):
            raise ValueError(f"{value!r} is not all, a count (2) or a list of GPU indices (0,1)")
        return value

    @model_validator(mode="after")
    def _budget_covers_agents(self) -> CampaignConfig:
        if self.budget < self.agents:
            raise ValueError(f"budget ({self.budget}) is smaller than the number of agents ({self.agents})")
        return self


# What a user writes (flags, ARCENGINE_* variables, config-file keys) is the flags' names; these differ from the
# field names the event log records (and old logs keep), so they are translated at the edge. A config file written
# with a field name still works, with a warning.
USER_KEYS: dict[str, str] = {"max_cost": "max_cost_usd", "time_limit": "time_limit_s", "target": "target_speedup",
                             "child_memory": "child_memory_gib"}
DEPRECATED_KEYS: dict[str, str] = {field: key for key, field in USER_KEYS.items()}
FILE_ONLY_KEYS: tuple[str, ...] = ("margin", "near_band", "suspicious_speedup", "r_draft", "candidate_timeout_s",
                                   "provider_timeout_s", "provider_retries", "split_budget", "rng_seed",
                                   "max_relaunches")  # settings no flag sets (tests/test_cli_options.py checks)


def describe_validation_error(error: ValidationError, spelled: dict[str, str] | None = None) -> str:
    """One line naming the setting as the user spelled it (``max_cost``, not the field ``max_cost_usd``)."""
    first = error.errors()[0]
    loc = [str(p) for p in first["loc"]]
    if loc and spelled:
        loc[0] = spelled.get(loc[0], loc[0])
    where = ".".join(loc) or "config"
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"


def read_settings(file: Path | None, overrides: dict[str, Any],
                  warn: Callable[[str], None] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings ``file`` (TOML) and then ``overrides`` (what the user gave: flags or ARCENGINE_* variables; None
    means not given) set, by field name, unvalidated; and how the user spelled each (for error lines)."""
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    if file is not None:
        try:
            written = tomllib.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {file} does not exist") from None
        except OSError as error:
            raise ConfigError(f"config file {file}: {error.strerror or error}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise ConfigError(f"config file {file}: {error}") from None
        for key, value in written.items():
            if key in DEPRECATED_KEYS and DEPRECATED_KEYS[key] in written:
                raise ConfigError(f"config file {file}: {key} and {DEPRECATED_KEYS[key]} are the same setting; "
                                  f"keep {DEPRECATED_KEYS[key]}")
            if key in DEPRECATED_KEYS and warn is not None:
                warn(f"config file {file}: {key} is deprecated, write {DEPRECATED_KEYS[key]} (the flag's name)")
            field = USER_KEYS.get(key, key)
            values[field], spelled[field] = value, key
    for key, value in overrides.items():
        if value is not None:
            field = USER_KEYS.get(key, key)
            values[field], spelled[field] = value, key
    if isinstance(values.get("memory_cap"), str) and values["memory_cap"].lower() == "none":
        values["memory_cap"] = None
    return values, spelled


def validate(values: dict[str, Any], spelled: dict[str, str] | None = None) -> CampaignConfig:
    try:
        return CampaignConfig(**values)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, spelled)) from None


def build_config(file: Path | None, overrides: dict[str, Any],
                 warn: Callable[[str], None] | None = None) -> CampaignConfig:
    """Values from ``file`` (TOML), then ``overrides`` (flags the user gave; None means not given), validated."""
    return validate(*read_settings(file, overrides, warn))
