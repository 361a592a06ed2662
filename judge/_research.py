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

Answers are read as claims (issue 37): "not yet reported" holds only with no figure for the asked
period and the latest reported period named; a "no"/"none" answer must claim no event; a figure
within reach of the key beside the right one, labelled as nothing else, competes with it; a figure
belongs to the company named nearest; a source published after the as-of date backs nothing.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge import _claims as claims
from judge import _extract as x
from ledgerbench_core.dataset import ExpectedFact, Question, TaskType
from ledgerbench_core.trajectory import TrajectoryRecord

if TYPE_CHECKING:
    from judge._rules import RuleContext, Verdict

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


def _subject_scope(answer: str, fact: ExpectedFact, subjects: tuple[str, ...] = ()) -> str:
    """The lines naming the fact's company, when the item has facts about several; in a line
    naming several of ``subjects``, a figure belongs to the company named nearest to it
    ("Keystone 5.2% ... against Summit 3.6%", "grew 11.7% ..., against 1.4% for Welch"), and
    the figures of the others are blanked."""
    if not fact.subject:
        return answer
    lines = [line for line in answer.splitlines() if name_in(line, fact.subject)]
    others = [s for s in subjects if s != fact.subject]
    return "\n".join(_own_figures(line, fact.subject, others) for line in lines)


def _name_spans(line: str, name: str) -> list[tuple[int, int]]:
    spans = []
    for written in dict.fromkeys((name, short_name(name))):
        spans += [m.span() for m in re.finditer(re.escape(written), line, re.IGNORECASE)]
    return spans


def _own_figures(line: str, subject: str, others: list[str]) -> str:
    """``line`` with the figures nearer another company's name than ``subject``'s blanked."""
    theirs = [span for other in others for span in _name_spans(line, other)]
    if not theirs:
        return line
    ours = _name_spans(line, subject)

    def distance(spans: list[tuple[int, int]], start: int, end: int) -> int:
        return min((max(a - end, start - b, 0) for a, b in spans), default=len(line))

    for mention in reversed(x.find_numbers(line)):
        start, end = mention.start, mention.end
        if distance(theirs, start, end) < distance(ours, start, end):
            line = line[:start] + " " * (end - start) + line[end:]
    return line


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


def check_research_amount(
    answer: str, fact: ExpectedFact, subjects: tuple[str, ...] = ()
) -> tuple[bool, str]:
    """(stated right, reason) for an amount with a scale (research keys)."""
    expected = float(fact.value) * SCALES[fact.scale or "units"]
    text = _subject_scope(answer, fact, subjects)
    says_millions = re.search(r"\bmillions?\b|\bmn\b|\(m\)", answer, re.IGNORECASE) is not None
    wrong_currency = None
    wrong_period = None
    for mention in x.find_numbers(text):
        if mention.is_percent or not mention.affirmative:
            continue
        readings = [(mention.value, mention.precision)]
        if abs(mention.value) < 1e6 and says_millions:
            readings.append((mention.value * 1e6, mention.precision * 1e6))
        key_precision = fact.tolerance * SCALES[fact.scale or "units"]
        for value, precision in readings:
            # Coarser than the key: at least two significant digits ("$1.2 billion", not "$1bn").
            if precision > key_precision + 1e-6 and precision > abs(expected) / 20 + 1e-9:
                continue
            allowed = max(key_precision, precision) + 1e-6
            if abs(value - expected) > allowed:
                continue
            currency = _mention_currency(text, mention.start, mention.end)
            if currency and fact.currency in CURRENCY_MARKS and currency != fact.currency:
                wrong_currency = currency
                continue
            year = _period_year(fact)
            years = _years_in(without_link_labels(_line_of(text, mention.start)))
            if year is not None and years and year not in years and len(years) == 1:
                wrong_period = years.pop()
                continue
            return True, ""
    if wrong_currency:
        return False, f"states the figure in {wrong_currency}, the key is in {fact.currency}"
    if wrong_period:
        return False, f"states the figure for fiscal {wrong_period}, the key is {fact.period}"
    return False, ""


# -- what an answer claims beside the key's figure -------------------------------------------------

_YEAR_NAMED = re.compile(
    r"\b(?:FY\s?|fiscal(?:\s+year)?\s+)'?(\d{4}|\d{2})\b|(?<![\w.,$€£-])((?:19|20)\d{2})(?![\w.,%])",
    re.IGNORECASE,
)
_CONTRAST = re.compile(
    r"\b(?:from|versus|vs\.?|compared|against|prior|previous(?:ly)?|last\s+year|year\s+earlier|"
    r"year-ago|restated|originally|original|initially|preliminary|guidance|forecasts?|expect\w*|"
    r"estimates?|estimated|consensus|targets?|budget\w*|plan(?:ned)?|outlook|projected)\b",
    re.IGNORECASE,
)
_METRIC_WORDS = re.compile(
    r"\b(?:revenues?|sales|turnover|net\s+(?:income|loss|profit|earnings|debt)|"
    r"operating\s+(?:income|profit|loss|cash\s+flow|margin)|EBITDA|EBIT|gross\s+(?:profit|margin)|"
    r"free\s+cash\s+flow|cash\s+flow|capital\s+expenditures?|capex|total\s+(?:debt|assets|raised)|"
    r"debt|cash|assets|liabilities|equity|(?:post|pre)[-\s]money(?:\s+valuation)?|valuation|"
    r"raised|rounds?|fines?|penalt(?:y|ies)|dividends?|buybacks?|market\s+cap\w*|"
    r"share\s+price|price|employees|headcount|backlog|bookings|income|profit|margin|"
    r"payables?|receivables?|balances?|owed|overdue)\b",
    re.IGNORECASE,
)


