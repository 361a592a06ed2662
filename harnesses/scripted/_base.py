"""What every solver of the scripted agent shares: reading the question, calling the tools, writing
the answer.

It is the offline baseline and the harness the end-to-end tests drive. Like any agent it sees only
the question text: it recognises an obligation intent with rules, reads the as-of date, date range
and legal entity, resolves parties through ``search_parties``, calls the ERP tools (every call
recorded in the trajectory) and writes an answer-first markdown reply: a table when there are
several records and a link to each ERP record it used. It says so plainly when it does not
understand a question, and for entity research and briefs, which need the web. It never reads
ground truth.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from harnesses._erp_client import ErpClient
from harnesses._protocol import (
    TrajectoryDraft,
)

MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_RE = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" + (
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
DATE_WORDS = re.compile(rf"\b{_MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
DATE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
MONTH_YEAR = re.compile(rf"\b{_MONTH_RE}\s+(\d{{4}})\b", re.I)
ACCOUNT_ID = re.compile(r"\b([A-Z]{2,8}-\d{2,6})\b")
NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "fifteen": 15,
    "twenty": 20,
}
_NUM = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"
AR_INVOICE_TYPES = ["sales_invoice", "free_text_invoice"]
OPEN_ACTIVITY = ["open", "in_progress"]
PAGE = 500
MAX_PAGES = 20
TOOL_RETRIES = 3
"""Retries of a tool call whose error says it is transient (``TRANSIENT ERROR ...``)."""
MAX_ROWS = 200
"""Rows shown in a table; counts and totals always cover every matching record."""
CONFIDENT_MATCH = 80.0
"""search_parties score from which an exact or partial name match is taken as the party meant."""
CONFIDENT_FUZZY = 88.0
"""Fuzzy matches (misspellings) must score this much: a shared "Trading" is not a typo."""


class ToolFailure(Exception):
    """An ERP tool returned an error; the agent reports it instead of guessing."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.message = message


class PartyNotFound(Exception):
    def __init__(self, party_type: str, reference: str) -> None:
        super().__init__(reference)
        self.party_type = party_type
        self.reference = reference


# --------------------------------------------------------------------------------------------------
# Reading the question
# --------------------------------------------------------------------------------------------------


def _month_number(token: str) -> int:
    token = token.lower()[:3]
    return next(i for i, name in enumerate(MONTHS, start=1) if name.startswith(token))


def _number(token: str) -> int:
    return int(token) if token.isdigit() else NUMBER_WORDS[token.lower()]


def find_dates(text: str) -> list[tuple[int, dt.date]]:
    """Every date in the text with its position ("March 2, 2026", "Mar 2nd 2026", ISO)."""
    found: list[tuple[int, dt.date]] = []
    for match in DATE_WORDS.finditer(text):
        try:
            day = dt.date(int(match.group(3)), _month_number(match.group(1)), int(match.group(2)))
        except ValueError:
            continue
        found.append((match.start(), day))
    for match in DATE_ISO.finditer(text):
        try:
            found.append((match.start(), dt.date(*(int(g) for g in match.groups()))))
        except ValueError:
            continue
    return sorted(found)


@dataclass
class Question:
    """What the rules read from the question text."""

    text: str
    lower: str
    as_of: dt.date | None
    start: dt.date | None
    end: dt.date | None
    single_date: dt.date | None
    legal_entity: str | None
    all_entities: bool
    accounts: list[str]
    n: int | None
    days: int | None
    currency: str | None
    group_id: str | None
    who: str | None = None
    """The party reference, when the question was read with the generator's grammar."""

    @classmethod
    def parse(cls, text: str, legal_entities: list[str]) -> Question:
        lower = text.lower()
        dates = find_dates(text)
        as_of_match = re.search(r"\bas of\b", lower)
        as_of = next((d for pos, d in dates if as_of_match and pos > as_of_match.start()), None)
        start = end = None
        between = re.search(
            r"(?:\bbetween\b|\bfrom\b|\()(.+?)\b(?:and|to|through|until)\b(.+)", text
        )
        if between:
            first = find_dates(between.group(1))
            second = find_dates(between.group(2))
            if first and second:
                start, end = first[-1][1], second[0][1]
        if start is None and re.search(r"last 12 months|past 12 months|past year", lower):
            end = as_of
            start = None if as_of is None else _months_back(as_of, 12)
        in_year = re.search(r"\bin (\d{4})\b", text)
        if start is None and in_year:
            start = dt.date(int(in_year.group(1)), 1, 1)
            end = dt.date(int(in_year.group(1)), 12, 31)
        if start is None and re.search(r"\bthis year\b", lower) and as_of is not None:
            start, end = dt.date(as_of.year, 1, 1), as_of
        others = [d for _, d in dates if d not in (as_of, start, end)]
        return cls(
            text=text,
            lower=lower,
            as_of=as_of,
            start=start,
            end=end,
            single_date=others[0] if others else None,
            legal_entity=_legal_entity(text, legal_entities),
            all_entities=bool(re.search(r"\ball (?:the )?legal entities|across legal", lower)),
            accounts=ACCOUNT_ID.findall(text),
            n=_first_number(lower, TOP_N),
            days=_first_number(lower, DAYS),
            currency=_currency(text),
            group_id=_group(text),
        )

    def has(self, *patterns: str) -> bool:
        return any(re.search(pattern, self.lower) for pattern in patterns)


