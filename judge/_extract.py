"""Reading facts out of free-text answers: amounts, percents, counts, dates, ids, names, tables.

Every finder is lenient about format (agents write "$1,234.56", "USD 1,234.56", "(1,234.56)",
"1.234,56 EUR", "March 2, 2026", "02/03/2026") and strict about value, as an auditor reads:

- amounts match to the cent (or the item's tolerance); a figure written with fewer digits
  ("$1,235", "$1.2M") matches only when its value is right to the cent, or when the answer says it
  rounds ("about", "approximately", "rounded", ...) and it is then right to the whole unit;
- negated or contrasted mentions ("1,234.56 is NOT the figure", "instead of 83", "(83 in the
  previous run)") are not statements of the figure (:func:`is_affirmative`);
- ids inside URLs are not stated in the answer (:func:`prose`).
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import re
from dataclasses import dataclass

_SCALE_WORDS = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mm": 1e6,
    "mn": 1e6,
    "mio": 1e6,
    "million": 1e6,
    "millions": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "billions": 1e9,
}
_CURRENCY_CODES = (
    "USD|EUR|GBP|CAD|AUD|NZD|JPY|CHF|CNY|INR|MXN|BRL|SEK|NOK|DKK|PLN|CZK|HUF|ZAR|SGD|HKD|KRW"
)
_CURRENCY = (
    rf"(?:US\$|C\$|CA\$|A\$|AU\$|[$€£¥]|(?:{_CURRENCY_CODES})(?![A-Za-z])"
    r"|(?:US\s)?dollars?\b|euros?\b|pounds?(?:\s+sterling)?\b)"
)
_GROUP_SPACES = "\u2009\u202f\u00a0'\u2019"
"""Thousands separators besides , and .: thin space, narrow no-break space, no-break space and
apostrophes (French and SI style write 57 907.13 with a thin space, Swiss style 1'234.56)."""
_NUMBER_BODY = (
    rf"(?:\d{{1,3}}(?:[{_GROUP_SPACES}]\d{{3}})+(?:[.,]\d+)?"
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3})+,\d{1,2}"
    r"|\d{1,3},\d{2}(?![\d,.])|\d+(?:\.\d+)?|\.\d+)"
)
_SCALE = r"(?:thousand|millions?|billions?|mio|mn|bn|mm|[kmb])\b"
_AMOUNT_RE = re.compile(
    rf"""
    (?<![\w.,/-])
    (?P<open>\()?\s{{0,2}}
    (?:(?P<mark0>CR|DR)\b\.?\s{{1,2}}(?=[-−–$€£¥\d]|[A-Z]{{3}}\s))?
    (?P<sign1>[-−–])?\s{{0,2}}
    (?P<cur1>{_CURRENCY})?\s{{0,2}}
    (?P<sign2>[-−–])?\s{{0,2}}
    (?P<num>{_NUMBER_BODY})(?![.,]\d)
    (?:\s{{0,2}}(?P<scale>{_SCALE}))?
    (?P<sign3>-(?![\w.,-]))?
    (?:(?![\w])|(?=(?:CR|DR)\b))
    (?:\s{{0,2}}(?P<cur2>{_CURRENCY})(?![A-Za-z])(?!\s{{0,2}}[-−–]?\s{{0,2}}\d))?
    (?:\s{{0,2}}(?P<mopen>[(\[])?(?P<mark>CR|DR)\b\.?(?(mopen)[)\]]))?
    \s{{0,2}}(?P<close>\))?
    """,
    re.VERBOSE | re.IGNORECASE,
)
CURRENCY_RE = _CURRENCY
"""A currency as an answer writes it: an ISO code, a symbol or a word ("euros")."""
_SYMBOLS = {"€": "EUR", "£": "GBP", "¥": "JPY", "us$": "USD", "c$": "CAD", "ca$": "CAD",
            "a$": "AUD", "au$": "AUD"}  # fmt: skip