_FIELD_WORDS = {
    "cash_from_operations": "operating cash flow",
    "market_cap": "market capitalisation capitalization value",
    "total_raised": "raised funding rounds",
    "post_money_valuation": "valuation",
    "revenue": "sales turnover",
    "net_income": "profit earnings",
    "operating_income": "profit",
    "fine": "penalty",
    # a share of revenue is named with it ("31.3% of fiscal 2024 revenue came from ...")
    "product_share": "revenue",
    "regional_share": "revenue",
}
"""Words an answer may name a key's field with besides the field's own."""


def _own_metric(phrase: str, own: set[str]) -> bool:
    """Whether a metric phrase of a label names the fact's own field ("market capitalisation"
    for ``market_cap``)."""
    words = [w for w in re.split(r"[-\s]+", phrase) if w]
    return all(any(w.startswith(o) or o.startswith(w) for o in own if o) for w in words)


def _years_named(text: str) -> set[int]:
    """The years a piece of an answer names (``FY2025``, "fiscal 25", 2025), dates aside."""
    years = set()
    for match in _YEAR_NAMED.finditer(x._blank_dates(x.prose(text))):
        year = int(match.group(1) or match.group(2))
        years.add(year + 2000 if year < 100 else year)
    return years


def _figure_mentions(text: str) -> list[x.NumberMention]:
    """The figures an answer affirms: amounts and percentages, not years, ranks or small counts."""
    return [m for m in x.find_numbers(text) if m.affirmative and not _year_or_rank(m)]


def _readings(text: str, mention: x.NumberMention) -> list[tuple[float, float]]:
    """(value in units, precision) of a figure: a bare one in an answer that speaks of millions
    may be in millions."""
    readings = [(mention.value, mention.precision)]
    speaks_millions = re.search(r"\bmillions?\b|\bmn\b|\(m\)", text, re.IGNORECASE)
    if abs(mention.value) < 1e6 and speaks_millions and not mention.is_percent:
        readings.append((mention.value * 1e6, mention.precision * 1e6))
    return readings


def _states_key_figure(
    readings: list[tuple[float, float]], percent: bool, facts: tuple[ExpectedFact, ...]
) -> bool:
    """Whether a figure states one of the key's figures (at the precision it is written in)."""
    for fact in facts:
        # ERP amounts too; a multiple or a runway in months is a figure of the key as well
        numeric = fact.kind == "percent" if percent else fact.kind in ("amount", "ratio")
        if not numeric:
            continue
        scale = 1.0 if percent or fact.kind == "ratio" else SCALES[fact.scale or "units"]
        expected = float(fact.value) * scale
        for value, precision in readings:
            allowed = max(precision, fact.tolerance * scale) + 1e-6
            if abs(abs(value) - abs(expected)) <= allowed:
                return True
    return False


_LABEL_END = re.compile(r"[:;,()\[\n]")
_PERIOD_LABEL_END = re.compile(r"[:;,)\[\n]")


def _segment(
    text: str, mention: x.NumberMention, mentions: list[x.NumberMention]
) -> tuple[str, str]:
    """The words that label a figure: its clause from the figure before it, and what follows it
    up to the next figure or break, not the next figure's label: (for its metric, for its period:
    a parenthesis after it may name the year, "$1,158.0 million (fiscal 2024)")."""
    unit = claims.unit_of(text, mention.start)
    start, end = (unit.start, unit.end) if unit else (0, len(text))
    for other in mentions:
        if start <= other.end <= mention.start and other is not mention:
            start = max(start, other.end)
        if mention.end <= other.start < end:
            end = min(end, other.start)
    after = mention.end
    if text[mention.start : mention.end].rstrip().endswith(")"):  # the figure closed a bracket
        after = text.rfind(")", mention.start, mention.end)
    short = _LABEL_END.search(text, after, end)
    long = _PERIOD_LABEL_END.search(text, after + 1, end)
    return (
        without_link_labels(text[start : short.start() if short else end]),
        without_link_labels(text[start : long.start() if long else end]),
    )


_LINK_LABEL = re.compile(r"\[[^\]\n]*\]\([^)\s]*\)")


