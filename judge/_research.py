"""Accuracy of research answers against the world's keys (entity-performance and brief items).

A research amount is in millions of a reporting currency for a period and basis. An answer states
it right when a figure equals the key at the precision it is written in (``$1.2 billion``,
``$1,204 million`` and ``1,204.3`` under a "(USD millions)" header all state 1,204.3 million),
with at least two significant digits, in the right currency. A figure in another currency, a
thousands figure read as millions, a prior-year or non-GAAP figure, a decoy's or an original
figure where the key is restated: none equals the key, so the fact is not stated. Facts about one
company of several (peer rankings) count only in the lines that name that company, and a
figure whose line names another fiscal year than the key's is for the wrong period. Brief items'
ERP facts are checked as obligations are.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from judge import _extract as x

if TYPE_CHECKING:
    from judge._rules import RuleContext, Verdict
from ledgerbench.dataset import ExpectedFact

SCALES = {"units": 1.0, "thousands": 1e3, "millions": 1e6, "billions": 1e9}
CURRENCY_MARKS = {
    "USD": ("$", "USD", "US$", "dollar"),
    "EUR": ("€", "EUR", "euro"),
    "GBP": ("£", "GBP", "pound", "sterling"),
}
_MARK = re.compile(r"US\$|[$€£]|\b(?:USD|EUR|GBP)\b", re.IGNORECASE)
_NOT_PUBLISHED = re.compile(
    r"\bnot (?:yet )?(?:been )?(?:reported|disclosed|published|released|available|public|made "
    r"public|out)\b|\bhas(?: not|n't) (?:yet )?(?:reported|disclosed|published|released)\b|"
    r"\bdoes(?: not|n't) (?:disclose|publish|report)\b|\bno (?:figure|figures|data) "
    r"(?:is |are )?(?:disclosed|published|available)\b|\bundisclosed\b",
    re.IGNORECASE,
)
_YEAR_LABEL = re.compile(r"\b(?:FY|fiscal(?: year)?\s*)'?(\d{2,4})\b", re.IGNORECASE)
_LEGAL_SUFFIX = re.compile(
    r"\s+(?:Inc\.?|LLC|Corp\.?|Co\.|GmbH & Co\. KG|GmbH|AG|SE|KG|Ltd|PLC|plc|& Co\.|Group)$"
)


def short_name(name: str) -> str:
    previous = None
    while previous != name:
        previous, name = name, _LEGAL_SUFFIX.sub("", name).strip()
    return name


def _name_position(answer: str, name: str) -> int | None:
    return x.find_phrase_position(answer, name) if name else None


def name_in(answer: str, name: str) -> bool:
    """A company (or other) name, with or without its legal suffix."""
    return _name_position(answer, name) is not None or (
        short_name(name) != name and _name_position(answer, short_name(name)) is not None
    )


def _subject_scope(answer: str, fact: ExpectedFact) -> str:
    """The lines naming the fact's company, when the item has facts about several."""
    if not fact.subject:
        return answer
    lines = [line for line in answer.splitlines() if name_in(line, fact.subject)]
    return "\n".join(lines)


def _mention_currency(text: str, start: int, end: int) -> str | None:
    """The currency written with a figure (a sign or code just before it, or a code after it)."""
    match = _MARK.search(text[max(0, start - 6) : end])
    if match is None:
        return None
    mark = match.group(0).upper()
    return {"$": "USD", "US$": "USD", "€": "EUR", "£": "GBP"}.get(mark, mark)


def _line_of(text: str, start: int) -> str:
    left = text.rfind("\n", 0, start) + 1
    right = text.find("\n", start)
    return text[left : right if right != -1 else len(text)]


def _years_in(line: str) -> set[int]:
    years = set()
    for match in _YEAR_LABEL.finditer(line):
        year = int(match.group(1))
        years.add(year + 2000 if year < 100 else year)
    return years


def _period_year(fact: ExpectedFact) -> int | None:
    match = re.match(r"FY(\d{4})", fact.period or "")
    return int(match.group(1)) if match else None