DOLLARS = "$"
"""A bare ``$`` or "dollars": any dollar currency (USD, CAD, AUD, ...)."""
_DOLLAR_CURRENCIES = frozenset({"USD", "CAD", "AUD", "NZD", "SGD", "HKD", "MXN"})


def currency_code(written: str | None) -> str | None:
    """The ISO code a currency mark stands for (``$`` for any dollar currency), or None."""
    if not written:
        return None
    key = " ".join(written.split()).lower()
    if key in _SYMBOLS:
        return _SYMBOLS[key]
    if key == "$" or "dollar" in key:
        return "USD" if key.startswith("us") else DOLLARS
    if key.startswith("euro"):
        return "EUR"
    if key.startswith("pound"):
        return "GBP"
    return key.upper()


def same_currency(written: str | None, expected: str | None) -> bool:
    """Whether a figure written in ``written`` (a :func:`currency_code`) can be in ``expected``;
    a figure without a currency, or a fact without one, is never a mismatch."""
    if written is None or expected is None:
        return True
    if written == DOLLARS:
        return expected in _DOLLAR_CURRENCIES
    return written == expected


@dataclass(frozen=True)
class NumberMention:
    """One number written in the answer."""

    value: float
    precision: float
    """Half a unit of the last digit shown, times the scale: ``1.2M`` -> 50,000."""
    explicit_sign: bool
    """Written with a minus sign or in parentheses."""
    start: int
    end: int
    has_currency: bool
    is_percent: bool
    affirmative: bool = True
    """False for a negated or contrasted mention (see :func:`is_affirmative`)."""
    rounded: bool = False
    """The answer says this figure is rounded ("about", "approximately", "rounded")."""
    currency: str | None = None
    """The ISO code it is written with (:func:`currency_code`; ``$`` for any dollar), or None."""
    mark: str | None = None
    """``debit`` or ``credit`` when the figure is marked with a ledger side (``DR``/``CR``, "a
    credit balance of", "... credit"), else None."""
    grouped: bool = False
    """Written with a thousands separator or decimals (``1,234`` or ``12.50``, not ``12``)."""
    minus: bool = False
    """Written with a minus sign (parentheses alone also make ``explicit_sign``, but they are
    ambiguous after another figure: "CAD 100.00 ($73.00)")."""


def _parse_body(body: str) -> tuple[float, float]:
    """Value and precision of a bare number, e.g. ``1,234.5`` -> (1234.5, 0.05)."""
    if any(c in body for c in _GROUP_SPACES):  # 57 907,13 / 1'234.56
        body = re.sub(f"[{_GROUP_SPACES}]", "", body).replace(",", ".")
    elif re.fullmatch(r"\d{1,3}(?:\.\d{3})+,\d{1,2}|\d{1,3},\d{2}", body):  # 1.234,56 / 340,97
        body = body.replace(".", "").replace(",", ".")
    else:
        body = body.replace(",", "")
    decimals = len(body.split(".", 1)[1]) if "." in body else 0
    return float(body), 0.5 * 10 ** (-decimals)


def find_numbers(text: str) -> list[NumberMention]:
    """Every number stated in ``text`` with its sign, scale, currency, ledger side and percent
    markers.

    Digits inside links and dates are no figures: a record link's port (``127.0.0.1:35958``, a
    free port that changes with every server start) or an id in its path, and the year of
    "March 2, 2026", would otherwise be read as competing statements of an expected amount."""
    return list(_numbers(text))


_SIDE_WORD_AFTER = re.compile(
    r"^\s*\)?\s*\(?(credit|debit)\b(?!\s+(?:limit|line|note|memo|card|rating|terms|hold|check))",
    re.IGNORECASE,
)
_SIDE_WORD_BEFORE = re.compile(
    r"\b(credit|debit)\s+balance\s+(?:of\s+|is\s+|was\s+)?$|\bin\s+(credit|debit)\s+(?:by|of)\s+$",
    re.IGNORECASE,
)