def _column_header(text: str, position: int) -> str:
    """The header of the markdown table column a figure sits in ("Post-money"), or "" outside a
    table: a cell's metric is named in its column, not in its row."""
    line_start = text.rfind("\n", 0, position) + 1
    line_end = text.find("\n", position)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    if not line.lstrip().startswith("|"):
        return ""
    column = text[line_start:position].count("|") - 1
    header = None
    cursor = line_start
    while cursor > 0:  # up through the table to its first line, the header
        previous_start = text.rfind("\n", 0, cursor - 1) + 1
        previous = text[previous_start : cursor - 1]
        if not previous.lstrip().startswith("|"):
            break
        header, cursor = previous, previous_start
    if header is None or header == line:
        return ""
    cells = [cell.strip() for cell in header.strip().strip("|").split("|")]
    return cells[column] if 0 <= column < len(cells) else ""


def without_link_labels(text: str) -> str:
    """Markdown links blanked: a source's title ("annual report fiscal 2024") labels no figure."""
    return _LINK_LABEL.sub(lambda m: " " * len(m.group(0)), text)


def _shown_figure(text: str, mention: x.NumberMention) -> str:
    left = max(0, mention.start - 3)
    return " ".join(text[left : mention.end].split()).lstrip("(:* ")


def competing_figure(
    answer: str, fact: ExpectedFact, facts: tuple[ExpectedFact, ...] = ()
) -> str | None:
    """A figure the answer affirms for the same research amount or percentage beside the right
    one ("another reading: $1,250.0 million"): within 10% of the key (a percentage: within a
    point), not the key at the precision written
    (a coarser "$1.2 billion" agrees), no other figure of the key, in the key's currency, and
    labelled with nothing that makes it another figure: another metric ("total debt of"),
    another fiscal year, or a comparison ("up from", "guidance", "originally")."""
    subjects = tuple(dict.fromkeys(f.subject for f in facts if f.subject))
    text = _subject_scope(answer, fact, subjects)
    percent = fact.kind == "percent"
    scale = 1.0 if percent else SCALES[fact.scale or "units"]
    expected = float(fact.value) * scale
    # A percentage competes within a percentage point (or 10%); an amount within 10%.
    reach = max(0.10 * abs(expected), 1.0) if percent else 0.10 * abs(expected)
    coarsest = 0.5 if percent else abs(expected) / 20
    own = {*fact.field.lower().split("_"), *_FIELD_WORDS.get(fact.field, "").split()}
    period = _period_year(fact)
    others = tuple(f for f in facts if f is not fact)
    mentions = _figure_mentions(text)
    for mention in mentions:
        if mention.is_percent is not percent or not expected or _counts_shares(text, mention):
            continue
        readings = [(mention.value, mention.precision)] if percent else _readings(text, mention)
        if _states_key_figure(readings, percent, (fact, *others)):
            continue
        near = any(
            abs(value - expected) <= reach and precision <= coarsest
            for value, precision in readings
        )
        currency = _mention_currency(text, mention.start, mention.end)
        if not near or (currency and fact.currency in CURRENCY_MARKS and currency != fact.currency):
            continue
        label, period_label = _segment(text, mention, mentions)
        label += " " + _column_header(text, mention.start)  # a table cell: its column says
        years = _years_named(period_label)
        if (period is not None and years - {period}) or _CONTRAST.search(label):
            continue
        metrics = [m.group(0).lower() for m in _METRIC_WORDS.finditer(label)]
        if any(not _own_metric(m, own) for m in metrics):
            continue
        return _shown_figure(text, mention)
    return None


_SHARE_COUNT = re.compile(
    r"\s*(?:(?:million|billion|thousand|mn|bn|m)\s+)?(?:common\s+)?shares\b", re.IGNORECASE
)


def _counts_shares(text: str, mention: x.NumberMention) -> bool:
    """Whether a figure counts shares ("158.3 million shares outstanding"): no money amount."""
    return _SHARE_COUNT.match(text, mention.end) is not None


def _clause_names_asked(answer: str, mention: x.NumberMention, fact: ExpectedFact) -> bool:
    """Whether a figure is stated for the fact said not to be published: its clause names the
    asked fiscal year or no year at all (a fact without a period: the metric named last before
    it is the fact's)."""
    unit = claims.unit_of(answer, mention.start)
    clause = answer[unit.start : unit.end] if unit else answer
    asked = _period_year(fact)
    if asked is None:  # the metric named last before the figure is the fact's
        before = answer[unit.start if unit else 0 : mention.start]
        named = [m.group(0).lower() for m in _METRIC_WORDS.finditer(before)]
        own = {*fact.field.lower().split("_"), *_FIELD_WORDS.get(fact.field, "").split()}
        return bool(named) and _own_metric(named[-1], own)
    years = _years_named(clause)
    return not years or asked in years