def _months_back(day: dt.date, months: int) -> dt.date:
    month = day.month - months
    year = day.year + (month - 1) // 12
    month = (month - 1) % 12 + 1
    return dt.date(year, month, min(day.day, 28)) + dt.timedelta(days=1)


def _legal_entity(text: str, legal_entities: list[str]) -> str | None:
    for code in legal_entities:
        if re.search(rf"\b{re.escape(code)}\b", text):
            return code
    return None


TOP_N = (
    rf"\b(?:top|largest|biggest|highest|first|last)\s+{_NUM}\b",
    rf"\b{_NUM}\s+(?:largest|biggest|highest|customers|vendors|sales orders|payments)\b",
    rf"\bthe\s+{_NUM}\s+\w+",
)
"""Where a question says how many records it wants ("top 5", "the three ..."), first match wins."""
DAYS = (
    rf"next\s+{_NUM}\s+days?",
    rf"(?:more than|over|beyond|longer than(?: net)?|than net)\s+{_NUM}\s+days?",
    rf"net\s+{_NUM}\b",
    r"(\d+)\+\s*days?",
    rf"{_NUM}\s+days?",
)
"""Where a question gives a number of days ("next 7 days", "over 90 days", "net 30")."""


def _first_number(lower: str, patterns: tuple[str, ...]) -> int | None:
    """The number the first matching pattern captures, tried in order."""
    for pattern in patterns:
        match = re.search(pattern, lower)
        if match:
            return _number(match.group(1))
    return None


def _currency(text: str) -> str | None:
    match = re.search(r"\b(USD|EUR|GBP|CAD)\b", text)
    return match.group(1) if match else None


def _group(text: str) -> str | None:
    match = re.search(r"\bgroup\s+[\"']?([A-Za-z0-9_-]+)[\"']?", text, re.I)
    if not match:
        return None
    value = match.group(1)
    return None if value.lower() in {"in", "with", "that", "based", "for", "of", "and"} else value


_BOUNDARY = re.compile(
    r"\s+(?:in\s+(?:legal\s+entity\s+)?[A-Z]{4}\b|in\s+all\b|in\s+our\b|in\s+the\s+current|"
    r"in\s+accounting|across\b|as\s+of\b|for\s+the\b|this\s+fiscal|so\s+far|between\b|from\s+[A-Z]"
    r"|from\s+\w+\s+\d|by\s+status|by\s+amount|has\b|have\b|owe\b|make\b|made\b|pay\b|paid\b|"
    r"take\b|issue\b|is\s+currently|currently\b|still\b|that\b|are\s+coming|pass\b|offer\b|"
    r"falling\b|with\s+their|for\s+paying|waiting\b|rated\b|pass\b|used\b|in\s+[A-Z]{4}\b|for\s+[A-Z]{4}\b|credit\s+rating|"
    r"phone\b|payment\s+history|latest\b|this\s+year|vendor\b|marked\b|are\s+still|"
    r"in\s+yyyy|is\s+(?:currently|at)\b|in\s+our\b)",
)
_LEADS = (
    r"customer account\s+",
    r"vendor account\s+",
    r"\bfor\s+",
    r"\bof\s+",
    r"\bby\s+",
    r"\bfrom\s+",
    r"\bto\s+",
    r"\bwith\s+",
    r"\bdoes\s+",
    r"\bdid\s+",
    r"\bhas\s+",
    r"\bhandle\s+",
    r"\bowe\s+",
    r"\bpay\s+",
    r"\bsend\s+",
    r"\bagainst\s+",
    r"\btransactions\s+",
    r"\bhow is\s+",
    r"\bhow does\s+",
    r"\bis\s+",
    r"\bcustomer\s+",
    r"\bvendor\s+",
    r"\bwhat's\s+",
    r"\bwhat is\s+",
    r"\bdoes\s+",
)
_NOT_A_NAME = re.compile(
    r"^(?:the|a|an|all|our|us|we|its|their|customer|customers|vendor|vendors|invoices?|payments?|"
    r"transactions?|sales|orders?|credit|cash|collections?|open|unpaid|total|\d|group|legal|"
    r"payment|terms|any|each|january|february|march|april|may|june|july|august|september|"
    r"october|november|december)\b",
    re.I,
)


