"""``arcengine ablate``: the paper's fixed-budget ablation. K campaigns (trajectories) per configuration, each
with the same total budget split evenly across its agents (every candidate, rejected ones too, uses one
position), run one after another on the same device, then one report comparing the configurations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from arcengine.engine.campaign import Campaign, Display
from arcengine.engine.config import ConfigError, validate
from arcengine.tools.report import write_report

# What each configuration changes; the rest comes from the user's settings.
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "single": {"agents": 1, "memory": "private"},
    "multi-bounded": {"memory": "shared", "memory_cap": 16},
    "multi-unbounded": {"memory": "shared", "memory_cap": None},
}


def configurations(names: str) -> list[str]:
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in CONFIGURATIONS]
    if unknown or not chosen:
        raise ConfigError(f"unknown configuration {', '.join(unknown) or '(none)'}; "
                          f"choose from {', '.join(CONFIGURATIONS)}")
    return chosen


async def ablate(base: dict[str, Any], names: list[str], trajectories: int, out: Path,
                 display: Callable[[str, int], Display | None] | None = None) -> Path:
    """Run every configuration ``trajectories`` times; return the report folder. ``base`` holds the settings the
    user gave (the configuration's own and the ablation's override them)."""
    run_dirs: list[Path] = []
    for name in names:
        for trajectory in range(trajectories):
            # No plateau STOP unless the user set one: every campaign spends its whole budget.
            settings = {"plateau": None, **base, **CONFIGURATIONS[name], "out": out / name, "split_budget": True,
                        "rng_seed": base.get("rng_seed", 0) + trajectory}
            config = validate(settings)
            summary = await Campaign(config, display=display(name, trajectory) if display else None).run()
            run_dirs.append(Path(summary.run_dir))
    return write_report(run_dirs, out / "report")