def check_not_published(
    answer: str, fact: ExpectedFact, facts: tuple[ExpectedFact, ...] = ()
) -> tuple[bool, str]:
    """A "not disclosed / not yet reported" fact is stated when the answer says so, states no
    figure for it (a figure in a clause about the asked year, or about no year, that is none of
    the key's), and, for a period not yet reported, names the latest period that is (or, when the
    key has none, the period that is not)."""
    if _NOT_PUBLISHED.search(x.prose(answer)) is None:
        return False, ""
    others = tuple(f for f in facts if f is not fact)
    for mention in _figure_mentions(answer):
        if _states_key_figure(_readings(answer, mention), mention.is_percent, others):
            continue
        if _clause_names_asked(answer, mention, fact):
            shown = _shown_figure(answer, mention)
            return False, f"states {shown} for a figure it calls {fact.value}"
    if fact.value == "not yet reported":
        latest = [
            f.period
            for f in others
            if f.period and f.period != fact.period and f.kind != "not_disclosed"
        ]
        if latest and not any(_names_period(answer, p) for p in dict.fromkeys(latest)):
            return False, f"does not name the latest reported period ({latest[0]})"
        if not latest and fact.period and not _names_period(answer, fact.period):
            return False, f"does not say which period is not yet reported ({fact.period})"
    return True, ""


def check_says_none(answer: str, facts: tuple[ExpectedFact, ...] = ()) -> tuple[bool, str]:
    """A "nothing happened" fact (no regulatory action) is stated when the answer says none (or
    answers no) and claims no event: it does not answer yes, and, where the key has no figure,
    states no amount (a fine of $3.1 million is an event)."""
    if x.says_boolean(answer, False) is False:
        return False, "answers yes"
    if not (x.says_no_records(answer) or x.says_boolean(answer, False)):
        return False, ""
    if not any(f.kind == "amount" for f in facts):
        for mention in _figure_mentions(answer):
            if mention.has_currency and not mention.is_percent:
                shown = _shown_figure(answer, mention)
                return False, f"states {shown} for something it says did not happen"
    return True, ""


def check_research_fact(
    answer: str, fact: ExpectedFact, question: Question | None = None
) -> tuple[bool, str]:
    """(stated right, detail) for one research fact; ``question`` (when given) holds the key's
    other facts: the figures an answer may state beside this one, the latest reported period."""
    siblings = tuple(question.expected) if question is not None else (fact,)
    subjects = tuple(dict.fromkeys(f.subject for f in siblings if f.subject))
    if fact.kind == "amount" and fact.scale:
        ok, detail = check_research_amount(answer, fact, subjects)
        if ok and (rival := competing_figure(answer, fact, siblings)):
            return False, f"states {rival} beside it for the same figure"
        return ok, detail
    scoped = _subject_scope(answer, fact, subjects)
    if fact.kind == "percent":
        ok = x.find_percent(scoped, float(fact.value), fact.tolerance) is not None
        if ok and (rival := competing_figure(answer, fact, siblings)):
            return False, f"states {rival} beside it for the same figure"
        return ok, ""
    if fact.kind == "not_disclosed":
        return check_not_published(answer, fact, siblings)
    if fact.kind == "ratio":
        if fact.unit == "months":  # a runway: "8.6 months"
            return _find_months(scoped, float(fact.value), fact.tolerance), ""
        return _find_ratio(scoped, float(fact.value), fact.tolerance), ""
    if fact.kind in ("name", "text"):
        return name_in(scoped, str(fact.value)), ""
    if fact.kind == "top_n":
        return _check_list(scoped, fact)
    if fact.kind == "id":
        return x.find_id(scoped, str(fact.value)), ""
    if fact.kind == "date":
        return x.find_date(scoped, str(fact.value)), ""
    if fact.kind == "count":
        return x.find_count(scoped, int(fact.value), fact.tolerance), ""
    if fact.kind == "boolean":
        said = x.says_boolean(answer, bool(fact.value))
        return bool(said), ("" if said is None else "" if said else "says the opposite")
    if fact.kind == "no_records":
        return check_says_none(answer, siblings)
    return False, f"cannot check a {fact.kind} fact"


_RATIO = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:x\b|×|times\b)", re.IGNORECASE)


def _find_ratio(answer: str, expected: float, tolerance: float) -> bool:
    """A multiple written ``2.35x``, ``2.35 ×`` or ``2.35 times``, within tolerance."""
    return any(
        abs(float(match.group(1)) - expected) <= tolerance + 1e-9
        for match in _RATIO.finditer(answer.replace("**", ""))
    )


_MONTHS = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*months?\b", re.IGNORECASE)


def _find_months(answer: str, expected: float, tolerance: float) -> bool:
    """A span in months written ``8.6 months``, within tolerance."""
    return any(
        abs(float(match.group(1)) - expected) <= tolerance + 1e-9
        for match in _MONTHS.finditer(answer.replace("**", ""))
    )