def _ledger_mark(text: str, match: re.Match[str]) -> str | None:
    """The ledger side a figure is marked with: ``CR``/``DR`` after it (``2,790.96CR``, ``Cr.``,
    ``(CR)``) or before it (``CR 2,790.96``), "credit"/"debit" just after it, or "a credit
    balance of" / "in debit by" just before it."""
    mark = (match.group("mark") or match.group("mark0") or "").lower()
    if mark:
        return "credit" if mark == "cr" else "debit"
    after = _SIDE_WORD_AFTER.match(text[match.end() : match.end() + 24])
    if after:
        return after.group(1).lower()
    start = match.start("cur1") if match.group("cur1") else match.start("num")
    before = _SIDE_WORD_BEFORE.search(text[max(0, start - 40) : start])
    if before:
        return (before.group(1) or before.group(2)).lower()
    return None


@functools.lru_cache(maxsize=512)
def _numbers(text: str) -> tuple[NumberMention, ...]:
    found = []
    for match in _AMOUNT_RE.finditer(_blank_dates(prose(text))):
        body = match.group("num")
        value, precision = _parse_body(body)
        scale_word = (match.group("scale") or "").lower()
        scale = _SCALE_WORDS.get(scale_word, 1.0)
        negative = bool(match.group("sign1") or match.group("sign2") or match.group("sign3"))
        negative = negative or bool(match.group("open") and match.group("close"))
        tail = text[match.end() : match.end() + 9].lower()
        is_percent = tail.lstrip().startswith(("%", "percent", "per cent"))
        value *= scale
        precision *= scale
        written = match.group("cur1") or match.group("cur2")
        found.append(
            NumberMention(
                value=-value if negative else value,
                precision=precision,
                explicit_sign=negative,
                start=match.start("num"),
                end=match.end(),
                has_currency=bool(written),
                is_percent=is_percent,
                affirmative=is_affirmative(text, match.start(), match.end()),
                rounded=says_rounded(text, match.start(), match.end()),
                currency=currency_code(written),
                mark=_ledger_mark(text, match),
                grouped=not re.fullmatch(r"\d+", body),
                minus=bool(match.group("sign1") or match.group("sign2") or match.group("sign3")),
            )
        )
    return tuple(found)


# ---------------------------------------------------------------------------------------------
# Counts written in words, to any size
# ---------------------------------------------------------------------------------------------

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "a single": 1, "a dozen": 12,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_MAGNITUDES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_WORD = "|".join(
    sorted([*(u.replace(" ", r"\s+") for u in _UNITS), *_TENS, "hundred", *_MAGNITUDES], key=len)[
        ::-1
    ]
)
_WORD_NUMBER_RE = re.compile(
    rf"\b(?:a\s+)?(?:{_WORD})(?:(?:\s*-\s*|\s+(?:and\s+)?|,\s+)(?:{_WORD}))*\b", re.IGNORECASE
)


def _words_value(words: list[str]) -> int | None:
    """``["two", "thousand", "three", "hundred", "forty", "one"]`` -> 2341; None when the words
    do not make one number ("one two")."""
    total, group, last = 0, 0, None
    for word in words:
        if word in _UNITS or word in _TENS:
            value = _UNITS.get(word, _TENS.get(word))
            if last in ("unit", "teen") or (last == "tens" and (word in _TENS or value >= 10)):
                return None
            group += value
            last = "tens" if word in _TENS else ("teen" if value >= 10 else "unit")
        elif word == "hundred":
            if last == "hundred" or group >= 100:
                return None
            group = (group or 1) * 100
            last = "hundred"
        elif word in _MAGNITUDES:
            if last is None and not total and not group:
                group = 1
            total += (group or 1) * _MAGNITUDES[word]
            group, last = 0, None
        else:
            return None
    return total + group