def name_candidates(question: Question) -> list[str]:
    """Phrases that may name the party, best guesses first."""
    if question.who:
        who = re.sub(r"\s*\([A-Z]{2,8}-\d+\)", "", question.who)
        return [re.sub(r"^(?:customer|vendor) account\s+", "", who, flags=re.I).strip()]
    text = question.text
    found: list[tuple[int, str]] = []
    for lead in _LEADS:
        for match in re.finditer(lead, text, re.I):
            rest = text[match.end() :]
            cut = _BOUNDARY.search(" " + rest)
            phrase = (" " + rest)[: cut.start()] if cut else rest
            phrase = re.sub(r"\s*\([A-Z]{2,8}-\d+\)", "", phrase)
            phrase = phrase.strip(" ?.,:;'\"")
            phrase = re.sub(r"'s$", "", phrase)
            if 2 < len(phrase) <= 80 and not _NOT_A_NAME.match(phrase):
                found.append((match.end(), phrase))
    seen: set[str] = set()
    unique = []
    for _, phrase in sorted(found):
        if re.fullmatch(r"[A-Z]{4}", phrase):
            continue
        if phrase.lower() not in seen:
            seen.add(phrase.lower())
            unique.append(phrase)
    return unique


# --------------------------------------------------------------------------------------------------
# Talking to the ERP
# --------------------------------------------------------------------------------------------------


@dataclass
class Party:
    party_type: str
    legal_entity: str
    account: str
    name: str
    url: str | None

    @property
    def link(self) -> str:
        return md_link(f"{self.name} ({self.account})", self.url)