def _check_list(answer: str, fact: ExpectedFact) -> tuple[bool, str]:
    """Every name of the list stated; for a ranking, in order where the answer first names
    them all, or in one block of it (a table, a list or a paragraph that names them all: an
    analyst answer may discuss the company before it ranks it among its peers)."""
    names = [str(v) for v in fact.value or []]
    positions = [_first_position(answer, name) for name in names]
    if any(p is None for p in positions):
        return False, "not every one named"
    if not fact.ordered or positions == sorted(positions):
        return True, ""
    for block in re.split(r"\n\s*\n", answer):
        inner = [_first_position(block, name) for name in names]
        if None not in inner and inner == sorted(inner):
            return True, ""
    return False, "out of order"


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
    a brief's ERP facts (no scale) are checked as obligations are. An analyst item's facts are
    grouped by ask: each keyed ask counts equally (the share of its facts stated), and a missing
    dealbreaker fact fails the item."""
    from judge._rules import Verdict, _quarter_floor

    facts = ctx.question.expected
    erp = tuple(f for f in facts if f.kind == "amount" and not f.scale)
    asks: dict[str | None, list[bool]] = {}
    reasons, certain, broken = [], True, []
    for fact in facts:
        ok, detail, sure = _check_one(ctx.answer, fact, erp, ctx.question)
        certain = certain and sure
        asks.setdefault(fact.ask, []).append(ok)
        if fact.dealbreaker and not ok:
            broken.append(fact.field)
        shown = fact.value if not isinstance(fact.value, list) else ", ".join(map(str, fact.value))
        subject = f" ({fact.subject})" if fact.subject else ""
        status = "found" if ok else "not found"
        part = f"[{fact.ask}] " if fact.ask else ""
        reasons.append(
            f"{part}{fact.field}{subject} {shown}: {status}" + (f", {detail}" if detail else "")
        )
    found = sum(sum(oks) for oks in asks.values())
    if len(asks) > 1 or None not in asks:
        score = sum(sum(oks) / len(oks) for oks in asks.values()) / len(asks)
        head = f"{found}/{len(facts)} facts in {len(asks)} asks"
    else:
        score, head = found / len(facts), f"{found}/{len(facts)} facts"
    if broken:
        score, head = 0.0, f"dealbreaker missing ({', '.join(broken)}); {head}"
    return Verdict(_quarter_floor(score), f"{head}: " + "; ".join(reasons), certain=certain)


def _check_one(
    answer: str, fact: ExpectedFact, erp: tuple[ExpectedFact, ...], question: Question
) -> tuple[bool, str, bool]:
    """(stated, detail, certain) for one fact of a research key (``question``: its other facts,
    for the claims read beside this one)."""
    from judge._rules import check_fact

    if fact.kind == "amount" and not fact.scale:
        verdict = check_fact(_account_lines(answer, fact), fact, erp)
        return verdict.score == 1.0, verdict.reason, verdict.certain
    if fact.kind == "date" and fact.field.startswith(("customer_", "vendor_")):
        # a brief's ERP date (the last payment) is about one account: read its lines
        ok = x.find_date(_account_lines(answer, fact), str(fact.value))
        return ok, "", ok
    ok, detail = check_research_fact(answer, fact, question)
    return ok, detail, ok or bool(detail)


# -- the world's documents, as a judge reads them --------------------------------------------------

_DOC_LINK = re.compile(r"https?://[^\s<>\"'`|\])]+?/w[0-9a-f]{10}/docs/d[0-9a-f]{12}")


@dataclass(frozen=True)
class WorldDoc:
    doc_id: str
    url: str
    companies: tuple[str, ...]
    body: str
    published_at: str


class WorldResolver:
    """Read-only lookups of a world's documents by link (any host: the path names the world)."""

    def __init__(self, path: str | Path) -> None:
        path = Path(str(path).removeprefix("sqlite:///"))
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        (self.world_id,) = self._conn.execute(
            "SELECT value FROM world_meta WHERE key = 'world_id'"
        ).fetchone()
        self._cache: dict[str, WorldDoc | None] = {}

    def doc(self, link: str) -> WorldDoc | None:
        """The document a link names in this world; None for another world's or no document."""
        match = re.search(r"/(w[0-9a-f]{10})/docs/(d[0-9a-f]{12})", link)
        if match is None or match.group(1) != self.world_id:
            return None
        doc_id = match.group(2)
        with self._lock:
            if doc_id not in self._cache:
                row = self._conn.execute(
                    "SELECT doc_id, url, companies, body, published_at FROM document "
                    "WHERE doc_id = ?",
                    (doc_id,),
                ).fetchone()
                self._cache[doc_id] = (
                    WorldDoc(row[0], row[1], tuple(row[2].split()), row[3], row[4]) if row else None
                )
            return self._cache[doc_id]

    def close(self) -> None:
        self._conn.close()


def world_links(answer: str) -> list[str]:
    """Document links of a research world the answer cites, once each, in order."""
    return list(dict.fromkeys(m.group(0) for m in _DOC_LINK.finditer(answer)))


def canonical(link: str) -> str:
    """A document link without its host: ``/{world_id}/docs/{doc_id}``."""
    match = re.search(r"/w[0-9a-f]{10}/docs/d[0-9a-f]{12}", link)
    return match.group(0) if match else link


# -- what the run read, and the metrics of retrieval and citation ----------------------------------