def word_numbers(text: str) -> list[tuple[int, int, int]]:
    """Numbers written in words, any size: (value, start, end) for "twenty-three", "one hundred
    and five", "two thousand three hundred forty-one", "a dozen"."""
    found = []
    for match in _WORD_NUMBER_RE.finditer(text):
        words = re.findall(r"[a-z]+", match.group(0).lower())
        joined = []
        for word in words:  # "a single" and "a dozen" are one word; "a thousand" is 1,000
            if joined and joined[-1] == "a" and word in ("single", "dozen"):
                joined[-1] = f"a {word}"
            elif word != "and":
                joined.append(word)
        if joined and joined[0] == "a":
            joined = joined[1:]
        value = _words_value(joined) if joined else None
        if value is not None:
            found.append((value, match.start(), match.end()))
    return found


# ---------------------------------------------------------------------------------------------
# How a figure is stated: affirmed, denied, contrasted, rounded
# ---------------------------------------------------------------------------------------------

_CLAUSE_BREAK = re.compile(r"[\n;:()|\[\]]|[.!?](?=\s|$)|,\s|\s[-–—]\s")
_DENIED_BEFORE = re.compile(
    r"\b(?:instead\s+of|rather\s+than|previously|formerly|earlier|prior|previous|old|"
    r"wrongly|incorrectly|mistakenly|superseded)\s*(?:\w+\s+){0,3}\S{0,4}\s*$",
    re.IGNORECASE,
)
_NOT_JUST_BEFORE = re.compile(r"\b(?:not|never|no\s+longer)\s+(?:the\s+|a\s+)?\S{0,4}\s*$", re.I)
_DENIED_AFTER = re.compile(
    r"^\s*\S{0,4}\s*(?:(?:is|was|are|were)\s*(?:not|n't)\s+(?:the|a|an|correct|right|accurate|"
    r"valid|current)\b|isn't\b|is\s+(?:incorrect|wrong|outdated|superseded)\b|"
    r"(?:\w+\s+){0,3}(?:previous(?:ly)?|prior|earlier|formerly|before\s+correction|"
    r"last\s+run|superseded)\b)",
    re.IGNORECASE,
)
_ROUNDED_NEAR = re.compile(
    r"(?:\b(?:about|approximately|approx\.?|around|roughly|nearly|almost|circa|ca\.|some|"
    r"rounded|round)\s+(?:\w+\s+)?$|[~≈]\s*$)",
    re.IGNORECASE,
)
_ROUNDED_AFTER = re.compile(r"^\s*\)?\s*\(?(?:rounded|approx(?:\.|imately)?|about)\b", re.I)
_ROUNDING_NOTE = re.compile(
    r"\b(?:rounded|rounding)\b(?:\s+\w+){0,5}\s+(?:whole|nearest|units?|dollars?|euros?|"
    r"thousands?|cents?)|\b(?:amounts|figures|totals|numbers)\s+(?:are\s+)?rounded\b",
    re.IGNORECASE,
)


