"""What a call costs: list prices in US dollars per million tokens, matched by the longest model-name prefix.

The table holds the vendors' public list prices of the models this release knows (newer models are missing, and
prices change): a user overrides or extends it with a TOML file (``--prices FILE``)::

    [models."claude-sonnet-4-6"]
    input = 3.0          # uncached input
    output = 15.0
    cached_input = 0.30  # input read from the prompt cache
    cache_write = 3.75   # input written to the prompt cache (Anthropic)

A model with no entry costs 0 (right for a local server); the summary says the cost is unknown for it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from arcengine.providers.base import ProviderError


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cached_input: float
    cache_write: float | None = None  # None: writing the cache costs what uncached input costs

    def cost(self, uncached_input: int, cached_input: int, cache_write: int, output: int) -> float:
        write = self.input if self.cache_write is None else self.cache_write
        return (uncached_input * self.input + cached_input * self.cached_input + cache_write * write
                + output * self.output) / 1e6


# A model matches its own name, a dated snapshot of it (NAME-2025...) or NAME-latest: nothing broader, so that a
# newer model is unpriced (and the summary says so) rather than mispriced.
LIST_PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-1": Price(15.0, 75.0, 1.50, 18.75),
    "claude-opus-4-0": Price(15.0, 75.0, 1.50, 18.75),
    "claude-opus-4": Price(15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-4-0": Price(3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-4": Price(3.0, 15.0, 0.30, 3.75),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": Price(0.80, 4.0, 0.08, 1.0),
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-4.1": Price(2.0, 8.0, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4o": Price(2.50, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "o3": Price(2.0, 8.0, 0.50),
    "o4-mini": Price(1.10, 4.40, 0.275),
}


class PriceTable:
    def __init__(self, prices: dict[str, Price] | None = None) -> None:
        self.prices = dict(LIST_PRICES if prices is None else prices)

    @classmethod
    def with_overrides(cls, path: Path | None) -> PriceTable:
        table = cls()
        if path is not None:
            table.prices.update(load_prices(path))
        return table

    def price(self, model: str) -> Price | None:
        for name in (model, model.rsplit("-", 1)[0] if model.endswith("-latest") else None, _undated(model)):
            if name in self.prices:
                return self.prices[name]
        return None


def _undated(model: str) -> str | None:
    """``claude-opus-4-20250514`` -> ``claude-opus-4``; ``gpt-4o-2024-08-06`` -> ``gpt-4o``."""
    match = re.match(r"^(.*?)-20\d{2}(?:-?\d{2}){0,2}$", model)
    return match.group(1) if match else None


def load_prices(path: Path) -> dict[str, Price]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ProviderError(f"price file {path}: {error}") from None
    prices: dict[str, Price] = {}
    for model, entry in (data.get("models") or {}).items():
        try:
            prices[model] = Price(input=float(entry["input"]), output=float(entry["output"]),
                                  cached_input=float(entry.get("cached_input", entry["input"])),
                                  cache_write=float(entry["cache_write"]) if "cache_write" in entry else None)
        except (KeyError, TypeError, ValueError) as error:
            raise ProviderError(f"price file {path}: model {model!r} needs numeric input and output "
                                f"prices per million tokens ({error})") from None
    return prices