@dataclass(frozen=True)
class ResearchMetrics:
    """Retrieval and citation of one research answer against its item's gold documents."""

    gold: int
    shown_recall: float | None
    """Share of gold documents among the results the agent's searches returned."""
    fetched_recall: float | None
    """Share of gold documents the agent fetched."""
    cited: int
    citation_precision: float | None
    """Share of the cited world documents that are gold."""
    citation_recall: float | None
    """Share of gold documents the answer cites."""
    searches: int
    fetches: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def research_reads(trajectory: TrajectoryRecord) -> tuple[list[str], list[str]]:
    """(links the searches returned, links fetched), host-free, in order, once each. Documents
    given in the prompt (``--research golden``) count as shown and fetched."""
    given = {canonical(link): None for link in trajectory.given_documents}
    shown: dict[str, None] = dict(given)
    fetched: dict[str, None] = dict(given)
    for call in trajectory.tool_calls:
        base = call.name.split("__")[-1]
        for link in call.documents:
            (fetched if base == "fetch" else shown).setdefault(canonical(link), None)
    return list(shown), list(fetched)


def research_metrics(question: Question, trajectory: TrajectoryRecord) -> ResearchMetrics:
    gold = {canonical(link) for link in question.gold_documents}
    shown, fetched = research_reads(trajectory)
    cited = [canonical(link) for link in world_links(trajectory.answer)]

    def share(found: list[str], of: set[str]) -> float | None:
        return round(len(of & set(found)) / len(of), 4) if of else None

    return ResearchMetrics(
        gold=len(gold),
        shown_recall=share(shown, gold),
        fetched_recall=share(fetched, gold),
        cited=len(cited),
        citation_precision=round(len(gold & set(cited)) / len(cited), 4) if cited else None,
        citation_recall=share(cited, gold),
        searches=sum(1 for c in trajectory.tool_calls if c.name.split("__")[-1] == "search"),
        fetches=len(fetched),
    )


# -- figures as documents state them ---------------------------------------------------------------


_DOC_NUMBER = re.compile(
    r"(?<![\w.,])(-)?[$€£]?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w,]*\d)"
    r"(\s*(?:%|percent\b))?(?:\s*(billion|million|thousand)s?\b)?",
    re.IGNORECASE,
)
_WORD_SCALES = {"billion": 1e9, "million": 1e6, "thousand": 1e3}


@functools.lru_cache(maxsize=4096)
def _doc_values(doc_text: str) -> tuple[tuple[float, float, bool], ...]:
    """(value in units, precision in units, is a percentage) of every figure a document or tool
    result states. A bare figure is read in units and in millions (filings' tables and the world
    tools' JSON), and in thousands where the text says so (data-vendor tables). Documents are
    read plainly (no negation or rounding analysis: they state their figures), and often: the
    same filing backs many answers, so its figures are remembered."""
    scales = (1.0, 1e3, 1e6) if re.search(r"\bthousands\b", doc_text, re.I) else (1.0, 1e6)
    out = []
    for match in _DOC_NUMBER.finditer(doc_text):
        body = match.group(2).replace(",", "")
        decimals = len(body.split(".", 1)[1]) if "." in body else 0
        value = float(body) * (-1 if match.group(1) else 1)
        precision = 0.5 * 10 ** (-decimals)
        if match.group(3):
            out.append((value, precision, True))
        elif match.group(4):
            scale = _WORD_SCALES[match.group(4).lower()]
            out.append((value * scale, precision * scale, False))
        else:
            out += [(value * s, precision * s, False) for s in scales]
    return tuple(out)


def _year_or_rank(mention: x.NumberMention) -> bool:
    """A bare whole number that is a year (fiscal 2025), a rank or a small count, no figure."""
    if mention.is_percent or mention.has_currency or mention.precision != 0.5:
        return False
    value = abs(mention.value)
    return float(value).is_integer() and (value < 100 or 1990 <= value <= 2100)


def _answer_figures(text: str) -> list[tuple[tuple[float, float, bool], ...]]:
    """The figures an answer states, each as its possible readings (value in units, precision,
    is a percentage): a bare figure without a currency, in an answer that speaks of millions,
    may be in millions (a table under a "(USD millions)" header) or in units."""
    millions = re.search(r"\bmillions?\b|\bmn\b", text, re.IGNORECASE) is not None
    out = []
    for mention in x.find_numbers(text):
        if not mention.affirmative or _year_or_rank(mention):
            continue
        reading = (mention.value, mention.precision, mention.is_percent)
        bare = not (mention.is_percent or mention.has_currency) and abs(mention.value) < 1e5
        if bare and millions:
            out.append((reading, (mention.value * 1e6, mention.precision * 1e6, False)))
        else:
            out.append((reading,))
    return out


def _stated_in(figure: tuple, values) -> bool:
    """Whether any reading of the figure is a figure of ``values``."""
    for value, precision, percent in figure:
        for other, other_precision, other_percent in values:
            if (
                percent == other_percent
                and abs(value - other) <= max(precision, other_precision) + 1e-6
            ):
                return True
    return False