@dataclass
class Context:
    erp: ErpClient
    draft: TrajectoryDraft
    question: Question
    today: dt.date
    entities: dict[str, dict[str, Any]]
    """Legal entity code -> erp_info entry (accounting currency, fiscal year start)."""
    cache: dict[str, Any] = field(default_factory=dict)
    url_pattern: str | None = None
    """erp_info's record_url_pattern: ``{base}/erp/{legal_entity}/{entity_set}/{key}``."""

    def url(self, entity_set: str, legal_entity: str | None, key: str) -> str | None:
        if not self.url_pattern or not legal_entity or not key:
            return None
        return self.url_pattern.format(legal_entity=legal_entity, entity_set=entity_set, key=key)

    def link(self, entity_set: str, legal_entity: str | None, key: str, text: str = "") -> str:
        return md_link(text or key, self.url(entity_set, legal_entity, key))

    @property
    def as_of(self) -> dt.date:
        return self.question.as_of or self.today

    @property
    def legal_entity(self) -> str | None:
        return None if self.question.all_entities else self.question.legal_entity

    def accounting_currency(self, legal_entity: str | None) -> str | None:
        entry = self.entities.get(legal_entity or "")
        return entry.get("accounting_currency") if entry else None

    def fiscal_year_start(self, legal_entity: str) -> dt.date:
        month = int(self.entities.get(legal_entity, {}).get("fiscal_year_start_month", 1))
        year = self.as_of.year if self.as_of.month >= month else self.as_of.year - 1
        return dt.date(year, month, 1)

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        clean = {key: _jsonable(value) for key, value in arguments.items() if value is not None}
        result = await self.erp.call(tool, clean, self.draft)
        for attempt in range(1, TOOL_RETRIES + 1):
            if not (result.is_error and result.text.lstrip().startswith("TRANSIENT")):
                break
            await asyncio.sleep(0.2 * attempt)  # the server says the failure is temporary
            result = await self.erp.call(tool, clean, self.draft)
        if result.is_error:
            raise ToolFailure(tool, result.text.strip() or "tool error")
        data = result.structured
        if isinstance(data, dict) and set(data) == {"result"}:
            data = data["result"]
        if data is None:
            try:
                data = json.loads(result.text)
            except json.JSONDecodeError:
                data = {"text": result.text}
        return data if isinstance(data, dict) else {"items": data}

    async def all_items(self, tool: str, **arguments: Any) -> list[dict[str, Any]]:
        """Every item of a paged list tool."""
        items: list[dict] = []
        paging: dict[str, Any] = {"page": 1}
        for _ in range(MAX_PAGES):
            data = await self.call(tool, page_size=PAGE, **paging, **arguments)
            items += [item for item in data.get("items", []) if isinstance(item, dict)]
            # A page cut by the server's result budget continues at next_cursor, not at page + 1.
            cursor = data.get("next_cursor")
            if not data.get("has_more") or not cursor:
                break
            paging = {"cursor": cursor}
        return items

    async def party_items(self, tool: str, party: Party, **arguments: Any) -> list[dict[str, Any]]:
        """Every item a list tool holds for one party."""
        return await self.all_items(
            tool, account=party.account, legal_entity=party.legal_entity, **arguments
        )

    async def entity_items(self, tool: str, **arguments: Any) -> list[dict[str, Any]]:
        """Every item a list tool holds in the question's legal entity (all when it names none)."""
        return await self.all_items(tool, legal_entity=self.legal_entity, **arguments)

    async def query(self, entity_set: str, *filters: tuple[str, str, Any], **extra: Any):
        data = await self.call(
            "query_entity_set",
            entity_set=entity_set,
            legal_entity=self.legal_entity,
            filters=[{"field": f, "op": op, "value": v} for f, op, v in filters],
            top=500,
            **extra,
        )
        return [i for i in data.get("items", []) if isinstance(i, dict)], data

    async def party(self, party_type: str) -> Party:
        parties = await self.parties(party_type)
        return parties[0]

    async def parties(self, party_type: str, *, every_entity: bool = False) -> list[Party]:
        """The party the question names (all same-named ones across entities when asked)."""
        le = None if every_entity else self.legal_entity
        for account in self.question.accounts:
            for scope in dict.fromkeys([le, None]):
                found = await self._search(account, party_type, scope)
                exact = [p for _, p, _ in found if p.account.upper() == account.upper()]
                if exact:
                    if scope is None and le is not None:
                        self.draft.extra["legal_entity_mismatch"] = True
                    return exact
        best: tuple[float, list[Party]] | None = None
        for phrase in name_candidates(self.question)[:6]:
            found = await self._search(phrase, party_type, le)
            if not found:
                continue
            top = found[0][0]
            if found[0][2] == "fuzzy_name" and top < CONFIDENT_FUZZY:
                continue
            if best is None or top > best[0]:
                tied = [p for score, p, _ in found if score >= top - 0.01]
                best = (top, tied)
            if top >= 99.5:
                break
        if best is None or best[0] < CONFIDENT_MATCH:
            guesses = name_candidates(self.question)
            reference = self.question.accounts[0] if self.question.accounts else ""
            raise PartyNotFound(party_type, reference or (guesses[0] if guesses else "the party"))
        parties = best[1]
        if every_entity:
            name = parties[0].name.lower()
            return [p for p in parties if p.name.lower() == name]
        return parties[:1]

    async def _search(
        self, query: str, party_type: str, legal_entity: str | None
    ) -> list[tuple[float, Party, str]]:
        data = await self.call(
            "search_parties",
            query=query[:200],
            party_type=party_type,
            legal_entity=legal_entity,
            limit=10,
        )
        return [
            (
                float(item.get("score", 0)),
                Party(
                    party_type=item.get("party_type", party_type),
                    legal_entity=item["legal_entity"],
                    account=item["account"],
                    name=item.get("name", item["account"]),
                    url=item.get("url"),
                ),
                str(item.get("match", "")),
            )
            for item in data.get("candidates", [])
        ]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