def _clause_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The clause around ``text[start:end]``: between line, sentence, semicolon, colon,
    bracket, table-cell and comma-space breaks (a comma inside ``1,234.56`` is no break)."""
    starts, ends = _clause_breaks(text)
    before = bisect.bisect_right(ends, start) - 1
    left = ends[before] if before >= 0 else 0
    after = bisect.bisect_left(starts, end)
    return left, starts[after] if after < len(starts) else len(text)


@functools.lru_cache(maxsize=512)
def _clause_breaks(text: str) -> tuple[list[int], list[int]]:
    matches = list(_CLAUSE_BREAK.finditer(text))
    return [m.start() for m in matches], [m.end() for m in matches]


def is_affirmative(text: str, start: int, end: int) -> bool:
    """False when the mention at ``text[start:end]`` is negated or contrasted in its clause:
    "not 1,234.56", "instead of 83", "previously 1,234.56", "1,234.56 is NOT the figure",
    "(83 in the previous run)". Only the words between the mention and its neighbours count,
    so "USD 1,246.90 instead of USD 1,234.56" affirms the first figure and denies the second."""
    left, right = _clause_bounds(text, start, end)
    before = _NUMBER_SPLIT.split(text[left:start])[-1]
    after = _NUMBER_SPLIT.split(text[end:right])[0]
    if _DENIED_BEFORE.search(before) or _NOT_JUST_BEFORE.search(before):
        return False
    return _DENIED_AFTER.search(after) is None


_NUMBER_SPLIT = re.compile(r"\d[\d,.]*\d|\d")


def says_rounded(text: str, start: int, end: int) -> bool:
    """Whether the answer says the figure at ``text[start:end]`` is rounded: a word just before
    ("about", "approximately", "~") or after ("(rounded)"), or a note anywhere ("amounts are
    rounded to whole dollars")."""
    if _ROUNDED_NEAR.search(text[max(0, start - 30) : start]):
        return True
    if _ROUNDED_AFTER.search(text[end : end + 20]):
        return True
    return _has_rounding_note(text)


@functools.lru_cache(maxsize=512)
def _has_rounding_note(text: str) -> bool:
    return _ROUNDING_NOTE.search(text) is not None


def _close(mention: NumberMention, expected: float, tolerance: float) -> bool:
    """Equal within tolerance; a rounded figure within its precision only up to whole units."""
    allowed = max(tolerance, min(mention.precision, 0.5) if mention.rounded else 0.0) + 1e-9
    if abs(mention.value - expected) <= allowed:
        return True
    # A negative balance is often written without a sign ("a credit balance of $500").
    return not mention.explicit_sign and abs(mention.value - abs(expected)) <= allowed


def amount_matches(mention: NumberMention, expected: float, tolerance: float = 0.0) -> bool:
    """Whether a (non-percent) mention states ``expected`` (see the module docstring)."""
    return not mention.is_percent and _close(mention, float(expected), tolerance)


def find_amount(text: str, expected: float, tolerance: float = 0.0) -> NumberMention | None:
    """The first money-like number equal to ``expected`` within tolerance, or None.

    Zero also matches the words "zero" / "nil" / "no balance" style phrasing.
    """
    expected = float(expected)
    for mention in find_numbers(text):
        if mention.is_percent or not mention.affirmative:
            continue
        if _close(mention, expected, tolerance):
            return mention
    if expected == 0 and re.search(
        r"\b(zero|nil|nothing (?:is )?(?:due|owed|outstanding))\b", text, re.I
    ):
        return NumberMention(0.0, 0.0, False, 0, 0, False, False)
    return None


def find_percent(text: str, expected: float, tolerance: float = 0.0) -> NumberMention | None:
    """A percentage equal to ``expected`` (in percent units, e.g. 12.5) within tolerance."""
    for mention in find_numbers(text):
        if (
            mention.is_percent
            and mention.affirmative
            and _close(mention, float(expected), tolerance)
        ):
            return mention
    return None


def _blank_dates(text: str) -> str:
    """``text`` with every date blanked (same length, so offsets stay valid). Day-month-year
    with a two-digit year is left alone: ``12.5-13`` in "12.5-13.5%" is a range, not a date."""

    def blank(match: re.Match[str]) -> str:
        return _FILL * len(match.group(0))

    for pattern in _DATE_PATTERNS:
        if pattern.kind == "ab":
            text = pattern.regex.sub(
                lambda m: blank(m) if len(m.group("y")) == 4 else m.group(0), text
            )
        else:
            text = pattern.regex.sub(blank, text)
    return text


def _strip_dates(text: str) -> str:
    for pattern in _DATE_PATTERNS:
        text = pattern.regex.sub(" ", text)
    return text


@dataclass(frozen=True)
class CountMention:
    """A whole number stated as a count: digits ("23 invoices") or words ("twenty-three")."""

    value: int
    start: int
    end: int
    affirmative: bool
    noun: str
    """The word it counts (singular, lower case: ``invoice``), "" when none follows."""


_COUNT_FILLER = frozenset(
    {"open", "unpaid", "posted", "unposted", "overdue", "past", "due", "vendor", "customer",
     "sales", "purchase", "return", "collections", "collection", "payment", "credit", "debit",
     "active", "pending", "distinct", "separate", "such", "more", "total", "matching", "record",
     "outstanding", "new", "individual", "line"}
)  # fmt: skip
_NOUN_AFTER = re.compile(r"^(?:[\s*_]|\(s\))*((?:[A-Za-z][\w'-]*\s+){0,3}?)([A-Za-z]+)")


def _singular(word: str) -> str:
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes")) and len(word) > 4:
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


_NOUN_STOP = frozenset(
    {"of", "in", "over", "for", "to", "from", "with", "and", "or", "at", "on", "by", "the",
     "a", "an", "is", "are", "was", "were", "that", "which", "each", "per", "since", "between",
     "across", "totalling", "totaling", "worth", "have", "has", "had", "as", "than"}
)  # fmt: skip


def counted_noun(text: str, end: int) -> str:
    """The noun a count counts: the first word after it that is not a filler adjective
    ("148 open vendor invoices" -> invoice; "a single payment over ..." -> payment)."""
    words = re.findall(r"[A-Za-z]+(?:\(s\))?", text[end : end + 60])
    last_filler = ""
    for written in words[:4]:
        word = written.replace("(s)", "").lower()
        if word in _NOUN_STOP:
            break
        if word not in _COUNT_FILLER or written.endswith("(s)"):
            return _singular(word)
        last_filler = word
    return _singular(last_filler) if last_filler else ""


def count_mentions(text: str) -> list[CountMention]:
    """Every whole number in the prose that can be a count, outside dates, ids, links and
    amounts with a currency or decimals."""
    return list(_count_mentions(text))


@functools.lru_cache(maxsize=512)
def _count_mentions(text: str) -> tuple[CountMention, ...]:
    blanked = _blank_dates(prose(text))
    found = []
    for mention in find_numbers(text):
        if mention.has_currency or mention.is_percent or (mention.grouped and mention.value % 1):
            continue
        if mention.precision != 0.5 or mention.explicit_sign:
            continue
        found.append(
            CountMention(
                int(abs(mention.value)),
                mention.start,
                mention.end,
                mention.affirmative,
                counted_noun(blanked, mention.end),
            )
        )
    for value, start, end in word_numbers(blanked):
        found.append(
            CountMention(
                value, start, end, is_affirmative(text, start, end), counted_noun(blanked, end)
            )
        )
    return tuple(sorted(found, key=lambda c: c.start))


def find_count(text: str, expected: int, tolerance: float = 0.0) -> bool:
    """Whether the answer states the count ``expected`` (digits or words, any size)."""
    for mention in count_mentions(text):
        if mention.affirmative and abs(mention.value - expected) <= tolerance:
            return True
    if expected == 0:
        for match in re.finditer(r"\b(?:no|none)\b", prose(text), re.IGNORECASE):
            if is_affirmative(text, match.start(), match.end()):
                return True
    return False


# ---------------------------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------------------------

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
MONTH_RE = "(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"


@dataclass(frozen=True)
class _DatePattern:
    regex: re.Pattern[str]
    kind: str


_DATE_PATTERNS = (
    _DatePattern(re.compile(r"\b(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})\b"), "ymd"),
    _DatePattern(re.compile(r"\b(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})[/.-](?P<y>\d{4}|\d{2})\b"), "ab"),
    _DatePattern(
        re.compile(rf"\b{MONTH_RE}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", re.I),
        "mdy",
    ),
    _DatePattern(
        re.compile(
            rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?[\s-]+(?:of\s+)?{MONTH_RE}[\s,-]+(?P<y>\d{{4}})\b",
            re.I,
        ),
        "dmy",
    ),
)


def safe_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def find_dates(text: str) -> set[dt.date]:
    """Every date in a common format; ``03/02/2026`` yields both readings (Mar 2 and Feb 3)."""
    dates: set[dt.date] = set()
    for pattern in _DATE_PATTERNS:
        for match in pattern.regex.finditer(text):
            groups = match.groupdict()
            year = int(groups["y"])
            year = year + 2000 if year < 100 else year
            if pattern.kind == "ymd":
                candidates = [(int(groups["m"]), int(groups["d"]))]
            elif pattern.kind == "ab":
                a, b = int(groups["a"]), int(groups["b"])
                candidates = [(a, b), (b, a)]
            else:
                month = MONTHS[groups["month"].lower().rstrip(".")]
                candidates = [(month, int(groups["d"]))]
            for month, day in candidates:
                if (parsed := safe_date(year, month, day)) is not None:
                    dates.add(parsed)
    return dates


def dates_at_start(text: str) -> set[dt.date]:
    """The readings of a date written at the very start of ``text`` (leading spaces and
    emphasis skipped); empty when it does not start with a date."""
    stripped = text.lstrip(" *_")
    shift = len(text) - len(stripped)
    for pattern in _DATE_PATTERNS:
        match = pattern.regex.match(stripped)
        if match:
            return find_dates(text[shift : shift + match.end()])
    return set()


def find_date(text: str, expected: str | dt.date) -> bool:
    target = expected if isinstance(expected, dt.date) else dt.date.fromisoformat(str(expected))
    return target in find_dates(text)


# ---------------------------------------------------------------------------------------------
# Ids, names, phrases
# ---------------------------------------------------------------------------------------------


def normalize_words(text: str) -> str:
    """Lower case, punctuation to spaces, single spaces: ``"Contoso, Inc."`` -> ``contoso inc``."""
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def find_phrase_position(text: str, phrase: str) -> int | None:
    """Position of ``phrase`` in ``text`` (outside link targets) ignoring case, spacing and
    punctuation, on word bounds.

    The position is in the normalized text, so it orders phrases but is not an offset into ``text``.
    """
    needle = normalize_words(str(phrase))
    if not needle:
        return None
    match = re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", normalize_words(prose(text)))
    return match.start() if match else None


_LINK_RE = re.compile(
    r"https?://[^\s<>\"'`|\])]+|(?<![\w/.:])/erp/[^\s<>\"'`|\]),;]+"
    r"|(?<![\w.+\-/])erp://[^\s<>\"'`|\])]+",  # a record as an MCP resource (stdio)
    re.I,
)
_MARKDOWN_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")


_FILL = "\x00"


@functools.lru_cache(maxsize=512)
def prose(text: str) -> str:
    """The answer without link targets: ids inside URLs are not stated in the answer. Links are
    blanked (same length, with a filler that is neither a word nor a space, so that regexes do
    not scan long blank runs), so offsets into the result are offsets into ``text``."""
    text = _MARKDOWN_LINK_TARGET.sub(lambda m: "]" + _FILL * (len(m.group(0)) - 1), text)
    return _LINK_RE.sub(lambda m: _FILL * len(m.group(0)), text)


ID_TOKEN = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]*)-(\d[\w-]*)(?![\w-])")