def _derived(figure: tuple, question: Question) -> list[ExpectedFact]:
    """The key's computed facts (margin, share, growth, FCF, net debt, total, a multiple or a
    runway in months) a reading of this
    figure states; a figure written without a sign ("fell 2.8%") may state a negative one."""
    found = []
    for value, precision, percent in figure:
        for fact in question.expected:
            numeric = (
                fact.kind == "percent"
                if percent
                else (fact.kind == "amount" and fact.scale) or fact.kind == "ratio"
            )
            if not numeric:
                continue
            scale = 1.0 if percent or fact.kind == "ratio" else SCALES[fact.scale]
            expected = float(fact.value) * scale
            allowed = max(precision, fact.tolerance * scale) + 1e-6
            if min(abs(value - expected), abs(abs(value) - abs(expected))) <= allowed:
                found.append(fact)
    return found


_FIGURE_LINE = re.compile(r"[^\n]+")


def _lines_with_figures(answer: str) -> list[str]:
    return [m.group(0) for m in _FIGURE_LINE.finditer(answer) if x.find_numbers(m.group(0))]


def _needs_link(question: Question) -> bool:
    return any(f.kind not in ("not_disclosed", "no_records") for f in question.expected)


def _item_companies(question: Question, world: WorldResolver) -> set[str]:
    companies = {str(question.metadata.get("company_id", ""))}
    for link in question.gold_documents:
        doc = world.doc(link)
        if doc is not None:
            companies.update(doc.companies)
    return companies - {""}


def _supports(doc: WorldDoc, figures: list, question: Question) -> bool:
    """Whether the document states one of ``figures`` (or the figures a computed one rests on);
    True when there is no figure to check."""
    if not figures:
        return True
    values = _doc_values(doc.body)
    for figure in figures:
        if _stated_in(figure, values):
            return True
        if any(
            canonical(doc.url) in {canonical(link) for link in fact.sources}
            for fact in _derived(figure, question)
        ):
            return True
    return False


def keyed_research(question: Question) -> bool:
    """A research item keyed on a world (its facts name their gold documents)."""
    return question.task_type is not TaskType.obligations and bool(question.gold_documents)


_SOURCES_LINE = re.compile(r"^\W*(?:sources?|references?|citations?)\b", re.IGNORECASE)


def _cited_for(link: str, lines: list[str], every_figure: list) -> list:
    """The figures a link is cited for: those of its line; every figure of the answer for a link
    in a sources list; none for a link on a line without figures (it backs words)."""
    own, only_in_lists = [], True
    for line in lines:
        if link not in line:
            continue
        listing = bool(_SOURCES_LINE.match(line)) or not x.prose(line).strip("\x00 ,;-*")
        if not listing:
            own += _answer_figures(x.prose(line))
            only_in_lists = False
    if own:
        return own
    return every_figure if only_in_lists else []


def rule_world_citations(ctx: RuleContext) -> Verdict:
    """``citations.world_sources``: every cited world document resolves, is about the company
    asked about, was published by the item's as-of date, and states the figure it is cited for
    (or the figures it is computed from)."""
    from judge._rules import NEEDS_LLM, Verdict, _quarter_floor

    world: WorldResolver | None = getattr(ctx, "world", None)
    if world is None:
        return Verdict(None, "research world unavailable (pass --world-db): " + NEEDS_LLM)
    links = world_links(ctx.answer)
    if not links:
        if _needs_link(ctx.question):
            return Verdict(0.0, "cites no document of the research world")
        return Verdict(1.0, "nothing found, nothing to cite")
    companies = _item_companies(ctx.question, world)
    lines = ctx.answer.splitlines()
    every_figure = _answer_figures(x.prose(ctx.answer))
    as_of = ctx.question.as_of.isoformat() if ctx.question.as_of else ""
    problems, good = [], 0
    for link in links:
        doc = world.doc(link)
        if doc is None:
            problems.append(f"{link} does not resolve in world {world.world_id}")
            continue
        if not companies & set(doc.companies):
            problems.append(f"{link} is about another company")
            continue
        if as_of and doc.published_at[:10] > as_of:
            problems.append(f"{link} was published {doc.published_at[:10]}, after {as_of}")
            continue
        if not _supports(doc, _cited_for(link, lines, every_figure), ctx.question):
            problems.append(f"{link} does not state the figure it is cited for")
            continue
        good += 1
    reason = f"{good}/{len(links)} cited documents resolve, are on topic and state their figures"
    return Verdict(_quarter_floor(good / len(links)), reason + "".join(f"; {p}" for p in problems))


