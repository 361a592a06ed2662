"""What an answer claims beyond its figures: which record each figure belongs to, the legal entity
and date it says it answers for, and whether it disowns what it states.

- **Units**: an answer is read in units a reader attaches figures to: a table row, a list item,
  or a clause of a sentence (split at ``;`` and at sentence ends, not at "Co." or "Inc."). A
  figure in a unit belongs to the records that unit names; in a unit that names several records of
  one kind ("SYNCUS-0473 USD 61,501.75, SYNCUS-0096 USD 43,201.00") each figure belongs to the
  record it follows (or, when the unit puts figures first, the record it precedes).
- **Scope**: the legal entities named in the prose and the dates written after "as of" / "as at".
- **Hedges**: "I could not verify this in the ERP", "these figures may be wrong": an answer that
  disowns its figures does not state them.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import itertools
import re
from dataclasses import dataclass

from judge import _extract as x

# ---------------------------------------------------------------------------------------------
# Units
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    kind: str
    """``row`` (a table row), ``item`` (a list item) or ``clause``."""


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+")
_CLAUSE_END = re.compile(r";|[.!?](?=\s+[\[(*_\"']*[A-Z0-9])|[.!?]\s*$")


def units(text: str) -> tuple[Unit, ...]:
    """The answer's units, in order (offsets into ``text``)."""
    return _units(text)


@functools.lru_cache(maxsize=256)
def _units(text: str) -> tuple[Unit, ...]:
    found: list[Unit] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        start, body = offset, line.rstrip("\n")
        offset += len(line)
        if not body.strip() or _TABLE_RULE.match(body):
            continue
        if body.lstrip().startswith("|") or body.count("|") >= 2:
            found.append(Unit(start, start + len(body), "row"))
            continue
        kind = "item" if _LIST_ITEM.match(body) else "clause"
        found += _clauses(body, start, kind)
    return tuple(found)


def _clauses(body: str, offset: int, kind: str) -> list[Unit]:
    pieces, left = [], 0
    shown = x.prose(body)
    for match in _CLAUSE_END.finditer(shown):
        if match.group(0) == ".":
            word = shown[left : match.start()].rsplit(None, 1)
            if word and word[-1].strip("*_([").lower() in x.ABBREVIATIONS:
                continue
        pieces.append((left, match.end()))
        left = match.end()
    if left < len(body):
        pieces.append((left, len(body)))
    return [Unit(offset + a, offset + b, kind) for a, b in pieces if body[a:b].strip()]


@dataclass(frozen=True)
class IdMention:
    token: str
    start: int
    end: int

    @property
    def prefix(self) -> str:
        return self.token.split("-", 1)[0].casefold()


def id_mentions(text: str, start: int = 0, end: int | None = None) -> list[IdMention]:
    """Account and document ids stated in the prose between ``start`` and ``end``."""
    end = len(text) if end is None else end
    return [m for m in _id_mentions(text) if start <= m.start and m.end <= end]


@functools.lru_cache(maxsize=256)
def _id_mentions(text: str) -> tuple[IdMention, ...]:
    return tuple(
        IdMention(m.group(0), m.start(), m.end()) for m in x.ID_TOKEN.finditer(x.prose(text))
    )


def record_spans(text: str, key: str) -> list[tuple[int, int]]:
    """The spans of ``text`` whose figures belong to record ``key`` (see the module docstring)."""
    spans = []
    prefix = key.split("-", 1)[0].casefold()
    numbers = x.find_numbers(text)
    for unit in units(text):
        named = [m for m in id_mentions(text, unit.start, unit.end) if m.prefix == prefix]
        own = [m for m in named if m.token.casefold() == key.casefold()]
        if not own:
            continue
        if len(own) == len(named):
            spans.append((unit.start, unit.end))
            continue
        figures = [  # amounts, not the count in "Top 2:"
            n.start
            for n in numbers
            if unit.start <= n.start < unit.end and (n.has_currency or n.grouped)
        ]
        ids_first = not figures or named[0].start < figures[0]
        for mention in own:
            index = named.index(mention)
            if ids_first:
                stop = named[index + 1].start if index + 1 < len(named) else unit.end
                spans.append((mention.start, stop))
            else:
                begin = named[index - 1].end if index > 0 else unit.start
                spans.append((begin, mention.end))
    return spans