def find_id_tokens(text: str) -> list[str]:
    """Account and document ids (``SYNCUS-0001``, ``INV-000123``) stated in the prose."""
    return [m.group(0) for m in ID_TOKEN.finditer(prose(text))]


def find_id(text: str, expected: str) -> bool:
    """An account or document id, case-insensitive, on word bounds (``SYNCUS-0001``), outside
    link targets."""
    text = prose(text)
    pattern = rf"(?<![\w-]){re.escape(str(expected))}(?![\w-])"
    return re.search(pattern, text, re.IGNORECASE) is not None or (
        find_phrase_position(text, expected) is not None
    )


_NO_RECORDS_RE = re.compile(
    r"\b(no (?:\w+ ){0,4}(?:records?|results?|matches|entries|invoices?|transactions?|orders?|"
    r"payments?|disputes?|activities|tasks?|cases?|letters?|customers?|vendors?|balances?|"
    r"items?|credit notes?|discounts?)\b(?: (?:were|was|are|is) )?(?:found|exist|on file|recorded)?"
    r"|none (?:found|exist|recorded|on file)|nothing (?:found|was found|outstanding|is outstanding)"
    r"|(?:does|do) not (?:exist|have any)|doesn't exist|don't exist|there (?:are|were|is|was) no"
    r"|could not find|couldn't find|not find any|did not find|found no|zero (?:records|results))",
    re.IGNORECASE,
)


