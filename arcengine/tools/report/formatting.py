"""How a report writes its figures, the same in markdown and in HTML: speedups as "1.234x", a missing figure as
an en dash, a workload by its axes."""

from __future__ import annotations

MISSING = "–"


def x(value: float | None) -> str:
    """A speedup, e.g. "1.234x"."""
    return MISSING if value is None else f"{value:.3f}x"


def num(value: float | None, spec: str) -> str:
    return MISSING if value is None else format(value, spec)


def axes(values: dict[str, int]) -> str:
    """A workload by its axes, e.g. "M=1, N=4096"."""
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "(no axes)"


def faster(ratio: float | None) -> str:
    """Whether a gain over the baseline is a gain."""
    return "-" if ratio is None else "yes" if ratio > 1.0 else "no"


def interval(bounds: tuple[float, float] | None) -> str:
    return MISSING if bounds is None else f"[{x(bounds[0])}, {x(bounds[1])}]"
