"""The document record and the formatting every renderer shares."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from decimal import Decimal

SOURCE_TYPES = (
    "annual_report",
    "quarterly_report",
    "earnings_release",
    "news",
    "analyst_note",
    "funding_announcement",
    "company_profile",
    "data_vendor",
)
"""Every kind of document in a world (the ``source_type`` filter of search)."""

LINK_BASE = "https://world.ledgerbench.test"
"""The fixed base of document links: RFC 2606 reserves .test, so a link never resolves on the
internet and is the same in every run; the world server resolves its path."""

CURRENCY_NAMES = {"USD": "US dollars", "EUR": "euros", "GBP": "pounds sterling"}
CURRENCY_SIGNS = {"USD": "$", "EUR": "€", "GBP": "£"}
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True)
class StatedFact:
    """A fact as one document states it."""

    fact_id: str
    stated: str
    """The value exactly as written, e.g. ``1,204.3`` or ``$1.2 billion``."""
    scale: str
    """The scale the document states it in: units, thousands, millions or billions."""


@dataclass
class Document:
    doc_id: str
    url: str
    title: str
    source: str
    """Who published it: the company's investor relations, a newswire, a data vendor, ..."""
    source_type: str
    published_at: dt.date
    companies: list[str]
    """Company ids it covers, the main one first."""
    body: str
    """Markdown."""
    facts: list[StatedFact] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


def doc_id(world_id: str, natural_key: str) -> str:
    """A stable, opaque document id (the natural key would let agents guess links)."""
    return "d" + hashlib.sha256(f"{world_id}|{natural_key}".encode()).hexdigest()[:12]


def doc_url(world_id: str, document_id: str, base: str = LINK_BASE) -> str:
    return f"{base}/{world_id}/docs/{document_id}"


def long_date(day: dt.date) -> str:
    return f"{MONTHS[day.month - 1]} {day.day}, {day.year}"


def millions(value: Decimal) -> str:
    """``1204.3`` -> ``1,204.3`` (one decimal, as filings state millions)."""
    return f"{value:,.1f}"


def thousands(value: Decimal) -> str:
    """Millions as thousands: ``1204.3`` -> ``1,204,300``."""
    return f"{int(value * 1000):,}"


def units(value: Decimal) -> str:
    return f"{int(value):,}"


def in_words(value: Decimal, currency: str) -> tuple[str, str]:
    """Millions as news writes them: ``$1.2 billion`` / ``€340.5 million`` and the scale used."""
    sign = CURRENCY_SIGNS[currency]
    negative = value < 0
    magnitude = abs(value)
    if magnitude >= 1000:
        text, scale = f"{sign}{magnitude / 1000:,.1f} billion", "billions"
    else:
        text, scale = f"{sign}{magnitude:,.1f} million", "millions"
    return ("-" + text if negative else text), scale


def percent(numerator: Decimal, denominator: Decimal) -> str:
    return f"{numerator / denominator * 100:.1f}%"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table; numeric columns right-aligned."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