def check_research_amount(answer: str, fact: ExpectedFact) -> tuple[bool, str]:
    """(stated right, reason) for an amount with a scale (research keys)."""
    expected = float(fact.value) * SCALES[fact.scale or "units"]
    text = _subject_scope(answer, fact)
    says_millions = re.search(r"\bmillions?\b|\bmn\b|\(m\)", answer, re.IGNORECASE) is not None
    wrong_currency = None
    wrong_period = None
    for mention in x.find_numbers(text):
        if mention.is_percent or not mention.affirmative:
            continue
        readings = [(mention.value, mention.precision)]
        if abs(mention.value) < 1e6 and says_millions:
            readings.append((mention.value * 1e6, mention.precision * 1e6))
        for value, precision in readings:
            if precision > abs(expected) / 20 + 1e-9:  # fewer than two significant digits
                continue
            allowed = max(fact.tolerance * SCALES[fact.scale or "units"], precision) + 1e-6
            if abs(value - expected) > allowed:
                continue
            currency = _mention_currency(text, mention.start, mention.end)
            if currency and fact.unit in CURRENCY_MARKS and currency != fact.unit:
                wrong_currency = currency
                continue
            year = _period_year(fact)
            years = _years_in(_line_of(text, mention.start))
            if year is not None and years and year not in years and len(years) == 1:
                wrong_period = years.pop()
                continue
            return True, ""
    if wrong_currency:
        return False, f"states the figure in {wrong_currency}, the key is in {fact.unit}"
    if wrong_period:
        return False, f"states the figure for fiscal {wrong_period}, the key is {fact.period}"
    return False, ""


def check_research_fact(answer: str, fact: ExpectedFact) -> tuple[bool, str]:
    """(stated right, detail) for one research fact."""
    if fact.kind == "amount" and fact.scale:
        return check_research_amount(answer, fact)
    scoped = _subject_scope(answer, fact)
    if fact.kind == "percent":
        return x.find_percent(scoped, float(fact.value), fact.tolerance) is not None, ""
    if fact.kind == "not_disclosed":
        return _NOT_PUBLISHED.search(answer) is not None, ""
    if fact.kind in ("name", "text"):
        return name_in(scoped, str(fact.value)), ""
    if fact.kind == "top_n":
        positions = [_first_position(scoped, str(v)) for v in fact.value or []]
        if any(p is None for p in positions):
            return False, "not every one named"
        return (not fact.ordered or positions == sorted(positions)), (
            "" if not fact.ordered or positions == sorted(positions) else "out of order"
        )
    if fact.kind == "id":
        return x.find_id(scoped, str(fact.value)), ""
    if fact.kind == "date":
        return x.find_date(scoped, str(fact.value)), ""
    if fact.kind == "count":
        return x.find_count(scoped, int(fact.value), fact.tolerance), ""
    if fact.kind == "boolean":
        return bool(x.says_boolean(answer, bool(fact.value))), ""
    if fact.kind == "no_records":
        return x.says_no_records(answer) or re.search(r"\bno\b", answer[:80], re.I) is not None, ""
    return False, f"cannot check a {fact.kind} fact"


def _first_position(answer: str, name: str) -> int | None:
    positions = [
        p
        for p in (_name_position(answer, name), _name_position(answer, short_name(name)))
        if p is not None
    ]
    return min(positions) if positions else None


def _account_lines(answer: str, fact: ExpectedFact) -> str:
    """A brief's ERP fact is about one account (``subject`` LE/ACCOUNT): the lines naming it."""
    account = (fact.subject or "").rsplit("/", 1)[-1]
    lines = [line for line in answer.splitlines() if account and x.find_id(line, account)]
    return "\n".join(lines) or answer


def rule_research_facts(ctx: RuleContext) -> Verdict:
    """``accuracy.research_key``: the share of the key's facts the answer states (quarter grid);
    a brief's ERP facts (no scale) are checked as obligations are."""
    from judge._rules import Verdict, _quarter_floor, check_fact

    facts = ctx.question.expected
    erp = tuple(f for f in facts if f.kind == "amount" and not f.scale)
    found, reasons, certain = 0, [], True
    for fact in facts:
        if fact.kind == "amount" and not fact.scale:
            verdict = check_fact(_account_lines(ctx.answer, fact), fact, erp)
            ok, detail = verdict.score == 1.0, verdict.reason
            certain = certain and verdict.certain
        else:
            ok, detail = check_research_fact(ctx.answer, fact)
            certain = certain and (ok or bool(detail))
        found += ok
        shown = fact.value if not isinstance(fact.value, list) else ", ".join(map(str, fact.value))
        subject = f" ({fact.subject})" if fact.subject else ""
        status = "found" if ok else "not found"
        reasons.append(
            f"{fact.field}{subject} {shown}: {status}" + (f", {detail}" if detail else "")
        )
    return Verdict(
        _quarter_floor(found / len(facts)),
        f"{found}/{len(facts)} facts: " + "; ".join(reasons),
        certain=certain,
    )
