"""Reading a generated question with the generator's own grammar.

The scripted agent is a tool-sufficiency baseline: it knows every phrasing the question generator
uses (:mod:`synthetic_erp.scenarios`), so it can tell which question kind a text is and what fills
each slot (the party, the legal entity, the window), and then has to answer it through the MCP
tools alone. Relative words ("today", "last month", "in the next 7 days") are resolved here
against the ERP's frozen today from ``erp_info``; a question that names no legal entity is about
the ERP's default legal entity, which ``erp_info`` also reports.
"""

from __future__ import annotations

import datetime as dt
import re
import string
from dataclasses import dataclass
from functools import cache

from harnesses.scripted._base import ACCOUNT_ID, Question, find_dates

_DATE = r"[A-Z][a-z]+ \d{1,2}, \d{4}"
SLOTS: dict[str, str] = {
    "where": r"(?:in legal entity |in the |in |within )[A-Z]{4}(?: company)?|"
    r"across all legal entities|in all legal entities|in every legal entity",
    "asof": rf"as of {_DATE}|as of \d{{4}}-\d{{2}}-\d{{2}}|on {_DATE}|as of today|today|right now|"
    r"at the moment",
    "n": r"\d+",
    "days": r"\d+",
    "group_id": r"\w+",
    "rating": r"\w+",
    "currency": r"[A-Z]{3}",
    "agent": r"\S+",
    "journal_id": r"\S+",
    "codes": r"[A-Z]+ and [A-Z]+",
    "period": r"last month|over the last 12 months|in the past year|last quarter|so far this year|"
    rf"year to date|so far this month|this month|between {_DATE} and {_DATE}|"
    rf"from {_DATE} to {_DATE}",
    "horizon": rf"(?:in|over|within) the next \d+ days|between {_DATE} and {_DATE}|by {_DATE}|"
    r"this week",
    "day": rf"today|yesterday|tomorrow|on {_DATE}",
    "month": r"this month|last month|in [A-Z][a-z]+ \d{4}",
    "next_month": r"next month|in [A-Z][a-z]+ \d{4}",
    "status_label": r"pending approval|unposted \(in the invoice register\)|"
    r"approved but not yet posted",
    "release_label": r"open|partially released",
}
OPTIONAL = {"where", "asof"}
FREE_TEXT = (
    r"(?:(?!\s(?:in|within) (?:legal entity |the )?[A-Z]{4}\b|\s(?:across|in) (?:all|every) ).)+?"
)
"""A free slot (party, window): any text that does not run into a legal-entity phrase."""


@dataclass(frozen=True)
class Reading:
    template: str
    slots: dict[str, str]


@cache
def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    from synthetic_erp.scenarios import TEMPLATES

    return [
        (name, _compile(phrasing))
        for name, template in TEMPLATES.items()
        for phrasing in template.phrasings
    ]


def _compile(phrasing: str) -> re.Pattern[str]:
    parts = []
    for literal, field, _, _ in string.Formatter().parse(phrasing):
        parts.append(re.escape(literal).replace(r"\ ", r"\s*"))
        if field:
            body = SLOTS.get(field, FREE_TEXT)
            parts.append(f"(?P<{field}>{body}){'?' if field in OPTIONAL else ''}")
    text = "".join(parts)
    for mark in ("?", ".", ",", ":"):
        text = text.replace(r"\s*" + re.escape(mark), r"\s*" + re.escape(mark))
    return re.compile(r"^\s*" + text + r"\s*$")


def read(text: str) -> Reading | None:
    """The question kind and slot texts, when the text is one of the generator's phrasings.

    When several phrasings fit, the one leaving the least text to its free slots wins (it matched
    the most of its own words)."""
    best: tuple[int, Reading] | None = None
    for name, pattern in _patterns():
        match = pattern.match(text)
        if match:
            slots = {k: v.strip() for k, v in match.groupdict().items() if v}
            free = sum(len(v) for k, v in slots.items() if k not in SLOTS)
            if best is None or free < best[0]:
                best = (free, Reading(name, slots))
    return best[1] if best else None