# --------------------------------------------------------------------------------------------------
# Writing the answer
# --------------------------------------------------------------------------------------------------


def md_link(text: str, url: str | None) -> str:
    safe = str(text).replace("[", "(").replace("]", ")")
    return f"[{safe}]({url})" if url else safe


def money(amount: Any, currency: str | None = None) -> str:
    try:
        value = float(amount or 0)
    except (TypeError, ValueError):
        return str(amount)
    text = f"{value:,.2f}"
    return f"{currency} {text}" if currency else text


def long_date(day: dt.date | str | None) -> str:
    if day is None:
        return "-"
    if isinstance(day, str):
        try:
            day = dt.date.fromisoformat(day[:10])
        except ValueError:
            return day
    return f"{day:%B} {day.day}, {day.year}"


def table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append(f"\n({len(rows) - MAX_ROWS} more not shown.)")
    return "\n".join(lines)


def where(ctx: Context, le: str | None = None) -> str:
    le = le or ctx.legal_entity
    return f"in {le}" if le else "across all legal entities"


def when(ctx: Context) -> str:
    return f"as of {long_date(ctx.as_of)}"


def window(ctx: Context) -> str:
    q = ctx.question
    if q.start is None:
        return f"up to {long_date(q.end or ctx.as_of)}"
    return f"between {long_date(q.start)} and {long_date(q.end or ctx.as_of)}"


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def doc_link(item: dict[str, Any], *keys: str) -> str:
    key = next((str(item[k]) for k in keys if item.get(k) not in (None, "")), "record")
    return md_link(key, item.get("url"))


def with_table(head: str, headers: list[str], rows: list[list[Any]]) -> str:
    """The answer-first sentence, then a table for two or more records (one record: its link)."""
    if not rows:
        return head
    if len(rows) == 1:
        detail = "; ".join(f"{h}: {v}" for h, v in zip(headers, rows[0], strict=False))
        return f"{head}\n\nRecord: {detail}."
    return head + "\n\n" + table(headers, rows)


def listing(items: list[str], limit: int = 10) -> str:
    text = "; ".join(items[:limit])
    return text + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def name_link(record: dict[str, Any]) -> str:
    """A customer or vendor record as "Name (account)", linked."""
    return md_link(f"{record.get('name')} ({record.get('account')})", record.get("url"))


def links(items: list[dict[str, Any]], key: str) -> str:
    """The records' links, listed (see :func:`listing`)."""
    return listing([doc_link(item, key) for item in items])


def spread(items: list[dict[str, Any]], noun: str, party: str) -> str:
    """ "3 open transactions of 2 customers": the records and the parties (``customer`` or
    ``vendor``) they belong to."""
    parties = len({item.get(f"{party}_account") for item in items})
    return f"{plural(len(items), noun)} of {plural(parties, party)}"


def verb(count: int, singular: str, plural_form: str) -> str:
    return singular if count == 1 else plural_form


def total(items: list[dict[str, Any]], key: str, sign: float = 1.0) -> float:
    """The sum of one amount over the records (``sign=-1``: amounts the ERP stores negative)."""
    return sum(sign * float(item.get(key) or 0) for item in items)


def summed(items: list[dict[str, Any]], key: str, sign: float = 1.0) -> str:
    """The :func:`total` as money, in the first record's currency."""
    return money(total(items, key, sign), items[0].get("currency"))


# --------------------------------------------------------------------------------------------------
# What a solver is
# --------------------------------------------------------------------------------------------------

Handler = Callable[[Context], Awaitable[str]]


@dataclass(frozen=True)
class Rule:
    """Keyword patterns that recognise a question outside the generator's grammar: every pattern
    of ``all_of`` and none of ``unless`` is found in the lower-cased question."""

    all_of: tuple[str, ...]
    unless: tuple[str, ...] = ()

    def matches(self, question: Question) -> bool:
        return all(re.search(p, question.lower) for p in self.all_of) and not any(
            re.search(p, question.lower) for p in self.unless
        )


def recognised_by(*all_of: str, unless: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
    """Attach its keyword :class:`Rule` to a solver (read as ``handler.rule``)."""

    def attach(handler: Handler) -> Handler:
        handler.rule = Rule(all_of, unless)  # type: ignore[attr-defined]
        return handler

    return attach
