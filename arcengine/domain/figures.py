"""How a ratio is shown to people and agents: two decimals, or two significant digits below 0.1, so that a
candidate at 0.004x the reference (the Triton interpreter on the CPU) does not read as 0.00x."""

from __future__ import annotations


def times(value: float) -> str:
    """``value`` as a multiple: 1.54x, 27.64x, 0.0042x."""
    return f"{value:.2f}x" if abs(value) >= 0.1 or value == 0 else f"{value:.2g}x"