def rule_world_groundedness(ctx: RuleContext) -> Verdict:
    """``groundedness.supported`` on keyed research items: every figure the answer states is in
    a document or tool result the agent read during the run, or is the key's computed figure from
    documents it fetched, or (a price change over a window) from the closes its ``prices`` calls
    returned."""
    from judge._rules import NEEDS_LLM, Verdict, _quarter_floor

    if not keyed_research(ctx.question):
        return Verdict(None, NEEDS_LLM)
    if ctx.trajectory is None:
        return Verdict(None, "no trajectory: " + NEEDS_LLM)
    figures = _answer_figures(x.prose(ctx.answer))
    if not figures:
        return Verdict(1.0, "states no figures")
    read = [
        v
        for call in ctx.trajectory.tool_calls
        if not call.is_error
        for v in _doc_values(call.output)
    ]
    if ctx.trajectory.given_documents and ctx.trajectory.input:  # documents in the prompt
        read += _doc_values(ctx.trajectory.input)
    _, fetched = research_reads(ctx.trajectory)
    closes = _closes_read(ctx.trajectory)
    grounded = 0
    for figure in figures:
        if _stated_in(figure, read):
            grounded += 1
            continue
        grounded += any(
            {canonical(link) for link in fact.sources} & set(fetched)
            or _change_of_closes(fact, closes)
            for fact in _derived(figure, ctx.question)
        )
    reason = f"{grounded}/{len(figures)} stated figures are in what the agent read"
    return Verdict(_quarter_floor(grounded / len(figures)), reason)


def _closes_read(trajectory: TrajectoryRecord) -> dict[str, float]:
    """Day -> close of every daily close the agent's ``prices`` calls returned."""
    closes: dict[str, float] = {}
    for call in trajectory.tool_calls:
        if call.is_error or call.name.split("__")[-1] != "prices":
            continue
        try:
            data = json.loads(call.output)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("result"), dict):
            data = data["result"]
        rows = data.get("items") if isinstance(data, dict) else None
        for row in rows or []:
            if isinstance(row, dict) and "date" in row and row.get("close"):
                closes[str(row["date"])[:10]] = float(row["close"])
    return closes


def _change_of_closes(fact: ExpectedFact, closes: dict[str, float]) -> bool:
    """A price change over a window (period ``D1/D2``, no document states it) is grounded when
    the agent read both closes and they give the key's change."""
    ends = re.fullmatch(r"(\d{4}-\d{2}-\d{2})/(\d{4}-\d{2}-\d{2})", fact.period or "")
    if fact.kind != "percent" or ends is None or not all(end in closes for end in ends.groups()):
        return False
    start, end = (closes[day] for day in ends.groups())
    change = (end - start) / start * 100
    return abs(change - float(fact.value)) <= fact.tolerance + 0.05 + 1e-9


def _period_words(period: str) -> list[str]:
    """Ways an answer names a period: FY2025 / fiscal 2025 / FY25; FY2025-Q3 / Q3 ... 2025."""
    match = re.fullmatch(r"FY(\d{4})(?:-Q(\d))?", period)
    if match is None:
        return [period]
    year, quarter = match.groups()
    if quarter is None:
        return [rf"\bFY\s?'?{year}\b", rf"\bFY\s?'?{year[2:]}\b", rf"\bfiscal (?:year )?{year}\b"]
    ordinal = ("first", "second", "third", "fourth")[int(quarter) - 1]
    return [
        rf"\bQ{quarter}\b[^\n]{{0,40}}\b(?:FY\s?)?'?(?:{year}|{year[2:]})\b",
        rf"\b{ordinal} quarter of fiscal (?:year )?{year}\b",
        rf"\bFY{year}-Q{quarter}\b",
    ]


def _names_period(answer: str, period: str) -> bool:
    """A period (FY2025, FY2025-Q3, a day) is named; a span (FY2023-FY2025 of a CAGR, or
    2025-05-23/2025-08-22 of a price change) by naming both its ends."""
    ends = re.fullmatch(r"(FY\d{4})-(FY\d{4})|(\d{4}-\d{2}-\d{2})/(\d{4}-\d{2}-\d{2})", period)
    if ends:
        return all(_names_period(answer, end) for end in ends.groups() if end)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", period):
        return x.find_date(answer, period)
    return any(re.search(p, answer, re.IGNORECASE) for p in _period_words(period))


def rule_world_recency(ctx: RuleContext) -> Verdict:
    """``recency.period_asked`` on keyed research items: the answer names the period of every
    dated figure of the key (the latest reported one where "latest" is asked); a period not yet
    reported is said to be so."""
    from judge._rules import NEEDS_LLM, Verdict

    if not keyed_research(ctx.question):
        return Verdict(None, NEEDS_LLM)
    periods = list(
        dict.fromkeys(
            f.period for f in ctx.question.expected if f.period and f.kind != "not_disclosed"
        )
    )
    pending = [f for f in ctx.question.expected if f.kind == "not_disclosed"]
    if not periods and not pending:
        return Verdict(None, "no dated figures in the key: " + NEEDS_LLM)
    missing = [p for p in periods if not _names_period(ctx.answer, p)]
    if pending and not _NOT_PUBLISHED.search(ctx.answer):
        return Verdict(0.0, f"does not say the {pending[0].period} figure is {pending[0].value}")
    if missing:
        return Verdict(0.0, f"does not name the period {', '.join(missing)}")
    return Verdict(1.0, "names " + (", ".join(periods) or "the period as not yet reported"))
