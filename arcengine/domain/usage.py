"""A campaign's spending on providers: totals of every call's usage, and the token and dollar budgets."""

from __future__ import annotations

from dataclasses import dataclass, fields

from arcengine.domain.events import Usage


@dataclass
class UsageTotals:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    def add(self, usage: Usage) -> None:
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_tokens += usage.cached_tokens
        self.cost_usd += usage.cost_usd
        self.latency_s += usage.latency_s

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def over_budget(self, max_tokens: int | None, max_cost_usd: float | None) -> str | None:
        """The STOP reason once a budget is spent (calls already in flight still finish and are counted)."""
        if max_tokens is not None and self.tokens >= max_tokens:
            return f"token budget spent: {self.tokens} of {max_tokens} tokens"
        if max_cost_usd is not None and self.cost_usd >= max_cost_usd:
            return f"cost budget spent: ${self.cost_usd:.2f} of ${max_cost_usd:.2f}"
        return None

    def as_dict(self) -> dict[str, float | int]:
        totals = {f.name: getattr(self, f.name) for f in fields(UsageTotals)}  # a subclass's own fields left out
        return {**totals, "cost_usd": round(self.cost_usd, 6), "latency_s": round(self.latency_s, 3)}
