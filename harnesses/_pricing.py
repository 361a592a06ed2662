"""Token prices per model, for a cost figure when the provider reports none.

Prices are US dollars per million tokens, from the providers' public price pages (checked 2026-11).
They drift: a model not in the table gets ``None`` (unknown), never a guess. Dated snapshots match
their base name (``gpt-5.2-2026-01-15`` prices as ``gpt-5.2``). A run can override the table with
``--harness-opt price_per_mtok=INPUT,CACHED_INPUT,OUTPUT``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledgerbench_core.trajectory import Usage


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    cached_input: float
    output: float


PRICES: dict[str, Price] = {
    # OpenAI (reasoning tokens are billed as output tokens and already counted in them)
    "gpt-5.2": Price(1.75, 0.175, 14.0),
    "gpt-5.1": Price(1.25, 0.125, 10.0),
    "gpt-5": Price(1.25, 0.125, 10.0),
    "gpt-5-mini": Price(0.25, 0.025, 2.0),
    "gpt-5-nano": Price(0.05, 0.005, 0.4),
    "gpt-4.1": Price(2.0, 0.5, 8.0),
    "gpt-4.1-mini": Price(0.4, 0.1, 1.6),
    "gpt-4.1-nano": Price(0.1, 0.025, 0.4),
    "gpt-4o": Price(2.5, 1.25, 10.0),
    "gpt-4o-mini": Price(0.15, 0.075, 0.6),
    "o3": Price(2.0, 0.5, 8.0),
    "o4-mini": Price(1.1, 0.275, 4.4),
    # Anthropic (cache reads at 10% of input; cache writes are priced as plain input here)
    "claude-opus-4-5": Price(5.0, 0.5, 25.0),
    "claude-opus-4-1": Price(15.0, 1.5, 75.0),
    "claude-opus-4": Price(15.0, 1.5, 75.0),
    "claude-sonnet-4-6": Price(3.0, 0.3, 15.0),
    "claude-sonnet-4-5": Price(3.0, 0.3, 15.0),
    "claude-sonnet-4": Price(3.0, 0.3, 15.0),
    "claude-haiku-4-5": Price(1.0, 0.1, 5.0),
    "claude-3-5-haiku": Price(0.8, 0.08, 4.0),
}


def parse_price(text: str) -> Price:
    """``"1.25,0.125,10"`` -> :class:`Price`; raises ``ValueError`` with the fix on bad input."""
    parts = [part.strip() for part in text.split(",")]
    try:
        values = [float(part) for part in parts]
    except ValueError:
        values = []
    if len(values) != 3 or any(value < 0 for value in values):
        raise ValueError(
            f"--harness-opt price_per_mtok={text}: expected INPUT,CACHED_INPUT,OUTPUT "
            "in US dollars per million tokens, e.g. price_per_mtok=1.25,0.125,10"
        )
    return Price(*values)


def lookup_price(model: str | None) -> Price | None:
    """The price of ``model`` (exact name or a dated snapshot of a listed name); None if unknown."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    if name in PRICES:
        return PRICES[name]
    matches = [base for base in PRICES if name.startswith(base + "-") and _is_snapshot(name, base)]
    return PRICES[max(matches, key=len)] if matches else None


def _is_snapshot(name: str, base: str) -> bool:
    """``gpt-5.2-2026-01-15``, ``claude-haiku-4-5-20251001`` are snapshots; ``gpt-5-mini`` not."""
    suffix = name[len(base) + 1 :]
    return suffix.replace("-", "").isdigit()


def estimate_cost(model: str | None, usage: Usage, price: Price | None = None) -> float | None:
    """Cost of ``usage`` in US dollars; ``cached_input_tokens`` is a part of ``input_tokens``."""
    price = price or lookup_price(model)
    if price is None:
        return None
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    fresh = usage.input_tokens - cached
    total = fresh * price.input + cached * price.cached_input + usage.output_tokens * price.output
    return round(total / 1_000_000, 8)