def says_no_records(text: str) -> bool:
    """Whether the answer says nothing was found ("no open invoices", "there are no records")."""
    return _NO_RECORDS_RE.search(text) is not None


_YES_NO_WORD = re.compile(
    r"\b(?:(yes|correct|true|indeed)|(no|false|incorrect))\b(?=\s*[.,;:!?)\u2013\u2014-]|\s*$)",
    re.IGNORECASE,
)
_OPENING_YES_NO = re.compile(r"^(?:\w+ ){0,3}?(?:(yes|correct|true)|(no|not|false|incorrect))\b")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")


def first_sentence(text: str) -> str:
    """The answer's first sentence (a line break ends it too), headings and emphasis marks
    skipped; an abbreviation such as "Co." does not end it."""
    body = "\n".join(
        line for line in text.strip().splitlines() if not line.lstrip().startswith("#")
    )
    body = body.lstrip()
    for match in _SENTENCE_END.finditer(body):
        before = body[: match.start()].rsplit(None, 1)
        if match.group(0) == "." and before and before[-1].strip("*_(").lower() in ABBREVIATIONS:
            continue
        if body[: match.start()].strip(" *_:"):
            return body[: match.start()]
    return body


ABBREVIATIONS = frozenset(
    {"co", "corp", "inc", "ltd", "no", "st", "mr", "mrs", "ms", "dr", "vs", "approx", "e.g",
     "i.e", "etc", "jr", "sr", "bros", "mfg", "dept", "est", "int", "intl"}
)  # fmt: skip


