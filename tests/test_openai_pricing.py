"""The price table used for cost when a provider reports none."""

from __future__ import annotations

import pytest

from harnesses._pricing import PRICES, Price, estimate_cost, lookup_price, parse_price
from ledgerbench_core.trajectory import Usage


def test_names_and_dated_snapshots_resolve_unknown_models_do_not():
    assert lookup_price("gpt-5.2") == PRICES["gpt-5.2"]
    assert lookup_price("gpt-5.2-2026-01-15") == PRICES["gpt-5.2"]
    assert lookup_price("openai/gpt-5-mini") == PRICES["gpt-5-mini"]
    assert lookup_price("claude-haiku-4-5-20251001") == PRICES["claude-haiku-4-5"]
    assert lookup_price("gpt-5-mini") != lookup_price("gpt-5")
    assert lookup_price("gpt-5-turbo-preview") is None
    assert lookup_price("llama-3.1-8b-instruct") is None
    assert lookup_price(None) is None


def test_cost_charges_cached_input_at_the_cached_price():
    usage = Usage(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=100_000)
    price = Price(input=2.0, cached_input=0.5, output=10.0)
    assert estimate_cost("anything", usage, price) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 1.0)
    assert estimate_cost("no-such-model", usage) is None
    assert estimate_cost("gpt-5.2", Usage()) == 0.0


def test_price_override_parsing():
    assert parse_price("1.25, 0.125, 10") == Price(1.25, 0.125, 10.0)
    for bad in ("1,2", "a,b,c", "1,-1,2"):
        with pytest.raises(ValueError, match="price_per_mtok"):
            parse_price(bad)
