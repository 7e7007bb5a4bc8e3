"""How a report writes its figures, the same in markdown and in HTML: speedups as "1.234x", a missing figure as
an en dash, a workload by its axes, times in UTC."""

from __future__ import annotations

from datetime import UTC, datetime

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


def when(ts: float | None) -> str:
    """An event's time in UTC, e.g. "2026-12-03 14:01:45 UTC" (a report reads the same in every time zone)."""
    if ts is None:
        return MISSING
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(seconds: float | None) -> str:
    """A span of time, e.g. "1 h 02 min", "3 min 07 s", "42 s"."""
    if seconds is None:
        return MISSING
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