def attached_record(text: str, position: int) -> str | None:
    """The record (id, case-folded) a figure at ``position`` is attached to: in a table row the
    row's first id (its record), in a list item or clause the id it follows (or, when the unit
    puts figures first, the id it precedes); None when its unit names no record."""
    unit = unit_of(text, position)
    if unit is None:
        return None
    named = id_mentions(text, unit.start, unit.end)
    if not named:
        return None
    if unit.kind == "row":
        return named[0].token.casefold()
    figures = [
        n.start
        for n in x.find_numbers(text)
        if unit.start <= n.start < unit.end and (n.has_currency or n.grouped)
    ]
    before = [m for m in named if m.end <= position]
    after = [m for m in named if m.start >= position]
    ids_first = not figures or named[0].start < figures[0]
    chosen = (
        (before[-1] if before else after[0]) if ids_first else (after[0] if after else before[-1])
    )
    return chosen.token.casefold()


def unit_of(text: str, position: int) -> Unit | None:
    for unit in units(text):
        if unit.start <= position < unit.end:
            return unit
    return None


# ---------------------------------------------------------------------------------------------
# Scope: legal entity and as-of date
# ---------------------------------------------------------------------------------------------


def stated_legal_entities(text: str, known: set[str]) -> list[str]:
    """The legal entities of ``known`` (codes such as USMF) the prose names, in order."""
    if not known:
        return []
    pattern = r"(?<![\w/-])(" + "|".join(map(re.escape, sorted(known))) + r")(?![\w/-])"
    return list(dict.fromkeys(m.group(1) for m in re.finditer(pattern, x.prose(text))))