def says_boolean(text: str, expected: bool) -> bool | None:
    """True/False when the answer's first sentence says yes or no: a yes or no that stands on
    its own anywhere in it ("Per the ERP records I queried: yes.", "the answer is no:"), or one
    of its first words ("No discount is offered"); None when it says neither ("there are no such
    records" is no answer)."""
    sentence = prose(first_sentence(text)).replace("*", "").replace("_", " ")
    match = _YES_NO_WORD.search(sentence) or _OPENING_YES_NO.match(normalize_words(sentence))
    if match is None:
        return None
    return expected is bool(match.group(1))


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------

_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$", re.MULTILINE)


def has_markdown_table(text: str) -> bool:
    """A GitHub-style table: a header row followed by a ``|---|---|`` separator row."""
    for match in _TABLE_SEPARATOR.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if before.count("|") >= 1:
            return True
    return "<table" in text.lower()


def opening_text(text: str, lines: int = 3) -> str:
    """The first non-empty, non-heading lines (where an answer-first reply states its answer)."""
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or set(stripped) <= set("-*_=|: "):
            continue
        kept.append(stripped)
        if len(kept) == lines:
            break
    return "\n".join(kept)


_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+\S", re.MULTILINE)


def list_items(text: str) -> int:
    """Number of bullet or numbered list items."""
    return len(_LIST_ITEM.findall(text))
