"""Reading replies (the kernel file, strategy, rationale, conclusions) and pricing calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from arcengine.providers.base import ProviderError
from arcengine.providers.pricing import Price, PriceTable, load_prices
from arcengine.providers.reply import parse_reflection, parse_reply

KERNEL = "import torch\n\n\ndef run(x):\n    return x * 2 + 1\n"


def test_the_block_that_defines_run_is_the_file_with_strategy_and_rationale() -> None:
    reply = (f"**Strategy:** one pass\nRationale: fewer launches.\n```python\nTUNABLES = {{}}\n```\n"
             f"```python\n{KERNEL}```\n")
    parsed = parse_reply(reply, "memory")
    assert parsed.source == KERNEL and parsed.strategy == "one pass" and parsed.rationale == "fewer launches."


@pytest.mark.parametrize(("reply", "reason"), [
    ("I cannot help with that.", "no fenced python block"),
    ("```python\nimport torch\n```", "does not define run"),
])
def test_a_reply_without_usable_code_is_a_provider_error(reply: str, reason: str) -> None:
    with pytest.raises(ProviderError, match=reason):
        parse_reply(reply, "memory")


def test_a_reply_without_the_form_falls_back_to_its_text() -> None:
    assert parse_reply(f"```\n{KERNEL}```", "memory").strategy == "memory"
    assert parse_reflection("Summary: wide rows win\nReflection: 8 warps hide latency\nat N=8192") == (
        "wide rows win", "8 warps hide latency\nat N=8192")
    assert parse_reflection("Bigger blocks helped.") == ("Bigger blocks helped.", "Bigger blocks helped.")


def test_prices_match_names_and_snapshots_only_and_can_be_overridden(tmp_path: Path) -> None:
    table = PriceTable()
    assert table.price("gpt-4o-2024-08-06") == table.price("gpt-4o")
    assert table.price("claude-opus-4-20250514") == table.price("claude-opus-4")
    assert table.price("gpt-5-pro") is None and table.price("my-local-model") is None
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."my-local-model"]\ninput = 1.0\noutput = 2.0\n')
    table = PriceTable.with_overrides(prices)
    assert table.price("my-local-model") == Price(1.0, 2.0, 1.0)
    # 1M uncached input, 1M cached, 1M written to the cache, 1M output
    assert Price(3.0, 15.0, 0.3, 3.75).cost(10**6, 10**6, 10**6, 10**6) == pytest.approx(22.05)
    prices.write_text('[models."broken"]\ninput = "cheap"\n')
    with pytest.raises(ProviderError, match="broken"):
        load_prices(prices)