def question_from(
    text: str, reading: Reading, today: dt.date, legal_entities: list[str], default_le: str | None
) -> Question:
    """A :class:`Question` with every field taken from the slots (relative dates resolved)."""
    slots = reading.slots
    where = slots.get("where", "")
    code = re.search(r"\b([A-Z]{4})\b", where)
    all_entities = bool(re.search(r"\ball\b|\bevery\b", where))
    legal_entity = code.group(1) if code and code.group(1) in legal_entities else None
    if not where:
        legal_entity = default_le
    as_of = _as_of(slots.get("asof", ""), today)
    start = end = single = None
    for key in ("period", "horizon", "next_month", "month"):
        if key in slots:
            start, end = resolve_window(slots[key], today)
    if "day" in slots:
        single = resolve_day(slots["day"], today)
    who = slots.get("who")
    return Question(
        text=text,
        lower=text.lower(),
        as_of=as_of,
        start=start,
        end=end,
        single_date=single,
        legal_entity=legal_entity,
        all_entities=all_entities,
        accounts=ACCOUNT_ID.findall(who or ""),
        n=int(slots["n"]) if "n" in slots else None,
        days=_days(slots),
        currency=slots.get("currency"),
        group_id=slots.get("group_id"),
        who=who,
    )


def _days(slots: dict[str, str]) -> int | None:
    if "days" in slots:
        return int(slots["days"])
    match = re.search(r"next (\d+) days", slots.get("horizon", ""))
    return int(match.group(1)) if match else None


def _as_of(text: str, today: dt.date) -> dt.date:
    dates = find_dates(text)
    return dates[0][1] if dates else today


def _month_bounds(first: dt.date) -> tuple[dt.date, dt.date]:
    following = (first + dt.timedelta(days=32)).replace(day=1)
    return first, following - dt.timedelta(days=1)


def _quarter_start(day: dt.date) -> dt.date:
    return dt.date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def resolve_window(text: str, today: dt.date) -> tuple[dt.date, dt.date]:
    """First and last day of a window given in words ("last month", "in the next 7 days",
    "between March 1, 2026 and March 9, 2026", "in April 2026", "by March 9, 2026")."""
    lower = text.lower()
    dates = [day for _, day in find_dates(text)]
    this_month = today.replace(day=1)
    if len(dates) >= 2:
        return dates[0], dates[1]
    if lower.startswith("by ") and dates:
        return today, dates[0]
    match = re.search(r"next (\d+) days", lower)
    if match:
        return today, today + dt.timedelta(days=int(match.group(1)))
    if "this week" in lower:
        monday = today - dt.timedelta(days=today.weekday())
        return monday, monday + dt.timedelta(days=6)
    if "last month" in lower:
        return _month_bounds((this_month - dt.timedelta(days=1)).replace(day=1))
    if "next month" in lower:
        return _month_bounds((this_month + dt.timedelta(days=32)).replace(day=1))
    if "this month" in lower:
        return this_month, today
    if "last quarter" in lower:
        end = _quarter_start(today) - dt.timedelta(days=1)
        return _quarter_start(end), end
    if "12 months" in lower or "past year" in lower:
        return today - dt.timedelta(days=364), today
    if "this year" in lower or "year to date" in lower:
        return dt.date(today.year, 1, 1), today
    month = re.search(r"in ([A-Z][a-z]+) (\d{4})", text)
    if month:
        first = find_dates(f"{month.group(1)} 1, {month.group(2)}")
        if first:
            return _month_bounds(first[0][1])
    return today, today


def resolve_day(text: str, today: dt.date) -> dt.date:
    offsets = {"today": 0, "yesterday": -1, "tomorrow": 1}
    if text.lower() in offsets:
        return today + dt.timedelta(days=offsets[text.lower()])
    dates = find_dates(text)
    return dates[0][1] if dates else today