_AS_OF = re.compile(r"\bas\s+(?:of|at)\s+(?:the\s+)?(?:close\s+of\s+|end\s+of\s+)?", re.I)
_MONTH_DAY = re.compile(
    rf"^{x.MONTH_RE}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?!,?\s*\d{{4}})"
    rf"|^(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month2>"
    + "|".join(sorted(x.MONTHS, key=len, reverse=True))
    + r")\.?\b(?![\s,]*\d{4})",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class AsOf:
    text: str
    """The words as written ("as of February 2, 2026")."""
    readings: frozenset[dt.date]
    """The dates they can mean (``03/02/2026`` is March 2 or February 3)."""


def stated_as_of(text: str, year: int) -> list[AsOf]:
    """The dates the answer says it is "as of" / "as at" (a date without a year is in
    ``year``)."""
    shown = x.prose(text)
    found = []
    for match in _AS_OF.finditer(shown):
        tail = shown[match.end() : match.end() + 30]
        readings = x.dates_at_start(tail)
        if not readings:
            short = _MONTH_DAY.match(tail.lstrip(" *_"))
            if short:
                month = (short.group("month") or short.group("month2")).lower().rstrip(".")
                day = int(short.group("d") or short.group("d2"))
                parsed = x.safe_date(year, x.MONTHS[month], day)
                readings = {parsed} if parsed else set()
        if readings:
            words = " ".join(shown[match.start() : match.end() + 22].split())
            found.append(AsOf(words, frozenset(readings)))
    return found


# ---------------------------------------------------------------------------------------------
# Hedges
# ---------------------------------------------------------------------------------------------

_REFERENT = (
    r"(?:this|these|that|those|it|them|everything|any\s+of\s+(?:this|these|it)|the\s+above"
    r"|(?:the|my|these|this|those|all)\s+(?:\w+\s+)?(?:figures?|numbers?|amounts?|balances?"
    r"|totals?|data|results?|information|answer|values?|details))"
)
_HEDGES = re.compile(
    r"\b(?:could\s*n[o']t|can\s*n[o']t|cannot|(?:was|were|am|is)\s+(?:not\s+able|unable)\s+to"
    r"|unable\s+to|did\s*n[o']t|have\s*n[o']t|has\s*n[o']t|not\s+able\s+to)\s+"
    rf"(?:fully\s+|independently\s+|actually\s+)?(?:verify|confirm|validate)\s+{_REFERENT}"
    rf"|\b{_REFERENT}\s+(?:may|might|could)\s+(?:well\s+|also\s+)?(?:be|contain)\s+(?:wrong"
    r"|incorrect|inaccurate|outdated|mistaken|errors?|unreliable|made\s+up|guesses)"
    r"|\b(?:may|might|could)\s+(?:well\s+)?be\s+(?:wrong|incorrect|inaccurate|unreliable)\b"
    rf"|\b{_REFERENT}\s+(?:is|are)\s+(?:unverified|not\s+verified|a\s+guess|an\s+estimate\s+only)"
    r"|\bdo\s*n[o']t\s+rely\s+on\b|\bdo\s+not\s+rely\s+on\b|\bmy\s+best\s+guess\b"
    r"|\bI\s+(?:am|'m)\s+not\s+(?:sure|certain|confident)\s+(?:about|of|that)\s+" + _REFERENT,
    re.IGNORECASE,
)


def disowning_hedge(text: str) -> str | None:
    """The words with which the answer disowns its figures ("I could not verify this in the
    ERP; it may be wrong"), or None."""
    match = _HEDGES.search(x.prose(text))
    return " ".join(match.group(0).split()) if match else None


# ---------------------------------------------------------------------------------------------
# Tables: which column a figure is in, and the currency its header or row names
# ---------------------------------------------------------------------------------------------

_CURRENCY_CELL = re.compile(rf"^\W*({x.CURRENCY_RE})\W*$", re.IGNORECASE)
_CURRENCY_IN_HEADER = re.compile(rf"(?<![A-Za-z])({x.CURRENCY_RE})(?![A-Za-z])", re.IGNORECASE)


def _cells(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell of a table row, offsets into ``line``."""
    bars = [i for i, c in enumerate(line) if c == "|"]
    edges = bars if line.lstrip().startswith("|") else [-1, *bars]
    if not line.rstrip().endswith("|"):
        edges = [*edges, len(line)]
    return [(a + 1, b) for a, b in itertools.pairwise(edges)]


def cell_currency(text: str, position: int) -> str | None:
    """The currency a bare figure in a table cell is in, as the table says: its column header
    ("Balance (USD)") or, failing that, a cell of its row that is only a currency ("| EUR |")."""
    unit = unit_of(text, position)
    if unit is None or unit.kind != "row":
        return None
    lines = text[: unit.start].splitlines()
    header = None
    for index in range(len(lines) - 1, 0, -1):  # the header sits above the |---| rule
        if _TABLE_RULE.match(lines[index]):
            header = lines[index - 1]
            break
        if "|" not in lines[index]:
            break
    row = text[unit.start : unit.end]
    cells = _cells(row)
    column = next((n for n, (a, b) in enumerate(cells) if a <= position - unit.start < b), None)
    if header is not None and column is not None:
        header_cells = _cells(header)
        if column < len(header_cells):
            a, b = header_cells[column]
            found = _CURRENCY_IN_HEADER.search(header[a:b])
            if found:
                return x.currency_code(found.group(1))
    for a, b in cells:
        found = _CURRENCY_CELL.match(row[a:b])
        if found:
            return x.currency_code(found.group(1))
    return None


_SIDE_CELL = re.compile(r"^\W*(cr|dr|credit|debit)\b\.?\W*$", re.IGNORECASE)
_SIDE_HEADER = re.compile(
    rf"^\W*(credits?|debits?)\b\W*(?:(?:in\s+)?(?:{x.CURRENCY_RE})\W*)?$", re.IGNORECASE
)


def _header_above(text: str, unit: Unit) -> str | None:
    lines = text[: unit.start].splitlines()
    for index in range(len(lines) - 1, 0, -1):  # the header sits above the |---| rule
        if _TABLE_RULE.match(lines[index]):
            return lines[index - 1]
        if "|" not in lines[index]:
            return None
    return None


def cell_side(text: str, position: int) -> str | None:
    """The ledger side a table gives a figure: its column header is "Credit" or "Debit"
    (separate columns), or its row has a cell that is only ``CR``/``DR``/credit/debit (a Dr/Cr
    column); None otherwise."""
    unit = unit_of(text, position)
    if unit is None or unit.kind != "row":
        return None
    row = text[unit.start : unit.end]
    cells = _cells(row)
    column = next((n for n, (a, b) in enumerate(cells) if a <= position - unit.start < b), None)
    header = _header_above(text, unit)
    if header is not None and column is not None:
        header_cells = _cells(header)
        if column < len(header_cells):
            a, b = header_cells[column]
            found = _SIDE_HEADER.match(header[a:b])
            if found:
                return "credit" if found.group(1).lower().startswith("c") else "debit"
    sides = {m.group(1).lower()[0] for a, b in cells if (m := _SIDE_CELL.match(row[a:b]))}
    if len(sides) == 1:
        return "credit" if sides == {"c"} else "debit"
    return None


# ---------------------------------------------------------------------------------------------
# The prose and the table: a record's figure stated in both must agree
# ---------------------------------------------------------------------------------------------


def _money_figures(text: str, start: int, end: int) -> list[x.NumberMention]:
    return [
        m
        for m in x.find_numbers(text)
        if start <= m.start < end
        and m.affirmative
        and not m.is_percent
        and (m.has_currency or (m.grouped and m.value % 1))
    ]


def table_contradiction(text: str) -> str | None:
    """A figure the prose gives a record that its own table row contradicts: the row (whose
    first id is the record) holds no such figure, and another record's row holds it or the
    row holds a figure within 10% of it (ids swapped in the prose, a table cell off). None when
    the prose and the table agree, or do not give one record a figure in both."""
    rows: dict[str, list[float]] = {}
    for unit in units(text):
        if unit.kind == "row":
            named = id_mentions(text, unit.start, unit.end)
            if named:
                key = named[0].token.casefold()
                figures = _money_figures(text, unit.start, unit.end)
                rows.setdefault(key, []).extend(abs(m.value) for m in figures)
    if len(rows) < 2:
        return None
    for unit in units(text):
        if unit.kind == "row":
            continue
        for mention in _money_figures(text, unit.start, unit.end):
            record = attached_record(text, mention.start)
            if record is None or not rows.get(record):
                continue
            value = abs(mention.value)
            own = rows[record]
            if any(abs(value - v) <= 0.006 for v in own):
                continue
            elsewhere = any(
                abs(value - v) <= 0.006 for key, vs in rows.items() if key != record for v in vs
            )
            near = any(v and abs(value - v) <= 0.10 * v for v in own)
            if elsewhere or near:
                shown = " ".join(text[mention.start : mention.end].split())
                return f"the prose gives {record.upper()} {shown}, its table row does not"
    return None


# ---------------------------------------------------------------------------------------------
# HTML tables: read as the markdown tables they render
# ---------------------------------------------------------------------------------------------

_HTML_TABLE = re.compile(r"<table\b.*?</table\s*>", re.IGNORECASE | re.DOTALL)
_HTML_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr\s*>", re.IGNORECASE | re.DOTALL)
_HTML_CELL = re.compile(r"<t([hd])\b[^>]*>(.*?)</t[hd]\s*>", re.IGNORECASE | re.DOTALL)
_HTML_ANCHOR = re.compile(
    r"<a\b[^>]*\bhref\s*=\s*[\"']([^\"']*)[\"'][^>]*>(.*?)</a\s*>", re.IGNORECASE | re.DOTALL
)
_HTML_TAG = re.compile(r"<[^>]+>")


def _cell_text(cell: str) -> str:
    cell = _HTML_ANCHOR.sub(
        lambda m: f"[{_HTML_TAG.sub('', m.group(2)).strip()}]({m.group(1)})", cell
    )
    cell = html.unescape(_HTML_TAG.sub(" ", cell))
    return re.sub(r"[ \t\r\n]+", " ", cell.replace("|", "/")).strip()  # thin spaces stay


def _markdown_table(match: re.Match[str]) -> str:
    rows = []
    for row in _HTML_ROW.finditer(match.group(0)):
        cells = [_cell_text(c.group(2)) for c in _HTML_CELL.finditer(row.group(1))]
        if cells:
            rows.append("| " + " | ".join(cells) + " |")
    if not rows:
        return match.group(0)
    width = rows[0].count("|") - 1
    rule = "|" + "---|" * width
    return "\n" + "\n".join([rows[0], rule, *rows[1:]]) + "\n"


_HTML_MARKUP = re.compile(
    r"</?(?:a|p|br|hr|li|ul|ol|strong|b|em|i|u|span|div|h[1-6]|table|thead|tbody|tfoot|tr|td|th"
    r"|code|small|sup|sub|blockquote|section|article|header|footer|main|body|html)\b[^<>]*>",
    re.IGNORECASE,
)
_HTML_BLOCK_END = re.compile(r"<br\s*/?>|</(?:p|div|h[1-6]|ul|ol|blockquote)\s*>", re.IGNORECASE)
_HTML_ITEM = re.compile(r"<li\b[^<>]*>", re.IGNORECASE)


def html_as_markdown(text: str) -> str:
    """An answer written in HTML, read as the markdown it renders: tables (``<table><tr><td>``)
    as markdown tables, one row a line; links as markdown links; line breaks, paragraphs and list
    items as lines; other markup dropped and entities unescaped. Text without HTML markup is
    returned unchanged ("< 30 days" is no markup)."""
    if "<" not in text or not _HTML_MARKUP.search(text):
        return text
    return _html_as_markdown(text)


@functools.lru_cache(maxsize=256)
def _html_as_markdown(text: str) -> str:
    text = _HTML_TABLE.sub(_markdown_table, text)
    text = _HTML_ANCHOR.sub(
        lambda m: f"[{_HTML_MARKUP.sub('', m.group(2)).strip()}]({m.group(1)})", text
    )
    text = _HTML_BLOCK_END.sub("\n", text)
    text = _HTML_ITEM.sub("\n- ", text)
    return html.unescape(_HTML_MARKUP.sub("", text))
