"""The scripted agent (``--harness scripted``): a deterministic, rule-based agent with no language
model.

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
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from harnesses._erp_client import ErpClient
from harnesses._protocol import (
    AgentEnvironment,
    AgentOutcome,
    AgentTask,
    HarnessOptions,
    TrajectoryDraft,
)
from harnesses._registry import harness
from ledgerbench.dataset import TaskType

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
            n=_top_n(lower),
            days=_days(lower),
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


def _top_n(lower: str) -> int | None:
    for pattern in (
        rf"\b(?:top|largest|biggest|highest|first|last)\s+{_NUM}\b",
        rf"\b{_NUM}\s+(?:largest|biggest|highest|customers|vendors|sales orders|payments)\b",
        rf"\bthe\s+{_NUM}\s+\w+",
    ):
        match = re.search(pattern, lower)
        if match:
            return _number(match.group(1))
    return None


def _days(lower: str) -> int | None:
    for pattern in (
        rf"next\s+{_NUM}\s+days?",
        rf"(?:more than|over|beyond|longer than(?: net)?|than net)\s+{_NUM}\s+days?",
        rf"net\s+{_NUM}\b",
        r"(\d+)\+\s*days?",
        rf"{_NUM}\s+days?",
    ):
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

    async def all_items(self, tool: str, **arguments: Any) -> tuple[list[dict], dict[str, Any]]:
        """Every item of a paged list tool (and the first page, for its totals)."""
        items: list[dict] = []
        first: dict[str, Any] = {}
        for page in range(1, MAX_PAGES + 1):
            data = await self.call(tool, page=page, page_size=PAGE, **arguments)
            first = first or data
            items += [item for item in data.get("items", []) if isinstance(item, dict)]
            if not data.get("has_more"):
                break
        return items, first

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


# --------------------------------------------------------------------------------------------------
# AR handlers
# --------------------------------------------------------------------------------------------------

Handler = Callable[[Context], Awaitable[str]]


async def _aging_row(ctx: Context, party: Party) -> dict[str, Any]:
    data = await ctx.call(
        "get_aging",
        party_type=party.party_type,
        account=party.account,
        legal_entity=party.legal_entity,
        as_of=ctx.as_of,
        bucket_edges=[30, 60, 90],
    )
    rows = data.get("rows") or []
    return rows[0] if rows else {}


def _bucket_rows(row: dict[str, Any], currency: str | None, use_cur: bool = True) -> list[list]:
    out = []
    for bucket in row.get("buckets") or []:
        amount = bucket.get("amount_cur") if use_cur else None
        if amount is None:
            amount = bucket.get("amount_acct")
        out.append([bucket.get("label", ""), money(amount, currency)])
    return out


async def aging_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    row = await _aging_row(ctx, party)
    currency = row.get("currency") or None
    balance = row.get("balance_cur", row.get("balance_acct", 0)) or 0
    if not row or not row.get("open_transaction_count"):
        return (
            f"{party.link} has no open transactions {where(ctx, party.legal_entity)} "
            f"{when(ctx)}: the balance is {money(0, currency)}."
        )
    head = (
        f"The aged balance of {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{money(balance, currency)}** over "
        f"{plural(row.get('open_transaction_count', 0), 'open transaction')}, aged by days "
        "past due:"
    )
    return head + "\n\n" + table(["Aging bucket", "Amount"], _bucket_rows(row, currency))


async def balance_all_entities(ctx: Context) -> str:
    parties = await ctx.parties("customer", every_entity=True)
    rows, totals = [], defaultdict(float)
    for party in parties:
        row = await _aging_row(ctx, party)
        currency = row.get("currency") or ""
        balance = float(row.get("balance_cur", 0) or 0)
        totals[currency] += balance
        rows.append([party.link, party.legal_entity, money(balance, currency or None)])
    head = (
        f"Open balances of customers named {parties[0].name} across all legal entities {when(ctx)}"
    )
    if len(parties) == 1:
        return f"{head}: {rows[0][0]} in {rows[0][1]} owes **{rows[0][2]}**."
    combined = ""
    if len(totals) == 1:
        currency, total = next(iter(totals.items()))
        combined = f" Combined: **{money(total, currency or None)}**."
    return (
        head
        + f": {len(parties)} accounts.{combined}\n\n"
        + table(["Customer", "Legal entity", "Balance"], rows)
    )


async def customer_balance(ctx: Context) -> str:
    party = await ctx.party("customer")
    row = await _aging_row(ctx, party)
    currency = row.get("currency")
    count = int(row.get("open_transaction_count", 0) or 0)
    if not count:
        return (
            f"{party.link} has no open transactions {where(ctx, party.legal_entity)} "
            f"{when(ctx)}: the outstanding balance is {money(0, currency)}."
        )
    text = (
        f"The outstanding balance of {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{money(row.get('balance_cur'), currency)}**"
    )
    acct = ctx.accounting_currency(party.legal_entity)
    if acct and acct != currency:
        text += f" ({money(row.get('balance_acct'), acct)} in accounting currency)"
    return text + f", over {plural(count, 'open transaction')}."


async def coming_due_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    start = ctx.as_of if ctx.question.days else (ctx.question.start or ctx.as_of)
    end = ctx.question.end or start + dt.timedelta(days=ctx.question.days or 7)
    if ctx.question.days:
        end = start + dt.timedelta(days=ctx.question.days)
    items, _ = await ctx.all_items(
        "list_customer_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        status="open",
        due_from=start,
        due_to=end,
        sort_by="due_date",
        descending=False,
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    span = f"between {long_date(start)} and {long_date(end)}"
    if not items:
        return f"No open transactions of {party.link} fall due {span}."
    currency = items[0].get("currency")
    total = sum(float(i["open_amount_cur"]) for i in items)
    head = (
        f"{plural(len(items), 'open transaction')} of {party.link} fall due {span}, totalling "
        f"**{money(total, currency)}**: "
        + listing(
            [f"{doc_link(i, 'document_number')} due {long_date(i['due_date'])}" for i in items]
        )
        + "."
    )
    rows = [
        [doc_link(i, "document_number"), long_date(i.get("due_date")), money(i["open_amount_cur"])]
        for i in items
    ]
    return with_table(head, ["Document", "Due date", "Open amount"], rows)


async def unpaid_invoices_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_customer_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        status="open",
        txn_type=AR_INVOICE_TYPES,
        date_to=ctx.as_of,
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    items.sort(key=lambda i: (-float(i["open_amount_cur"]), i.get("voucher", "")))
    if not items:
        return f"{party.link} has no unpaid invoices {where(ctx, party.legal_entity)} {when(ctx)}."
    currency = items[0].get("currency")
    total = sum(float(i["open_amount_cur"]) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), 'unpaid invoice')}** totalling "
        f"**{money(total, currency)}** {when(ctx)}, largest first: "
        + listing([doc_link(i, "document_number") for i in items])
        + "."
    )
    rows = [
        [
            doc_link(i, "document_number"),
            long_date(i.get("txn_date")),
            long_date(i.get("due_date")),
            money(i.get("amount_cur")),
            money(i.get("open_amount_cur")),
        ]
        for i in items
    ]
    return with_table(head, ["Invoice", "Date", "Due", "Amount", "Open"], rows)


async def _customer(ctx: Context) -> tuple[Party, dict[str, Any]]:
    party = await ctx.party("customer")
    data = await ctx.call("get_customer", account=party.account, legal_entity=party.legal_entity)
    customer = data.get("customer", {})
    party.url = customer.get("url") or party.url
    party.name = customer.get("name") or party.name
    return party, data


def _balance_cur(data: dict[str, Any], currency: str | None) -> float:
    balance = data.get("balance", {})
    by_currency = balance.get("balance_by_currency") or {}
    if currency and currency in by_currency:
        return float(by_currency[currency])
    if by_currency:
        return float(sum(by_currency.values()))
    return 0.0


async def credit_limit(ctx: Context) -> str:
    party, data = await _customer(ctx)
    customer = data["customer"]
    currency = customer.get("currency")
    limit = float(customer.get("credit_limit") or 0)
    balance = _balance_cur(data, currency)
    available = limit - balance
    over = " (over the limit)" if available < 0 else ""
    return (
        f"The credit limit of {party.link} in {party.legal_entity} is "
        f"**{money(limit, currency)}**. With an open balance of {money(balance, currency)} "
        f"{when(ctx)}, the available credit is **{money(available, currency)}**{over}."
    )


async def credit_utilization(ctx: Context) -> str:
    party, data = await _customer(ctx)
    customer = data["customer"]
    currency = customer.get("currency")
    limit = float(customer.get("credit_limit") or 0)
    balance = _balance_cur(data, currency)
    if not limit:
        return (
            f"{party.link} has no credit limit (limit {money(0, currency)}), so utilisation is "
            f"undefined; its balance is {money(balance, currency)}."
        )
    used = balance / limit * 100
    return (
        f"{party.link} in {party.legal_entity} uses **{used:.1f}%** of its credit limit "
        f"{when(ctx)}:"
        f" balance {money(balance, currency)} against a credit limit of {money(limit, currency)}."
    )


async def credit_rating(ctx: Context) -> str:
    party, data = await _customer(ctx)
    rating = data["customer"].get("credit_rating")
    return f"The credit rating of {party.link} in {party.legal_entity} is **{rating}**."


async def payment_terms(ctx: Context, party_type: str) -> str:
    if party_type == "customer":
        party, data = await _customer(ctx)
        record = data["customer"]
    else:
        party, data = await _vendor(ctx)
        record = data["vendor"]
    terms = data.get("payment_terms") or {}
    description = f" ({terms.get('description')})" if terms.get("description") else ""
    link = md_link(str(record.get("payment_terms")), terms.get("url"))
    return f"{party.link} in {party.legal_entity} has payment terms **{link}**{description}."


async def payment_terms_customer(ctx: Context) -> str:
    return await payment_terms(ctx, "customer")


async def contact_customer(ctx: Context) -> str:
    party, data = await _customer(ctx)
    c = data["customer"]
    address = ", ".join(
        str(c[k])
        for k in ("address_street", "address_city", "address_state", "address_zip")
        if c.get(k)
    )
    head = (
        f"{party.link} in {party.legal_entity}: phone **{c.get('contact_phone')}**, contact "
        f"{c.get('contact_name')}, email {c.get('contact_email')}."
    )
    rows = [
        ["Contact", c.get("contact_name")],
        ["Phone", c.get("contact_phone")],
        ["Email", c.get("contact_email")],
        ["Address", f"{address}, {c.get('address_country', '')}"],
    ]
    return with_table(head, ["Field", "Value"], rows)


async def method_of_payment_customer(ctx: Context) -> str:
    party, data = await _customer(ctx)
    method = data["customer"].get("method_of_payment")
    if not method:
        return (
            f"{party.link} in {party.legal_entity} has no method of payment set: no records "
            "were found."
        )
    detail = data.get("method_of_payment") or {}
    description = f" ({detail.get('description')})" if detail.get("description") else ""
    return (
        f"{party.link} in {party.legal_entity} pays by method of payment "
        f"**{md_link(method, detail.get('url'))}**{description}."
    )


async def collections_agent_customer(ctx: Context) -> str:
    party, data = await _customer(ctx)
    agent = data.get("collections_agent") or {}
    pool = data.get("collections_pool") or {}
    if not agent and not pool:
        return (
            f"{party.link} in {party.legal_entity} has no collections agent and no collections "
            "pool assigned: no records were found."
        )
    parts = []
    if agent:
        agent_text = f"{agent.get('name')} ({agent.get('agent_id')})"
        parts.append(f"collections agent **{md_link(agent_text, agent.get('url'))}**")
    else:
        parts.append("no collections agent")
    if pool:
        parts.append(f"collections pool **{md_link(pool.get('pool_id'), pool.get('url'))}**")
    return f"{party.link} in {party.legal_entity} is handled by " + " in ".join(parts) + "."


async def _customer_list(ctx: Context, label: str, *filters: tuple[str, str, Any]) -> str:
    items, data = await ctx.query("customers", *filters)
    count = int(data.get("total_count", len(items)))
    if not count:
        return f"There are no customers {label} {where(ctx)} {when(ctx)}."
    head = f"**{plural(count, 'customer')}** {label} {where(ctx)} {when(ctx)}: " + listing(
        [md_link(f"{i.get('name')} ({i.get('account')})", i.get("url")) for i in items]
    )
    rows = [
        [doc_link(i, "account"), i.get("name"), i.get("legal_entity"), i.get("group_id")]
        for i in items
    ]
    return with_table(head + ".", ["Account", "Name", "Legal entity", "Group"], rows)


async def credit_hold_list(ctx: Context) -> str:
    return await _customer_list(ctx, "on credit hold", ("credit_hold", "eq", True))


async def customers_in_group(ctx: Context) -> str:
    group = ctx.question.group_id
    return await _customer_list(ctx, f"in customer group {group}", ("group_id", "eq", group))


async def customers_by_currency(ctx: Context) -> str:
    currency = ctx.question.currency
    return await _customer_list(ctx, f"with currency {currency}", ("currency", "eq", currency))


async def rating_count_group(ctx: Context) -> str:
    rating = re.search(r"\b(excellent|good|fair|poor)\b", ctx.question.lower)
    value = rating.group(1).capitalize() if rating else ""
    group = ctx.question.group_id
    return await _customer_list(
        ctx,
        f"in customer group {group} rated {value}",
        ("group_id", "eq", group),
        ("credit_rating", "eq", value),
    )


async def unassigned_pool_count(ctx: Context) -> str:
    items, data = await ctx.query(
        "customers", ("collections_pool_id", "eq", None), select=["account", "name"]
    )
    count = int(data.get("total_count", len(items)))
    if not count:
        return f"There are no customers without a collections pool {where(ctx)} {when(ctx)}."
    head = (
        f"**{plural(count, 'customer')}** {where(ctx)} {'is' if count == 1 else 'are'} not "
        f"assigned to any collections pool {when(ctx)}: "
        + listing([md_link(f"{i.get('name')} ({i.get('account')})", i.get("url")) for i in items])
    )
    return head + "."


async def over_limit_group_top(ctx: Context) -> str:
    group = ctx.question.group_id
    customers, _ = await ctx.query("customers", ("group_id", "eq", group))
    aging = await ctx.call(
        "get_aging",
        party_type="customer",
        legal_entity=ctx.legal_entity,
        group_id=group,
        as_of=ctx.as_of,
        limit=1000,
    )
    balance = {row.get("account"): float(row.get("balance_cur") or 0) for row in aging["rows"]}
    over = []
    for c in customers:
        excess = balance.get(c["account"], 0.0) - float(c.get("credit_limit") or 0)
        if excess > 0.005:
            over.append((round(excess, 2), c))
    over.sort(key=lambda x: (-x[0], x[1]["account"]))
    over = over[: ctx.question.n or 10]
    if not over:
        return (
            f"No customer in customer group {group} {where(ctx)} is over its credit limit "
            f"{when(ctx)}."
        )
    head = (
        f"{plural(len(over), 'customer')} in group {group} {where(ctx)} "
        f"{'is' if len(over) == 1 else 'are'} over the credit limit {when(ctx)}, largest excess "
        "first: "
        + listing(
            [f"{doc_link(c, 'account')} over by {money(x, c.get('currency'))}" for x, c in over]
        )
        + "."
    )
    rows = [
        [doc_link(c, "account"), c.get("name"), money(c.get("credit_limit")), money(x)]
        for x, c in over
    ]
    return with_table(head, ["Customer", "Name", "Credit limit", "Over by"], rows)


async def top_past_due_group(ctx: Context) -> str:
    q = ctx.question
    group, days = q.group_id, q.days or 90
    customers, _ = await ctx.query(
        "customers", ("group_id", "eq", group), select=["account", "name"]
    )
    names = {c["account"]: c for c in customers}
    items, _ = await ctx.all_items(
        "list_customer_transactions",
        legal_entity=ctx.legal_entity,
        status="open",
        txn_type=AR_INVOICE_TYPES,
        due_to=ctx.as_of - dt.timedelta(days=days + 1),
    )
    totals: dict[str, float] = defaultdict(float)
    for item in items:
        if item.get("customer_account") in names and float(item.get("open_amount_cur") or 0) > 0:
            totals[item["customer_account"]] += float(item.get("open_amount_acct") or 0)
    ranked = sorted(
        ((round(v, 2), a) for a, v in totals.items() if v > 0), key=lambda x: (-x[0], x[1])
    )
    ranked = ranked[: q.n or 10]
    if not ranked:
        return (
            f"No customer in group {group} {where(ctx)} has invoices more than {days} days past "
            f"due {when(ctx)}."
        )
    acct = ctx.accounting_currency(ctx.legal_entity)
    lines = [
        f"{md_link(names[a].get('name', a) + f' ({a})', names[a].get('url'))} {money(v, acct)}"
        for v, a in ranked
    ]
    head = (
        f"Top {len(ranked)} customers in group {group} {where(ctx)} by balance more than {days} "
        f"days past due {when(ctx)} (accounting currency): " + "; ".join(lines) + "."
    )
    rows = [[names[a].get("name", a), a, money(v, acct)] for v, a in ranked]
    return with_table(head, ["Customer", "Account", "Past due"], rows)


def _row_link(row: dict[str, Any]) -> str:
    return md_link(f"{row.get('name')} ({row.get('account')})", row.get("url"))


async def aging_top_customers(ctx: Context) -> str:
    n = ctx.question.n or 10
    data = await ctx.call(
        "get_aging",
        party_type="customer",
        legal_entity=ctx.legal_entity,
        as_of=ctx.as_of,
        bucket_edges=[30, 60, 90],
        sort_by="balance",
        limit=n,
    )
    rows = data.get("rows") or []
    if not rows:
        return f"There are no customers with open balances {where(ctx)} {when(ctx)}."
    labels = [b.get("label", "") for b in rows[0].get("buckets", [])]
    head = (
        f"The {plural(len(rows), 'customer')} with the largest outstanding balances {where(ctx)} "
        f"{when(ctx)} (accounting currency): "
        + "; ".join(
            f"{_row_link(r)} {money(r.get('balance_acct'), r.get('accounting_currency'))}"
            for r in rows
        )
        + "."
    )
    table_rows = [
        [_row_link(r), money(r.get("balance_acct"))]
        + [money(b.get("amount_acct")) for b in r.get("buckets", [])]
        for r in rows
    ]
    return with_table(head, ["Customer", "Balance", *labels], table_rows)


async def aging_totals_entity(ctx: Context) -> str:
    data = await ctx.call(
        "get_aging",
        party_type="customer",
        legal_entity=ctx.legal_entity,
        as_of=ctx.as_of,
        bucket_edges=[30, 60, 90],
        group_by="legal_entity",
    )
    acct = ctx.accounting_currency(ctx.legal_entity)
    row = (data.get("rows") or [{}])[0]
    total = row.get("balance_acct", 0)
    buckets = [[b.get("label"), money(b.get("amount_acct"), acct)] for b in row.get("buckets", [])]
    head = (
        f"Open customer balances {where(ctx)} {when(ctx)} total **{money(total, acct)}** "
        "(accounting currency), by days past due:"
    )
    return head + "\n\n" + table(["Aging bucket", "Amount"], buckets)


async def past_due_total_entity(ctx: Context) -> str:
    days = ctx.question.days or 90
    items, _ = await ctx.all_items(
        "list_customer_transactions",
        legal_entity=ctx.legal_entity,
        status="open",
        txn_type=AR_INVOICE_TYPES,
        due_to=ctx.as_of - dt.timedelta(days=days + 1),
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"There are no customer transactions more than {days} days past due {where(ctx)}."
    total = sum(float(i.get("open_amount_acct") or 0) for i in items)
    customers = len({i.get("customer_account") for i in items})
    return (
        f"Unpaid customer receivables more than {days} days past due {where(ctx)} {when(ctx)} "
        f"total **{money(total, acct)}** (accounting currency) across "
        f"{plural(len(items), 'open transaction')} of {plural(customers, 'customer')}."
    )


# ---- payments and invoices -----------------------------------------------------------------------


async def _customer_txns(ctx: Context, party: Party, txn_types: list[str], **extra: Any):
    items, _ = await ctx.all_items(
        "list_customer_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        txn_type=txn_types,
        **extra,
    )
    return [i for i in items if str(i.get("txn_date", "")) <= ctx.as_of.isoformat()]


def _txn_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "document_number"),
            long_date(i.get("txn_date")),
            money(abs(float(i.get("amount_cur") or 0)), i.get("currency")),
        ]
        for i in items
    ]


def _txn_line(item: dict[str, Any]) -> str:
    amount = money(abs(float(item.get("amount_cur") or 0)), item.get("currency"))
    return f"{doc_link(item, 'document_number')} on {long_date(item.get('txn_date'))}, {amount}"


def _by_size(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        items,
        key=lambda i: (-abs(float(i.get("amount_cur") or 0)), i.get("txn_date"), i.get("voucher")),
    )


async def largest_payment(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = _by_size(await _customer_txns(ctx, party, ["payment"]))
    if not items:
        return f"{party.link} has made no payments {where(ctx, party.legal_entity)} {when(ctx)}."
    top = items[0]
    return (
        f"The largest payment by {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{_txn_line(top)}** (voucher {top.get('voucher')})."
    )


async def top_payments(ctx: Context) -> str:
    party = await ctx.party("customer")
    n = ctx.question.n or 10
    items = _by_size(await _customer_txns(ctx, party, ["payment"]))[:n]
    if not items:
        return f"{party.link} has made no payments {where(ctx, party.legal_entity)} {when(ctx)}."
    head = (
        f"The {plural(len(items), 'largest payment')} by {party.link} {when(ctx)}: "
        + "; ".join(_txn_line(i) for i in items)
        + "."
    )
    return with_table(head, ["Payment", "Date", "Amount"], _txn_rows(items))


async def payments_in_range(ctx: Context) -> str:
    party = await ctx.party("customer")
    q = ctx.question
    items = await _customer_txns(ctx, party, ["payment"], date_from=q.start, date_to=q.end)
    if not items:
        return f"{party.link} made no payments {window(ctx)}."
    total = sum(-float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"{party.link} made **{plural(len(items), 'payment')}** {window(ctx)}, totalling "
        f"**{money(total, items[0].get('currency'))}**."
    )
    return with_table(head, ["Payment", "Date", "Amount"], _txn_rows(items))


async def last_payment(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _customer_txns(ctx, party, ["payment"])
    if not items:
        return f"{party.link} has made no payments {where(ctx, party.legal_entity)} {when(ctx)}."
    last_day = max(str(i["txn_date"]) for i in items)
    last = [i for i in items if str(i["txn_date"]) == last_day]
    total = sum(-float(i.get("amount_cur") or 0) for i in last)
    return (
        f"The most recent payment by {party.link} was on **{long_date(last_day)}**: "
        + "; ".join(_txn_line(i) for i in last)
        + (f" (total {money(total, last[0].get('currency'))})." if len(last) > 1 else ".")
    )


async def collected_fiscal_year(ctx: Context) -> str:
    party = await ctx.party("customer")
    start = ctx.fiscal_year_start(party.legal_entity)
    items = await _customer_txns(ctx, party, ["payment"], date_from=start, date_to=ctx.as_of)
    span = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.as_of)})"
    if not items:
        return f"Nothing was collected from {party.link} {span}: no payments (0.00)."
    total = sum(-float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"**{money(total, items[0].get('currency'))}** was collected from {party.link} {span}, in "
        f"{plural(len(items), 'payment')}."
    )
    return with_table(head, ["Payment", "Date", "Amount"], _txn_rows(items))


async def invoices_in_range_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    q = ctx.question
    items = await _customer_txns(ctx, party, AR_INVOICE_TYPES, date_from=q.start, date_to=q.end)
    if not items:
        return f"No invoices were issued to {party.link} {window(ctx)}."
    total = sum(float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"**{plural(len(items), 'invoice')}** were issued to {party.link} {window(ctx)}, totalling "
        f"**{money(total, items[0].get('currency'))}**."
    )
    return with_table(head, ["Invoice", "Date", "Amount"], _txn_rows(items))


async def invoice_count_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _customer_txns(ctx, party, AR_INVOICE_TYPES, date_to=ctx.as_of)
    if not items:
        return f"{party.link} has no invoices {where(ctx, party.legal_entity)} {when(ctx)}."
    total = sum(float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), 'posted invoice')}** {when(ctx)}, totalling "
        f"**{money(total, items[0].get('currency'))}**."
    )
    return with_table(head, ["Invoice", "Date", "Amount"], _txn_rows(items))


async def _entity_invoices(ctx: Context) -> list[dict[str, Any]]:
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_customer_transactions",
        legal_entity=ctx.legal_entity,
        txn_type=AR_INVOICE_TYPES,
        date_from=q.start,
        date_to=q.end or ctx.as_of,
    )
    return items


async def largest_invoice_entity(ctx: Context) -> str:
    items = await _entity_invoices(ctx)
    if not items:
        return f"No invoices were posted {where(ctx)} {window(ctx)}."
    top = sorted(
        items,
        key=lambda i: (-float(i.get("amount_acct") or 0), i.get("txn_date"), i.get("voucher")),
    )[0]
    acct = ctx.accounting_currency(ctx.legal_entity)
    extra = ""
    if top.get("currency") != acct:
        extra = f" ({money(top.get('amount_acct'), acct)} in accounting currency)"
    return (
        f"The largest customer invoice {where(ctx)} {window(ctx)} is "
        f"**{doc_link(top, 'document_number')}** to customer "
        f"{ctx.link('customers', top.get('legal_entity'), top.get('customer_account', ''))} on "
        f"{long_date(top.get('txn_date'))}: **{money(top.get('amount_cur'), top.get('currency'))}**"
        f"{extra}."
    )


async def top_invoiced_customer_entity(ctx: Context) -> str:
    items = await _entity_invoices(ctx)
    if not items:
        return f"No invoices were posted {where(ctx)} {window(ctx)}."
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for i in items:
        totals[i["customer_account"]][0] += float(i.get("amount_acct") or 0)
        totals[i["customer_account"]][1] += 1
    ranked = sorted(totals.items(), key=lambda kv: (-round(kv[1][0], 2), kv[0]))
    account, (total, count) = ranked[0]
    acct = ctx.accounting_currency(ctx.legal_entity)
    customer = await ctx.call("get_customer", account=account, legal_entity=ctx.legal_entity)
    record = customer.get("customer", {})
    link = md_link(f"{record.get('name', account)} ({account})", record.get("url"))
    head = (
        f"{link} has the highest total invoiced amount {where(ctx)} {window(ctx)}: "
        f"**{money(total, acct)}** (accounting currency) over {plural(int(count), 'invoice')}."
    )
    rows = [[a, money(v[0], acct), int(v[1])] for a, v in ranked[:5]]
    return with_table(head, ["Customer", "Invoiced", "Invoices"], rows)


async def unapplied_credit_notes_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _customer_txns(ctx, party, ["credit_note"], status="open")
    if not items:
        return f"{party.link} has no unapplied credit notes {when(ctx)}."
    total = sum(-float(i.get("open_amount_cur") or 0) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), 'unapplied credit note')}**, "
        f"**{money(total, items[0].get('currency'))}** in total: "
        + listing([doc_link(i, "document_number") for i in items])
        + "."
    )
    rows = [
        [
            doc_link(i, "document_number"),
            long_date(i.get("txn_date")),
            money(-float(i.get("open_amount_cur") or 0)),
            money(-float(i.get("amount_cur") or 0)),
        ]
        for i in items
    ]
    return with_table(head, ["Credit note", "Date", "Unapplied", "Amount"], rows)


# ---- sales orders --------------------------------------------------------------------------------


def _order_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(o, "sales_id"),
            o.get("customer_account", ""),
            o.get("order_type", ""),
            o.get("status", ""),
            long_date(o.get("order_date")),
            money(o.get("total_amount"), o.get("currency")),
        ]
        for o in items
    ]


ORDER_HEADERS = ["Sales order", "Customer", "Type", "Status", "Order date", "Amount"]


async def _orders(ctx: Context, **args: Any) -> list[dict[str, Any]]:
    items, _ = await ctx.all_items("list_sales_orders", date_to=ctx.as_of, **args)
    return items


async def open_orders_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _orders(
        ctx, account=party.account, legal_entity=party.legal_entity, status=["open"]
    )
    if not items:
        return (
            f"{party.link} has no open sales orders {where(ctx, party.legal_entity)} {when(ctx)}."
        )
    head = f"{party.link} has **{plural(len(items), 'open sales order')}**: " + listing(
        [doc_link(o, "sales_id") for o in items]
    )
    return with_table(head + ".", ORDER_HEADERS, _order_rows(items))


async def order_count_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _orders(ctx, account=party.account, legal_entity=party.legal_entity)
    if not items:
        return f"{party.link} has no sales orders {where(ctx, party.legal_entity)} {when(ctx)}."
    by_status: dict[str, int] = defaultdict(int)
    for o in items:
        by_status[o.get("status", "?")] += 1
    split = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
    head = f"{party.link} has **{plural(len(items), 'sales order')}** {when(ctx)}: {split}."
    return with_table(head, ORDER_HEADERS, _order_rows(items))


async def do_not_process_orders(ctx: Context) -> str:
    items, _ = await ctx.query(
        "sales-orders", ("do_not_process", "eq", True), ("order_date", "le", ctx.as_of.isoformat())
    )
    if not items:
        return f"There are no sales orders marked 'Do not process' {where(ctx)} {when(ctx)}."
    head = f"**{plural(len(items), 'sales order')}** {where(ctx)} are marked 'Do not process': "
    head += listing([doc_link(o, "sales_id") for o in items]) + "."
    return with_table(head, ORDER_HEADERS, _order_rows(items))


async def most_open_orders_entity(ctx: Context) -> str:
    items = await _orders(ctx, legal_entity=ctx.legal_entity, status=["open"])
    counts: dict[str, int] = defaultdict(int)
    for o in items:
        counts[o["customer_account"]] += 1
    if not counts:
        return f"There are no open sales orders {where(ctx)} {when(ctx)}."
    best = max(counts.values())
    leaders = sorted(a for a, n in counts.items() if n == best)
    return (
        f"The customer(s) with the most open sales orders {where(ctx)} {when(ctx)}: "
        f"**{', '.join(ctx.link('customers', ctx.legal_entity, a) for a in leaders)}**, with "
        f"{plural(best, 'open order')} each."
    )


async def largest_orders_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _orders(
        ctx, account=party.account, legal_entity=party.legal_entity, order_type="sales"
    )
    items = [o for o in items if o.get("status") != "canceled"]
    items.sort(key=lambda o: (-float(o.get("total_amount") or 0), o.get("sales_id")))
    items = items[: ctx.question.n or 5]
    if not items:
        return f"{party.link} has no sales orders {where(ctx, party.legal_entity)} {when(ctx)}."
    head = f"The {plural(len(items), 'largest sales order')} of {party.link}: " + "; ".join(
        f"{doc_link(o, 'sales_id')} {money(o.get('total_amount'), o.get('currency'))}"
        for o in items
    )
    return with_table(head + ".", ORDER_HEADERS, _order_rows(items))


async def return_orders_entity(ctx: Context) -> str:
    items = await _orders(ctx, legal_entity=ctx.legal_entity, order_type="return")
    if not items:
        return f"There are no return orders {where(ctx)} {when(ctx)}."
    head = f"There are **{plural(len(items), 'return order')}** {where(ctx)} {when(ctx)}."
    return with_table(head, ORDER_HEADERS, _order_rows(items))


async def orders_by_release_status(ctx: Context) -> str:
    q = ctx.question
    status = "released"
    if q.has(r"partially"):
        status = "partially_released"
    elif q.has(r"release status '?open|status '?not released|'open'"):
        status = "open"
    items, _ = await ctx.query(
        "sales-orders",
        ("release_status", "eq", status),
        ("status", "eq", "open"),
        ("order_date", "le", ctx.as_of.isoformat()),
    )
    label = status.replace("_", " ")
    if not items:
        return f"There are no open sales orders with release status {label} {where(ctx)}."
    head = (
        f"**{plural(len(items), 'open sales order')}** {where(ctx)} "
        f"{'has' if len(items) == 1 else 'have'} release status {label}: "
        + listing([doc_link(o, "sales_id") for o in items])
        + "."
    )
    return with_table(head, ORDER_HEADERS, _order_rows(items))


# ---- collections ---------------------------------------------------------------------------------


async def _letters(ctx: Context, party: Party) -> list[dict[str, Any]]:
    items, _ = await ctx.all_items(
        "list_collection_letters",
        account=party.account,
        legal_entity=party.legal_entity,
        date_to=ctx.as_of,
    )
    return sorted(items, key=lambda i: (str(i.get("sent_date")), i.get("letter_id")))


def _letter_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "letter_id"),
            i.get("sequence", ""),
            i.get("level", ""),
            long_date(i.get("sent_date")),
            money(i.get("amount")),
        ]
        for i in items
    ]


async def last_letter_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    letters = await _letters(ctx, party)
    if not letters:
        return f"No collection letters have been sent to {party.link} {when(ctx)}."
    last = letters[-1]
    return (
        f"The last collection letter to {party.link} was **{doc_link(last, 'letter_id')}**, sent "
        f"on **{long_date(last.get('sent_date'))}**; the customer is at collection letter level "
        f"**{last.get('level')}** ({last.get('sequence')}, {money(last.get('amount'))})."
    )


async def letters_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    letters = await _letters(ctx, party)
    if not letters:
        return f"No collection letters have been sent to {party.link} {when(ctx)}."
    head = f"**{plural(len(letters), 'collection letter')}** were sent to {party.link}: " + listing(
        [doc_link(i, "letter_id") for i in letters]
    )
    return with_table(
        head + ".", ["Letter", "Sequence", "Level", "Sent", "Amount"], _letter_rows(letters)
    )


def _activity_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(a, "activity_id"),
            a.get("customer_account", ""),
            f"{a.get('category', '')} {a.get('activity_type', '')}",
            a.get("purpose", ""),
            a.get("status", ""),
            long_date(a.get("due_date")),
        ]
        for a in items
    ]


ACTIVITY_HEADERS = ["Activity", "Customer", "Kind", "Purpose", "Status", "Due"]


async def open_activities_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_collection_activities",
        account=party.account,
        legal_entity=party.legal_entity,
        status=OPEN_ACTIVITY,
    )
    items = [a for a in items if str(a.get("created_date", "")) <= ctx.as_of.isoformat()]
    if not items:
        return f"{party.link} has no open collections activities {when(ctx)}."
    count = plural(len(items), "open collections activity", "open collections activities")
    head = f"{party.link} has **{count}**: "
    head += listing([doc_link(a, "activity_id") for a in items]) + "."
    return with_table(head, ACTIVITY_HEADERS, _activity_rows(items))


async def open_cases_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_collection_cases",
        account=party.account,
        legal_entity=party.legal_entity,
        status="open",
    )
    items = [c for c in items if str(c.get("opened_date", "")) <= ctx.as_of.isoformat()]
    if not items:
        return f"{party.link} has no open collections cases {when(ctx)}."
    head = f"{party.link} has **{plural(len(items), 'open collections case')}**: " + listing(
        [doc_link(c, "case_id") for c in items]
    )
    rows = [
        [doc_link(c, "case_id"), c.get("description", ""), long_date(c.get("opened_date"))]
        for c in items
    ]
    return with_table(head + ".", ["Case", "Description", "Opened"], rows)


async def agent_worklist(ctx: Context) -> str:
    q = ctx.question
    agent = re.search(r"\bagent\s+([A-Z]{1,4}\d{2,5})\b", q.text)
    day = q.single_date or q.as_of or ctx.today
    agent_id = agent.group(1) if agent else None
    items, _ = await ctx.all_items(
        "list_collection_activities",
        legal_entity=ctx.legal_entity,
        owner_agent_id=agent_id,
        due_from=day,
        due_to=day,
        status=OPEN_ACTIVITY,
    )
    who = f"agent {agent_id}" if agent_id else "the collections agents"
    if not items:
        return (
            f"There are no open collections activities due on {long_date(day)} for {who} "
            f"{where(ctx)}: the worklist is empty."
        )
    customers = sorted({a.get("customer_account", "") for a in items})
    head = (
        f"The worklist of {who} has **{plural(len(items), 'open activity', 'open activities')}** "
        f"due on {long_date(day)} {where(ctx)}, for {plural(len(customers), 'customer')}: "
        + ", ".join(ctx.link("customers", items[0].get("legal_entity"), c) for c in customers)
        + "."
    )
    return with_table(head, ACTIVITY_HEADERS, _activity_rows(items))


async def open_tasks_due_entity(ctx: Context) -> str:
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_collection_activities",
        legal_entity=ctx.legal_entity,
        category="task",
        status=OPEN_ACTIVITY,
        due_from=q.start,
        due_to=q.end,
    )
    if not items:
        return f"There are no open collections tasks due {window(ctx)} {where(ctx)}."
    head = f"**{plural(len(items), 'open collections task')}** {'is' if len(items) == 1 else 'are'}"
    head += f" due {window(ctx)} {where(ctx)}."
    return with_table(head, ACTIVITY_HEADERS, _activity_rows(items))


# ---- cash discounts and disputes -----------------------------------------------------------------


def _discount_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "document_number"),
            i.get("account", ""),
            money(i.get("cash_discount_amount"), i.get("currency")),
            long_date(i.get("cash_discount_date")),
        ]
        for i in items
    ]


DISCOUNT_HEADERS = ["Invoice", "Customer", "Discount", "Discount date"]


async def discounts_expiring_entity(ctx: Context) -> str:
    q = ctx.question
    days = q.days if q.days is not None else ((q.end - ctx.as_of).days if q.end else 7)
    items, _ = await ctx.all_items(
        "list_cash_discounts",
        party_type="customer",
        legal_entity=ctx.legal_entity,
        as_of=ctx.as_of,
        expiring_within_days=days,
        state="available",
    )
    items = [
        i
        for i in items
        if float(i.get("open_amount_cur") or 0) > 0
        and str(i.get("txn_date", "")) <= ctx.as_of.isoformat()
    ]
    end = ctx.as_of + dt.timedelta(days=days)
    span = f"between {long_date(ctx.as_of)} and {long_date(end)}"
    if not items:
        return (
            f"There are no open customer invoices with a cash discount expiring {span} "
            f"{where(ctx)}."
        )
    head = (
        f"**{plural(len(items), 'open customer invoice')}** {where(ctx)} "
        f"{'has' if len(items) == 1 else 'have'} a cash discount expiring {span}: "
        + listing([doc_link(i, "document_number") for i in items])
        + "."
    )
    return with_table(head, DISCOUNT_HEADERS, _discount_rows(items))


async def discounts_taken_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_settlements",
        party_type="customer",
        account=party.account,
        legal_entity=party.legal_entity,
        date_from=q.start,
        date_to=q.end,
    )
    taken = [i for i in items if float(i.get("cash_discount_taken") or 0) > 0]
    if not taken:
        return (
            f"No. {party.link} took no cash discounts {window(ctx)}: no payment was made within a "
            "discount window."
        )
    total = sum(float(i["cash_discount_taken"]) for i in taken)
    head = (
        f"{party.link} paid within the cash discount window **{plural(len(taken), 'time')}** "
        f"{window(ctx)}, taking **{money(total, taken[0].get('currency'))}** in cash discounts."
    )
    rows = [
        [
            doc_link(i, "settlement_id"),
            i.get("debit_document_number", ""),
            long_date(i.get("settled_date")),
            money(i.get("cash_discount_taken")),
        ]
        for i in taken
    ]
    return with_table(head, ["Settlement", "Invoice", "Settled", "Discount taken"], rows)


async def open_discount_invoices_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_cash_discounts",
        party_type="customer",
        account=party.account,
        legal_entity=party.legal_entity,
        as_of=ctx.as_of,
        state="available",
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    if not items:
        return (
            f"No. {party.link} has no open invoices with a cash discount still available "
            f"{when(ctx)}."
        )
    head = (
        f"Yes. {party.link} has **{plural(len(items), 'open invoice')}** with a cash discount "
        "still available: "
        + listing(
            [
                f"{doc_link(i, 'document_number')}: "
                f"{money(i.get('cash_discount_amount'), i.get('currency'))}"
                f" if paid by {long_date(i.get('cash_discount_date'))}"
                for i in items
            ]
        )
        + "."
    )
    return with_table(head, DISCOUNT_HEADERS, _discount_rows(items))


async def _disputes(ctx: Context, kind: str) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_disputes",
        account=party.account,
        legal_entity=party.legal_entity,
        kind=kind,
        status="open",
        opened_to=ctx.as_of,
    )
    noun = "dispute" if kind == "dispute" else "deduction"
    if not items:
        return f"{party.link} has no open {noun}s {when(ctx)}: no records were found."
    acct = ctx.accounting_currency(party.legal_entity)
    total = sum(float(i.get("amount") or 0) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), 'open ' + noun)}** totalling "
        f"**{money(total, acct)}**: "
        + listing(
            [
                f"{doc_link(i, 'dispute_id')} ({i.get('reason')}, {money(i.get('amount'))})"
                for i in items
            ]
        )
        + "."
    )
    rows = [
        [
            doc_link(i, "dispute_id"),
            md_link(i.get("voucher", ""), i.get("invoice_url")),
            i.get("reason", ""),
            money(i.get("amount")),
            long_date(i.get("opened_date")),
        ]
        for i in items
    ]
    return with_table(head, ["Dispute", "Invoice", "Reason", "Amount", "Opened"], rows)


async def open_disputes_customer(ctx: Context) -> str:
    return await _disputes(ctx, "dispute")


async def open_deductions_customer(ctx: Context) -> str:
    return await _disputes(ctx, "deduction")


# --------------------------------------------------------------------------------------------------
# AP handlers
# --------------------------------------------------------------------------------------------------


async def _vendor(ctx: Context) -> tuple[Party, dict[str, Any]]:
    party = await ctx.party("vendor")
    data = await ctx.call("get_vendor", account=party.account, legal_entity=party.legal_entity)
    vendor = data.get("vendor", {})
    party.url = vendor.get("url") or party.url
    party.name = vendor.get("name") or party.name
    return party, data


async def vendor_balance(ctx: Context) -> str:
    party = await ctx.party("vendor")
    row = await _aging_row(ctx, party)
    currency = row.get("currency")
    count = int(row.get("open_transaction_count", 0) or 0)
    if not count:
        return (
            f"There are no open transactions with {party.link} {where(ctx, party.legal_entity)} "
            f"{when(ctx)}: the AP balance is {money(0, currency)}."
        )
    text = (
        f"The open AP balance owed to {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{money(row.get('balance_cur'), currency)}**"
    )
    acct = ctx.accounting_currency(party.legal_entity)
    if acct and acct != currency:
        text += f" ({money(row.get('balance_acct'), acct)} in accounting currency)"
    return text + f", over {plural(count, 'open transaction')}."


async def _vendor_aging(ctx: Context, **args: Any) -> dict[str, Any]:
    return await ctx.call(
        "get_aging", party_type="vendor", legal_entity=ctx.legal_entity, as_of=ctx.as_of, **args
    )


async def ap_by_group_entity(ctx: Context) -> str:
    data = await _vendor_aging(ctx, group_by="group", limit=1000)
    acct = ctx.accounting_currency(ctx.legal_entity)
    rows = sorted(data.get("rows", []), key=lambda r: str(r.get("group_id")))
    total = sum(float(r.get("balance_acct") or 0) for r in rows)
    if not rows:
        return f"There are no open vendor balances {where(ctx)} {when(ctx)}."
    head = f"Open AP balance {where(ctx)} {when(ctx)} by vendor group (accounting currency): "
    head += "; ".join(
        f"group {ctx.link('vendor-groups', ctx.legal_entity, str(r.get('group_id')))} "
        f"{money(r.get('balance_acct'), acct)}"
        for r in rows
    )
    head += f"; total **{money(total, acct)}**."
    table_rows = [
        [r.get("group_id"), r.get("name") or "", money(r.get("balance_acct"))] for r in rows
    ]
    return with_table(head, ["Vendor group", "Name", "Balance"], table_rows)


async def ap_group_balance(ctx: Context) -> str:
    group = ctx.question.group_id
    data = await _vendor_aging(ctx, group_id=group, group_by="group")
    acct = ctx.accounting_currency(ctx.legal_entity)
    total = sum(float(r.get("balance_acct") or 0) for r in data.get("rows", []))
    if not data.get("rows") or not round(total, 2):
        return (
            f"There are no open items for the vendors of vendor group {group} {where(ctx)}: "
            f"the combined AP balance is {money(0, acct)}."
        )
    return (
        f"The combined AP balance of vendor group "
        f"{ctx.link('vendor-groups', ctx.legal_entity, str(group))} {where(ctx)} {when(ctx)} is "
        f"**{money(total, acct)}** (accounting currency)."
    )


async def ap_by_currency_entity(ctx: Context) -> str:
    data = await _vendor_aging(ctx, group_by="currency")
    acct = ctx.accounting_currency(ctx.legal_entity)
    rows = sorted(data.get("rows", []), key=lambda r: str(r.get("currency")))
    if not rows:
        return f"There are no open vendor balances {where(ctx)} {when(ctx)}."
    total = sum(float(r.get("balance_acct") or 0) for r in rows)
    head = f"Open AP balance {where(ctx)} {when(ctx)} by transaction currency: " + "; ".join(
        f"{r.get('currency')} {money(r.get('balance_cur'), r.get('currency'))} "
        f"({money(r.get('balance_acct'), acct)} accounting)"
        for r in rows
    )
    head += f"; total **{money(total, acct)}** in accounting currency."
    table_rows = [
        [r.get("currency"), money(r.get("balance_cur")), money(r.get("balance_acct"))] for r in rows
    ]
    return with_table(head, ["Currency", "Balance", f"Balance ({acct})"], table_rows)


async def _open_ap(ctx: Context, **args: Any) -> list[dict[str, Any]]:
    items, _ = await ctx.all_items(
        "list_vendor_transactions",
        legal_entity=ctx.legal_entity,
        status="open",
        txn_type=["invoice"],
        **args,
    )
    return [
        i
        for i in items
        if float(i.get("open_amount_cur") or 0) > 0
        and str(i.get("txn_date", "")) <= ctx.as_of.isoformat()
    ]


def _ap_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "document_number"),
            i.get("vendor_account", ""),
            long_date(i.get("due_date")),
            money(i.get("open_amount_cur"), i.get("currency")),
        ]
        for i in items
    ]


AP_HEADERS = ["Invoice", "Vendor", "Due", "Open amount"]


async def ap_overdue_entity(ctx: Context) -> str:
    items = await _open_ap(ctx, overdue_as_of=ctx.as_of)
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"There are no overdue vendor invoices {where(ctx)} {when(ctx)}: {money(0, acct)}."
    total = sum(float(i.get("open_amount_acct") or 0) for i in items)
    vendors = len({i.get("vendor_account") for i in items})
    return (
        f"The overdue AP balance {where(ctx)} {when(ctx)} is **{money(total, acct)}** (accounting "
        f"currency) across {plural(len(items), 'open vendor invoice')} of "
        f"{plural(vendors, 'vendor')}."
    )


async def _due_window(ctx: Context) -> tuple[dt.date, dt.date]:
    q = ctx.question
    if q.start and q.end:
        return q.start, q.end
    if q.has(r"next month"):
        start = (ctx.as_of.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        return start, (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    return ctx.as_of, ctx.as_of + dt.timedelta(days=q.days or 7)


async def ap_due_next_month_top(ctx: Context) -> str:
    start, end = await _due_window(ctx)
    items = await _open_ap(ctx, due_from=start, due_to=end)
    totals: dict[str, float] = defaultdict(float)
    for i in items:
        totals[i["vendor_account"]] += float(i.get("open_amount_acct") or 0)
    ranked = sorted(((round(v, 2), a) for a, v in totals.items()), key=lambda x: (-x[0], x[1]))
    ranked = ranked[: ctx.question.n or 5]
    span = f"between {long_date(start)} and {long_date(end)}"
    if not ranked:
        return f"There are no open vendor balances falling due {span} {where(ctx)}."
    acct = ctx.accounting_currency(ctx.legal_entity)
    le = ctx.legal_entity
    head = f"The {plural(len(ranked), 'largest AP balance')} due {span} {where(ctx)}: " + "; ".join(
        f"{ctx.link('vendors', le, a)} {money(v, acct)}" for v, a in ranked
    )
    rows = [[ctx.link("vendors", le, a), money(v, acct)] for v, a in ranked]
    return with_table(head + ".", ["Vendor", "Due"], rows)


async def ap_due_in_window(ctx: Context) -> str:
    start, end = await _due_window(ctx)
    items = await _open_ap(ctx, due_from=start, due_to=end)
    span = f"between {long_date(start)} and {long_date(end)}"
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"There are no open vendor invoices falling due {span} {where(ctx)}."
    total = sum(float(i.get("open_amount_acct") or 0) for i in items)
    head = (
        f"**{plural(len(items), 'open vendor invoice')}** fall due {span} {where(ctx)}, "
        f"**{money(total, acct)}** in total (accounting currency)."
    )
    return with_table(head, AP_HEADERS, _ap_rows(items))


async def ap_obligation_next_days(ctx: Context) -> str:
    start, end = ctx.as_of, ctx.as_of + dt.timedelta(days=ctx.question.days or 7)
    if ctx.question.start and ctx.question.end and not ctx.question.days:
        start, end = ctx.question.start, ctx.question.end
    items = await _open_ap(ctx, due_from=start, due_to=end)
    span = f"{long_date(start)} to {long_date(end)}"
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return (
            f"No vendor invoices fall due {span} {where(ctx)}: the obligation is {money(0, acct)}."
        )
    total = sum(float(i.get("open_amount_acct") or 0) for i in items)
    vendors = len({i.get("vendor_account") for i in items})
    head = (
        f"The AP payment obligation for {span} {where(ctx)} is **{money(total, acct)}** "
        f"(accounting currency) across {plural(len(items), 'open vendor invoice')} of "
        f"{plural(vendors, 'vendor')}."
    )
    return with_table(head, AP_HEADERS, _ap_rows(items))


async def ap_posted_on_date(ctx: Context) -> str:
    day = ctx.question.single_date or ctx.question.as_of or ctx.today
    items, _ = await ctx.all_items(
        "list_vendor_transactions",
        legal_entity=ctx.legal_entity,
        txn_type=["invoice"],
        date_from=day,
        date_to=day,
    )
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"No vendor invoices were posted on {long_date(day)} {where(ctx)}."
    total = sum(float(i.get("amount_acct") or 0) for i in items)
    head = (
        f"**{plural(len(items), 'vendor invoice')}** {'was' if len(items) == 1 else 'were'} posted "
        f"on {long_date(day)} {where(ctx)}, totalling **{money(total, acct)}** (accounting "
        "currency)."
    )
    rows = [
        [
            doc_link(i, "document_number"),
            i.get("vendor_account"),
            money(i.get("amount_cur"), i.get("currency")),
        ]
        for i in items
    ]
    return with_table(head, ["Invoice", "Vendor", "Amount"], rows)


async def payment_terms_vendor(ctx: Context) -> str:
    return await payment_terms(ctx, "vendor")


async def vendor_cash_discount(ctx: Context) -> str:
    party, data = await _vendor(ctx)
    terms = data["vendor"].get("payment_terms")
    discount = data.get("cash_discount")
    if not discount:
        return (
            f"No. {party.link} in {party.legal_entity} has payment terms **{terms}**, which carry "
            "no early-payment (cash) discount."
        )
    percent = float(discount.get("percent") or 0)
    return (
        f"Yes. {party.link} in {party.legal_entity} has payment terms **{terms}** with cash "
        f"discount {md_link(discount.get('code'), discount.get('url'))}: **{percent:g}%** if paid "
        f"within {discount.get('days')} days ({discount.get('description')})."
    )


async def _vendor_list(ctx: Context, label: str, *filters: tuple[str, str, Any]) -> str:
    items, data = await ctx.query("vendors", *filters)
    count = int(data.get("total_count", len(items)))
    if not count:
        return f"There are no vendors {label} {where(ctx)}."
    head = f"**{plural(count, 'vendor')}** {label} {where(ctx)}: " + listing(
        [md_link(f"{i.get('name')} ({i.get('account')})", i.get("url")) for i in items]
    )
    rows = [
        [
            doc_link(i, "account"),
            i.get("name"),
            i.get("payment_terms"),
            i.get("hold_reason") or "",
            long_date(i.get("created_date")),
        ]
        for i in items
    ]
    return with_table(head + ".", ["Vendor", "Name", "Terms", "Hold reason", "Created"], rows)


async def vendors_on_hold(ctx: Context) -> str:
    return await _vendor_list(ctx, "on payment hold", ("payment_hold", "eq", True))


async def vendors_created_in_month(ctx: Context) -> str:
    match = MONTH_YEAR.search(ctx.question.text)
    if match:
        start = dt.date(int(match.group(2)), _month_number(match.group(1)), 1)
    else:
        start = ctx.as_of.replace(day=1)
    end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    return await _vendor_list(
        ctx,
        f"created in {start:%B} {start.year}",
        ("created_date", "ge", start.isoformat()),
        ("created_date", "le", end.isoformat()),
    )


async def vendors_terms_longer_than(ctx: Context) -> str:
    days = ctx.question.days or 60
    data = await ctx.call(
        "list_reference_data", kind="payment_terms", legal_entity=ctx.legal_entity
    )
    long_terms = sorted(
        {t["terms_id"] for t in data.get("items", []) if int(t.get("net_days") or 0) > days}
    )
    if not long_terms:
        return f"There are no vendors with payment terms longer than net {days} days {where(ctx)}."
    return await _vendor_list(
        ctx, f"on payment terms longer than net {days} days", ("payment_terms", "in", long_terms)
    )


def _vi_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "invoice_id"),
            i.get("vendor_invoice_number", ""),
            i.get("vendor_account", ""),
            long_date(i.get("invoice_date")),
            money(i.get("amount"), i.get("currency")),
            str(i.get("status", "")).replace("_", " "),
            str(i.get("match_status", "")).replace("_", " "),
        ]
        for i in items
    ]


VI_HEADERS = ["Invoice", "Vendor invoice no.", "Vendor", "Date", "Amount", "Status", "Match"]


async def _vendor_invoices(ctx: Context, **args: Any) -> list[dict[str, Any]]:
    items, _ = await ctx.all_items("list_vendor_invoices", date_to=ctx.as_of, **args)
    return items


async def pending_approval_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items = await _vendor_invoices(
        ctx, account=party.account, legal_entity=party.legal_entity, status=["pending_approval"]
    )
    if not items:
        return f"There are no invoices pending approval for {party.link} in {party.legal_entity}."
    total = sum(float(i.get("amount") or 0) for i in items)
    head = (
        f"**{plural(len(items), 'invoice')}** from {party.link} "
        f"{'is' if len(items) == 1 else 'are'} pending approval, "
        f"**{money(total, items[0].get('currency'))}**"
        " in total: " + listing([doc_link(i, "invoice_id") for i in items]) + "."
    )
    return with_table(head, VI_HEADERS, _vi_rows(items))


INVOICE_STATUS_WORDS = (
    (r"pending approval|awaiting approval|waiting for approval", "pending_approval"),
    (r"approved", "approved"),
    (r"unposted|invoice register|not posted", "unposted"),
    (r"\bposted\b", "posted"),
)


async def invoices_by_status_entity(ctx: Context) -> str:
    status = next(s for pattern, s in INVOICE_STATUS_WORDS if ctx.question.has(pattern))
    items = await _vendor_invoices(ctx, legal_entity=ctx.legal_entity, status=[status])
    label = status.replace("_", " ")
    if not items:
        return f"There are no {label} vendor invoices {where(ctx)} {when(ctx)}."
    totals: dict[str, float] = defaultdict(float)
    for i in items:
        totals[i.get("currency", "")] += float(i.get("amount") or 0)
    worth = ", ".join(money(v, c) for c, v in sorted(totals.items()))
    head = (
        f"There are **{plural(len(items), label + ' vendor invoice')}** {where(ctx)} {when(ctx)} "
        f"worth **{worth}**."
    )
    return with_table(head, VI_HEADERS, _vi_rows(items))


async def latest_invoice_match_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items = await _vendor_invoices(ctx, account=party.account, legal_entity=party.legal_entity)
    if not items:
        return f"There are no invoices from {party.link} in {party.legal_entity}."
    latest = max(items, key=lambda i: (str(i.get("invoice_date")), i.get("invoice_id")))
    status = str(latest.get("match_status", "")).replace("_", " ")
    reason = f" ({latest['match_failure_reason']})" if latest.get("match_failure_reason") else ""
    return (
        f"The latest invoice from {party.link} is **{doc_link(latest, 'invoice_id')}** (vendor "
        f"invoice {latest.get('vendor_invoice_number')}, dated "
        f"{long_date(latest.get('invoice_date'))}); its three-way match status is "
        f"**{status}**{reason}."
    )


async def payment_accounts_methods(ctx: Context) -> str:
    data = await ctx.call(
        "list_reference_data",
        kind="methods_of_payment",
        legal_entity=ctx.legal_entity,
        party_type="vendor",
    )
    methods = {m.get("code", "").upper(): m for m in data.get("items", [])}
    codes = [
        c
        for c in re.findall(r"\b[A-Z][A-Z0-9_]{1,15}\b", ctx.question.text)
        if c not in {"USMF", "USPI", "DEMF", "GBSI", "AP", "AR", "ERP"}
        and c not in (ctx.legal_entity,)
    ]
    if not codes:
        codes = sorted(methods)
    rows, lines = [], []
    for code in codes:
        m = methods.get(code.upper())
        if m is None:
            lines.append(f"{code}: no such vendor method of payment {where(ctx)}")
            rows.append([code, "no such method", "-"])
        else:
            link = md_link(code, m.get("url"))
            lines.append(
                f"{link} ({m.get('description')}) posts to payment account "
                f"**{m.get('payment_account')}**"
            )
            rows.append([link, m.get("description"), m.get("payment_account")])
    return with_table("; ".join(lines) + ".", ["Method", "Description", "Payment account"], rows)


async def proposal_vendors_on_date(ctx: Context) -> str:
    day = ctx.question.single_date or ctx.question.as_of or ctx.today
    journals, _ = await ctx.all_items(
        "list_payment_journals",
        legal_entity=ctx.legal_entity,
        source="proposal",
        date_from=day,
        date_to=day,
    )
    if not journals:
        return f"No payment proposal was created on {long_date(day)} {where(ctx)}: no vendors."
    vendors: set[str] = set()
    for journal in journals:
        data = await ctx.call(
            "get_payment_journal",
            journal_id=journal["journal_id"],
            legal_entity=journal["legal_entity"],
        )
        vendors |= {line.get("vendor_account") for line in data.get("lines", [])}
    ordered = sorted(v for v in vendors if v)
    links = ", ".join(doc_link(j, "journal_id") for j in journals)
    return (
        f"The payment proposal(s) of {long_date(day)} {where(ctx)} ({links}) include "
        f"**{plural(len(ordered), 'vendor')}**: "
        f"{', '.join(ctx.link('vendors', journals[0].get('legal_entity'), v) for v in ordered)}."
    )


async def vendor_payments_range(ctx: Context) -> str:
    party = await ctx.party("vendor")
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_vendor_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        txn_type=["payment"],
        date_from=q.start,
        date_to=q.end or ctx.as_of,
    )
    if not items:
        return f"No payments were made to {party.link} {window(ctx)}."
    total = sum(-float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"We made **{plural(len(items), 'payment')}** to {party.link} {window(ctx)}, totalling "
        f"**{money(total, items[0].get('currency'))}**."
    )
    return with_table(head, ["Payment", "Date", "Amount"], _txn_rows(items))


async def payment_journal_total(ctx: Context) -> str:
    match = re.search(r"journal\s+#?([A-Za-z0-9-]+)", ctx.question.text)
    journal_id = match.group(1) if match else ""
    try:
        data = await ctx.call(
            "get_payment_journal", journal_id=journal_id, legal_entity=ctx.legal_entity
        )
    except ToolFailure:
        return f"There is no payment journal {journal_id} {where(ctx)}: no such record was found."
    journal = data.get("journal", {})
    return (
        f"Payment journal **{doc_link(journal, 'journal_id')}** {where(ctx)} (status "
        f"{journal.get('status')}, created {long_date(journal.get('created_date'))}) totals "
        f"**{money(journal.get('total_amount'), journal.get('currency'))}** over "
        f"**{plural(int(data.get('line_count') or journal.get('line_count') or 0), 'line')}**."
    )


async def _vendor_documents(ctx: Context, txn_type: str) -> str:
    party = await ctx.party("vendor")
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_vendor_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        txn_type=[txn_type],
        date_from=q.start,
        date_to=q.end or ctx.as_of,
    )
    label = txn_type.replace("_", " ")
    span = f" {window(ctx)}" if q.start else ""
    if not items:
        return f"There are no {label}s for {party.link}{span} in {party.legal_entity}."
    total = sum(-float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), label)}**{span}, totalling "
        f"**{money(abs(total), items[0].get('currency'))}**."
    )
    return with_table(head, [label.capitalize(), "Date", "Amount"], _txn_rows(items))


async def vendor_credit_notes(ctx: Context) -> str:
    return await _vendor_documents(ctx, "credit_note")


async def vendor_debit_notes(ctx: Context) -> str:
    return await _vendor_documents(ctx, "debit_note")


async def vendor_spend_fiscal_year(ctx: Context) -> str:
    party = await ctx.party("vendor")
    start = ctx.fiscal_year_start(party.legal_entity)
    items, _ = await ctx.all_items(
        "list_vendor_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        txn_type=["invoice"],
        date_from=start,
        date_to=ctx.as_of,
    )
    span = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.as_of)})"
    if not items:
        return f"There are no invoices from {party.link} {span}: the spend is 0.00."
    total = sum(float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"The spend with {party.link} {span} is **{money(total, items[0].get('currency'))}** over "
        f"{plural(len(items), 'posted invoice')}."
    )
    return with_table(head, ["Invoice", "Date", "Amount"], _txn_rows(items))


async def open_pos_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items, _ = await ctx.all_items(
        "list_purchase_orders",
        account=party.account,
        legal_entity=party.legal_entity,
        status=["open"],
        date_to=ctx.as_of,
    )
    if not items:
        return f"There are no open purchase orders for {party.link} in {party.legal_entity}."
    head = f"{party.link} has **{plural(len(items), 'open purchase order')}**: " + listing(
        [doc_link(p, "po_number") for p in items]
    )
    rows = [
        [
            doc_link(p, "po_number"),
            long_date(p.get("order_date")),
            money(p.get("total_amount"), p.get("currency")),
            p.get("buyer", ""),
        ]
        for p in items
    ]
    return with_table(head + ".", ["Purchase order", "Order date", "Amount", "Buyer"], rows)


# --------------------------------------------------------------------------------------------------
# Intent rules: the first rule whose patterns all match wins.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    name: str
    handler: Handler
    all_of: tuple[str, ...]
    none_of: tuple[str, ...] = ()

    def matches(self, question: Question) -> bool:
        return all(re.search(p, question.lower) for p in self.all_of) and not any(
            re.search(p, question.lower) for p in self.none_of
        )


def _i(name: str, handler: Handler, *all_of: str, none_of: tuple[str, ...] = ()) -> Intent:
    return Intent(name, handler, all_of, none_of)


PARTY_REF = r"(customer account|vendor account|\([a-z]+-\d+\))"

INTENTS: tuple[Intent, ...] = (
    # AP first where wording is specific
    _i("payment_journal_total", payment_journal_total, r"journal \S*\d"),
    _i("proposal_vendors_on_date", proposal_vendors_on_date, r"payment proposal"),
    _i(
        "payment_accounts_methods",
        payment_accounts_methods,
        r"methods? of payment|payment methods",
        r"payment accounts|ledger accounts|post to",
    ),
    _i("latest_invoice_match_vendor", latest_invoice_match_vendor, r"three-way|3-way|match"),
    _i(
        "pending_approval_vendor",
        pending_approval_vendor,
        r"pending approval|waiting for approval",
        r"invoices (?:are )?pending approval for|from|invoices from",
        none_of=(r"how many vendor invoices", r"total value"),
    ),
    _i(
        "invoices_by_status_entity",
        invoices_by_status_entity,
        r"vendor invoices",
        r"how many|total value",
        r"pending approval|approved|unposted|posted|register",
        none_of=(r"posted on",),
    ),
    _i("ap_posted_on_date", ap_posted_on_date, r"posted on"),
    _i("ap_overdue_vendor_invoices", ap_overdue_entity, r"vendor invoices (?:is|are) past due"),
    _i("ap_due_in_window", ap_due_in_window, r"vendor invoices", r"due"),
    _i(
        "ap_obligation_next_days",
        ap_obligation_next_days,
        r"payment obligation|falls due|vendor invoices falls",
    ),
    _i(
        "ap_due_next_month_top",
        ap_due_next_month_top,
        r"ap balances due|vendors have the most open invoice value|due next month",
    ),
    _i("ap_by_group_entity", ap_by_group_entity, r"by vendor group"),
    _i("ap_group_balance", ap_group_balance, r"vendor group|vendors of group"),
    _i(
        "ap_by_currency_entity",
        ap_by_currency_entity,
        r"by (?:transaction )?currency|vendor balance .*(?:usd|eur|gbp|cad)",
    ),
    _i(
        "ap_overdue_entity",
        ap_overdue_entity,
        r"overdue ap|payables is past due|ap balance.*overdue|past due.*payables",
    ),
    _i("vendors_on_hold", vendors_on_hold, r"vendors", r"payment hold|blocked for payment"),
    _i("vendors_created_in_month", vendors_created_in_month, r"vendors", r"created|set up"),
    _i("vendors_terms_longer_than", vendors_terms_longer_than, r"vendors", r"longer than|beyond"),
    _i(
        "vendor_cash_discount",
        vendor_cash_discount,
        r"early payment discount|cash discount from|discount percentage|for paying early",
    ),
    _i("vendor_debit_notes", vendor_debit_notes, r"debit notes?"),
    _i(
        "vendor_credit_notes",
        vendor_credit_notes,
        r"credit notes? (?:have been )?received|issue us any credit notes",
    ),
    _i("vendor_spend_fiscal_year", vendor_spend_fiscal_year, r"spend with|been invoiced by"),
    _i("open_pos_vendor", open_pos_vendor, r"purchase orders?"),
    _i("vendor_payments_range", vendor_payments_range, r"payment history|how much did we pay"),
    _i(
        "payment_terms_vendor",
        payment_terms_vendor,
        r"terms",
        r"vendor account|payment terms for|terms of payment do we have with",
    ),
    _i("vendor_balance", vendor_balance, r"ap balance for|owed to|how much do we owe"),
    # AR
    _i("top_past_due_group", top_past_due_group, r"group", r"past due|overdue"),
    _i(
        "over_limit_group_top",
        over_limit_group_top,
        r"over their credit limit|exceeding their credit limit",
    ),
    _i("rating_count_group", rating_count_group, r"group", r"rated|rating"),
    _i("agent_worklist", agent_worklist, r"worklist|activities due on"),
    _i(
        "open_tasks_due_entity",
        open_tasks_due_entity,
        r"collections tasks",
        r"due (?:between|from)",
    ),
    _i(
        "open_activities_customer",
        open_activities_customer,
        r"collections (?:activities|tasks)|open activities",
    ),
    _i("open_cases_customer", open_cases_customer, r"collections cases?|collections case"),
    _i("collections_agent_customer", collections_agent_customer, r"collections agent"),
    _i("unassigned_pool_count", unassigned_pool_count, r"collections pool"),
    _i("last_letter_customer", last_letter_customer, r"last collection letter|letter level"),
    _i("letters_customer", letters_customer, r"collection letters"),
    _i(
        "discounts_expiring_entity",
        discounts_expiring_entity,
        r"cash discount (?:expiring|runs out)|discount runs out",
    ),
    _i(
        "discounts_taken_customer",
        discounts_taken_customer,
        r"discount window|take any cash discounts",
    ),
    _i("open_discount_invoices_customer", open_discount_invoices_customer, r"cash discount"),
    _i("open_deductions_customer", open_deductions_customer, r"deductions?"),
    _i("open_disputes_customer", open_disputes_customer, r"disput"),
    _i("unapplied_credit_notes_customer", unapplied_credit_notes_customer, r"credit notes?"),
    _i("do_not_process_orders", do_not_process_orders, r"do.not.process"),
    _i(
        "most_open_orders_entity",
        most_open_orders_entity,
        r"most open sales orders|largest number of open sales orders",
    ),
    _i(
        "orders_by_release_status",
        orders_by_release_status,
        r"release status|[\"']released[\"'] status",
    ),
    _i("return_orders_entity", return_orders_entity, r"return orders|returned"),
    _i(
        "largest_orders_customer",
        largest_orders_customer,
        r"sales orders?",
        r"largest|top \d|top (?:three|five|ten)|by amount",
    ),
    _i("open_orders_customer", open_orders_customer, r"sales orders?", r"open"),
    _i("order_count_customer", order_count_customer, r"sales orders?"),
    _i("credit_rating", credit_rating, r"credit rating|rated for credit"),
    _i("credit_hold_list", credit_hold_list, r"credit hold"),
    _i("credit_utilization", credit_utilization, r"credit limit", r"percent|utili|used"),
    _i("credit_limit", credit_limit, r"credit limit|available credit"),
    _i("customers_in_group", customers_in_group, r"customer group|belong to"),
    _i("customers_by_currency", customers_by_currency, r"customers", r"currency|billed in"),
    _i("method_of_payment_customer", method_of_payment_customer, r"method of payment"),
    _i("payment_terms_customer", payment_terms_customer, r"terms"),
    _i("contact_customer", contact_customer, r"phone|contact"),
    _i("collected_fiscal_year", collected_fiscal_year, r"collected"),
    _i("last_payment", last_payment, r"last pay|most recent payment"),
    _i("largest_payment", largest_payment, r"largest payment(?!s)|biggest single payment"),
    _i("top_payments", top_payments, r"payments", r"top|largest"),
    _i(
        "payments_in_range",
        payments_in_range,
        r"payments?",
        r"between|from .* to|in \d{4}\b|payments (?:has|have)",
    ),
    _i(
        "largest_invoice_entity",
        largest_invoice_entity,
        r"largest amount|biggest customer invoice|largest invoice",
    ),
    _i(
        "top_invoiced_customer_entity",
        top_invoiced_customer_entity,
        r"highest total invoiced|top customer by invoiced",
    ),
    _i("coming_due_customer", coming_due_customer, r"coming due|falling due"),
    _i(
        "invoices_in_range_customer", invoices_in_range_customer, r"invoices", r"between|from .* to"
    ),
    _i(
        "invoice_count_customer",
        invoice_count_customer,
        r"number of invoices|how many invoices|invoices (?:generated|issued) (?:for|to)",
    ),
    _i("unpaid_invoices_customer", unpaid_invoices_customer, r"unpaid invoices|open invoices"),
    _i("aging_totals_entity", aging_totals_entity, r"aging bucket|aging summary for all|by aging"),
    _i(
        "past_due_total_entity",
        past_due_total_entity,
        r"past due|overdue|\d+\+ days",
        r"total|how much customer ar|how much in customer invoices",
        none_of=(PARTY_REF,),
    ),
    _i(
        "aging_top_customers",
        aging_top_customers,
        r"top \d+ customers|top (?:five|ten) customers",
        r"outstanding|balance",
    ),
    _i("balance_all_entities", balance_all_entities, r"all legal entities"),
    _i(
        "customer_balance",
        customer_balance,
        r"unpaid customer (?:balance|receivables)|outstanding receivables balance|owe us|"
        r"outstanding balance|total balance",
    ),
    _i(
        "aging_customer",
        aging_customer,
        r"aged balance|aging|ageing|overdue receivables|past due|balance",
    ),
)


def match_intent(question: Question) -> Intent | None:
    return next((intent for intent in INTENTS if intent.matches(question)), None)


# --------------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------------

NOT_UNDERSTOOD = (
    "I could not work out what this question asks for, so I did not query the ERP and cannot give "
    "an answer. I am a rule-based agent that recognises common accounts-receivable and "
    "accounts-payable requests (balances and aging, credit limits, customer and vendor setup, "
    "payments, invoices, sales and purchase orders, collections, disputes and cash discounts). "
    "Please rephrase the question naming the customer or vendor, the legal entity and the date."
)
WEB_NEEDED = (
    "I cannot answer this request: it needs public-company research (filings, market data and "
    "news from the web), and this agent is a rule-based ERP agent with no web access and no "
    "language model. I did not look anything up, so I give no figures rather than guess."
)


class ScriptedAgent:
    """Rule-based obligations agent; see the module docstring."""

    name = "scripted"

    def __init__(self, options: HarnessOptions | None = None) -> None:
        self.options = options or HarnessOptions()
        self.model = None
        self.transport = self.options.extra.get("transport", "http")
        if self.transport not in ("http", "stdio"):
            raise ValueError(f"--harness-opt transport={self.transport}: use http or stdio")

    async def aclose(self) -> None:
        return None

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        # Transcript: the question, the tool calls as they happen, the answer (no model calls).
        draft.add_message("user", task.query)
        outcome = await self._answer_question(task, env, draft)
        draft.add_message("assistant", outcome.answer)
        return outcome

    async def _answer_question(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        if task.task_type != TaskType.obligations:
            draft.set_answer(WEB_NEEDED)
            return AgentOutcome(answer=WEB_NEEDED)
        async with ErpClient(env.erp, transport=self.transport) as erp:
            info = await _erp_info(erp, draft)
            entities = {le["code"]: le for le in info.get("legal_entities", [])}
            question = Question.parse(task.query, list(entities))
            intent = match_intent(question)
            if intent is None:
                draft.set_answer(NOT_UNDERSTOOD)
                return AgentOutcome(answer=NOT_UNDERSTOOD)
            today = dt.date.fromisoformat(str(info.get("today") or dt.date.today())[:10])
            ctx = Context(
                erp, draft, question, today, entities, url_pattern=info.get("record_url_pattern")
            )
            draft.extra["intent"] = intent.name
            answer = await _answer(ctx, intent)
            draft.turns += 1
        draft.set_answer(answer)
        return AgentOutcome(answer=answer)


async def _answer(ctx: Context, intent: Intent) -> str:
    try:
        return await intent.handler(ctx)
    except PartyNotFound as missing:
        scope = where(ctx)
        return (
            f"I could not find any {missing.party_type} matching '{missing.reference}' {scope}: "
            "`search_parties` returned no confident match, so there is no such record to report "
            "on and I give no figures."
        )
    except ToolFailure as failure:
        return (
            f"I could not answer: the ERP tool `{failure.tool}` failed ({_short(failure.message)})."
            " No figures are given rather than guessed."
        )


async def _erp_info(erp: ErpClient, draft: TrajectoryDraft) -> dict[str, Any]:
    result = await erp.call("erp_info", {}, draft)
    for attempt in range(1, TOOL_RETRIES + 1):
        if not (result.is_error and result.text.lstrip().startswith("TRANSIENT")):
            break
        await asyncio.sleep(0.2 * attempt)
        result = await erp.call("erp_info", {}, draft)
    data = result.structured
    if isinstance(data, dict) and set(data) == {"result"}:
        data = data["result"]
    if not isinstance(data, dict):
        try:
            data = json.loads(result.text)
        except json.JSONDecodeError:
            data = {}
    return data


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@harness("scripted")
def create_scripted(options: HarnessOptions) -> ScriptedAgent:
    return ScriptedAgent(options)
