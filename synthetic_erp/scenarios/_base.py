"""What every scenario module shares: the answer-key context, the registry and common queries.

Written independently of the MCP tools (plain SQLAlchemy over the SQLModel tables), so a tool bug
shows up as an agent error instead of hiding in the key. Every template is a function
``(OracleContext, params) -> Answer`` registered under a stable name with its scenario and segment;
``params`` are JSON-safe (ISO dates, strings, ints) and are stored with each generated question, so
anyone can recompute the key.

Definitions used throughout (also in docs/dataset-format.md):
- Open items: posted ledger lines with a non-zero ``open_amount_cur`` dated on or before the as-of
  date. A party's balance is the sum of its open amounts (party currency; ``_acct`` columns give the
  legal entity's accounting currency). Totals over many parties use the accounting currency.
- Days overdue: as-of date minus the due date (the transaction date when there is none). Aging
  buckets: current (not overdue), 1-30, 31-60, 61-90 and over 90 days overdue.
- "Invoices": AR lines of type sales_invoice or free_text_invoice; AP lines of type invoice.
- Date windows are inclusive at both ends. A fiscal year starts on the first day of the legal
  entity's ``fiscal_year_start_month``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from ledgerbench_core.dataset._records import ExpectedFact, LedgerSide, Money
from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path

AR_INVOICE_TYPES = ("sales_invoice", "free_text_invoice")
INVOICE_TYPES = (*AR_INVOICE_TYPES, "invoice")
"""Invoice types of both ledgers (AP invoices are of type invoice)."""
OPEN_ACTIVITY_STATUSES = ("open", "in_progress")
BUCKETS = ("current", "1-30", "31-60", "61-90", "over 90")
LIST_LIMIT = 10
"""Record refs name at most this many of the records a key lists (its text lists every one, so
that a reference answer shown to a grader or a judge is whole)."""
AMOUNT_TOLERANCE = 0.01
PERCENT_TOLERANCE = 0.1


# --------------------------------------------------------------------------------------------------
# Context, answers, registry
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LegalEntityInfo:
    code: str
    currency: str
    fiscal_year_start_month: int


def default_legal_entity(codes: list[str], customer_counts: dict[str, int]) -> str:
    """The legal entity with the most customers (ties: the first code in sort order)."""
    return min(codes, key=lambda code: (-customer_counts.get(code, 0), code))


@dataclass
class OracleContext:
    """An open session on the ERP plus the facts every template needs."""

    session: Session
    today: dt.date
    legal_entities: dict[str, LegalEntityInfo]
    default_legal_entity: str
    """Where a question that names no legal entity is answered (docs/conventions.md)."""
    cache: dict[Any, Any] = field(default_factory=dict)
    """Per-context memo of legal-entity-wide queries (the ERP is read-only while answering)."""

    @classmethod
    def open(cls, engine: Engine) -> OracleContext:
        session = Session(engine)
        meta = {row.key: row.value for row in session.scalars(select(s.ErpMeta))}
        entities = {
            le.code: LegalEntityInfo(le.code, le.accounting_currency, le.fiscal_year_start_month)
            for le in session.scalars(select(s.LegalEntity).order_by(s.LegalEntity.code))
        }
        counts = dict(
            session.execute(
                select(s.Customer.legal_entity, func.count()).group_by(s.Customer.legal_entity)
            ).all()
        )
        default = default_legal_entity(list(entities), counts)
        return cls(session, dt.date.fromisoformat(meta["as_of"]), entities, default)

    def close(self) -> None:
        self.session.close()

    def rows(self, query: Any) -> list[Any]:
        """Every row ``query`` selects, in its order."""
        return list(self.session.scalars(query))

    def currency(self, legal_entity: str) -> str:
        return self.legal_entities[legal_entity].currency

    def fiscal_year(self, legal_entity: str) -> tuple[dt.date, dt.date]:
        """First and last day of the fiscal year containing ``today``."""
        month = self.legal_entities[legal_entity].fiscal_year_start_month
        year = self.today.year if self.today.month >= month else self.today.year - 1
        start = dt.date(year, month, 1)
        end = dt.date(year + 1, month, 1) - dt.timedelta(days=1)
        return start, end


@dataclass
class Answer:
    """The key for one question: reference text, checkable facts and the records it is about."""

    text: str
    facts: list[ExpectedFact] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    records: int = 0
    """How many records the answer lists (0 means nothing found; 2+ calls for a table)."""

    @property
    def is_none(self) -> bool:
        return any(fact.kind == "no_records" for fact in self.facts)


@dataclass(frozen=True)
class Template:
    """One question kind: its phrasings, how its parameters are chosen and its answer key."""

    name: str
    scenario: str
    segment: str
    """AR or AP."""
    party: str | None
    """customer | vendor when the template is about one party (params carry it), else None."""
    answer: Callable[[OracleContext, dict[str, Any]], Answer]
    phrasings: tuple[str, ...]
    """Question sentences with placeholders ({who}, {where}, {asof}, ... from the draft's words)."""
    choose: Callable[[Any], Any] | None = None
    """Entity-level templates: ``Chooser -> Draft`` proposing one parameter set."""
    extra: Callable[[Any], tuple[dict[str, Any], dict[str, str]]] | None = None
    """One-party templates: ``Chooser -> (params, words)`` added to the party reference."""
    having: Callable[[OracleContext], list[tuple[str, str]]] | None = None
    """One-party templates about rare records: the (legal entity, account) pairs that have any,
    so that the set also holds items whose answer is not "none"."""


TEMPLATES: dict[str, Template] = {}


def registrar(scenario: str, segment: str):
    """The ``@template(...)`` decorator of one scenario module; a template is named after its
    key function."""

    def template(
        party: str | None = None,
        *,
        phrasings: tuple[str, ...],
        choose: Callable[[Any], Any] | None = None,
        extra: Callable[[Any], tuple[dict[str, Any], dict[str, str]]] | None = None,
        having: Callable[[OracleContext], list[tuple[str, str]]] | None = None,
    ):
        def register(function: Callable[..., Answer]):
            name = function.__name__
            if (party is None) == (choose is None):
                raise ValueError(f"template {name}: give party= or choose=, not both")
            answer = function if party is None else _about_party(party, function)
            TEMPLATES[name] = Template(
                name, scenario, segment, party, answer, phrasings, choose, extra, having
            )
            return function

        return register

    return template


def _about_party(
    kind: str, function: Callable[[OracleContext, Party, dict[str, Any]], Answer]
) -> Callable[[OracleContext, dict[str, Any]], Answer]:
    """A one-party key as ``(ctx, params)``: the party named by ``params`` is looked up first."""

    def answer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
        return function(ctx, party(ctx, kind, params), params)

    return answer


def answer_question(ctx: OracleContext, template: str, params: dict[str, Any]) -> Answer:
    """The key for ``template`` with ``params``; unknown parties give a "no such ..." answer."""
    try:
        return TEMPLATES[template].answer(ctx, params)
    except UnknownParty as missing:
        return missing.answer()


def scenarios() -> dict[str, str]:
    """Scenario -> segment for every registered template."""
    return {template.scenario: template.segment for template in TEMPLATES.values()}


# --------------------------------------------------------------------------------------------------
# Parties
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Party:
    kind: str
    """customer | vendor"""
    legal_entity: str
    account: str
    name: str
    currency: str
    row: Any

    @property
    def label(self) -> str:
        return f"{self.name} ({self.account})"

    @property
    def path(self) -> str:
        return record_path(f"{self.kind}s", self.legal_entity, self.account)


class UnknownParty(LookupError):
    def __init__(self, kind: str, name: str, legal_entity: str | None):
        self.kind, self.name, self.legal_entity = kind, name, legal_entity
        super().__init__(f"no {kind} {name!r}")

    def answer(self) -> Answer:
        where = f"in {self.legal_entity}" if self.legal_entity else "in any legal entity"
        return Answer(
            text=f"There is no {self.kind} named or numbered '{self.name}' {where}; the ERP has no "
            "such record, so there is nothing to report.",
            facts=[_none(self.kind)],
        )


def _party_table(kind: str):
    return s.Customer if kind == "customer" else s.Vendor


def party(ctx: OracleContext, kind: str, params: dict[str, Any]) -> Party:
    """The party named by ``params`` (``account`` or ``name``, in ``legal_entity``)."""
    table = _party_table(kind)
    legal_entity = params["legal_entity"]
    query = select(table).where(table.legal_entity == legal_entity)
    if params.get("account"):
        query = query.where(table.account == params["account"])
        label = params["account"]
    else:
        query = query.where(func.lower(table.name) == params["name"].lower())
        label = params["name"]
    rows = list(ctx.session.scalars(query.order_by(table.account)))
    if not rows:
        raise UnknownParty(kind, label, legal_entity)
    row = rows[0]
    return Party(kind, row.legal_entity, row.account, row.name, row.currency, row)


def parties_named(ctx: OracleContext, kind: str, name: str) -> list[Party]:
    """Every party with this name (case-insensitive) in any legal entity."""
    table = _party_table(kind)
    rows = ctx.session.scalars(
        select(table)
        .where(func.lower(table.name) == name.lower())
        .order_by(table.legal_entity, table.account)
    )
    return [Party(kind, r.legal_entity, r.account, r.name, r.currency, r) for r in rows]


# --------------------------------------------------------------------------------------------------
# Formatting and fact helpers
# --------------------------------------------------------------------------------------------------


def money(amount: Decimal | float | int, currency: str) -> str:
    return f"{currency} {Decimal(amount):,.2f}"


def long_date(day: dt.date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


def _num(value: Decimal | float | int) -> float:
    return float(round(Decimal(value), 2))


def _amount(
    name: str,
    value: Decimal | float | int,
    currency: str,
    side: LedgerSide | None = None,
    equivalents: Sequence[tuple[Decimal | float | int, str]] = (),
) -> ExpectedFact:
    """An amount fact in ``currency``; ``side``: the ledger side of a positive value (see
    :class:`~ledgerbench.dataset.ExpectedFact`); ``equivalents``: (value, currency) pairs of the
    same amount in other currencies."""
    return ExpectedFact(
        kind="amount",
        field=name,
        value=_num(value),
        tolerance=AMOUNT_TOLERANCE,
        currency=currency,
        side=side,
        equivalents=[Money(value=_num(v), currency=c) for v, c in equivalents if c != currency],
    )


def balance_side(kind: str) -> LedgerSide:
    """The side of a party's positive balance: customers owe us (debit), we owe vendors
    (credit)."""
    return "debit" if kind == "customer" else "credit"


def _count(name: str, value: int) -> ExpectedFact:
    return ExpectedFact(kind="count", field=name, value=int(value))


def _none(name: str) -> ExpectedFact:
    return ExpectedFact(kind="no_records", field=name, value=True)


def _fact(kind: str, name: str, value: Any) -> ExpectedFact:
    return ExpectedFact(kind=kind, field=name, value=value)


def _top(
    name: str, values: Sequence[str], ordered: bool = True, *, complete: bool = False
) -> ExpectedFact:
    """A list fact; ``complete``: the values are every record that qualifies."""
    return ExpectedFact(
        kind="top_n", field=name, value=list(values), ordered=ordered, complete=complete
    )


def no_records(text: str, noun: str, refs: Sequence[str] = (), *, counted: bool = True) -> Answer:
    """The key when nothing is found: ``no_records`` and, if ``counted``, a zero count."""
    facts = [_none(noun), _count(noun, 0)] if counted else [_none(noun)]
    return Answer(text=text, facts=facts, refs=list(refs))


def listed(
    rows: Sequence[Any],
    lines: Sequence[str],
    text: str,
    facts: list[ExpectedFact],
    refs: list[str],
) -> Answer:
    """The key that lists ``rows``: ``text``, a colon and every one of ``lines``."""
    return Answer(
        text=f"{text}: {_listing(lines, len(rows))}.", facts=facts, refs=refs, records=len(rows)
    )


def _d(value: str) -> dt.date:
    return dt.date.fromisoformat(value)


def window(params: dict[str, Any]) -> tuple[dt.date, dt.date]:
    """The ``start`` and ``end`` days of a question about a date window."""
    return _d(params["start"]), _d(params["end"])


def between(start: dt.date, end: dt.date) -> str:
    """How keys word a date window."""
    return f"between {long_date(start)} and {long_date(end)}"


def _only(asked: int, found: int, noun: str) -> str:
    return f" (there are only {found} {noun})" if found < asked else ""


def _listing(lines: Sequence[str], total: int) -> str:
    if len(lines) != total:
        raise ValueError(f"a key lists {len(lines)} lines for {total} records")
    return "; ".join(lines)


def _where(legal_entity: str | None) -> str:
    return f"in {legal_entity}" if legal_entity else "across all legal entities"


def _le_filter(table, legal_entity: str | None):
    return [table.legal_entity == legal_entity] if legal_entity else []


def days_overdue(today: dt.date, due: dt.date | None, txn_date: dt.date) -> int:
    return (today - (due or txn_date)).days


def overdue_days(today: dt.date, row: Any) -> int:
    """Days a ledger line is overdue (negative while not yet due)."""
    return days_overdue(today, row.due_date, row.txn_date)


def is_open_invoice(row: Any) -> bool:
    """An AR or AP invoice with something left to pay."""
    return row.txn_type in INVOICE_TYPES and row.open_amount_cur > 0


def due_between(row: Any, start: dt.date, end: dt.date) -> bool:
    """Whether a ledger line falls due from ``start`` to ``end`` (lines without a due date never
    do)."""
    return bool(row.due_date) and start <= row.due_date <= end


def bucket_of(days: int) -> str:
    if days <= 0:
        return "current"
    if days <= 30:
        return "1-30"
    if days <= 60:
        return "31-60"
    if days <= 90:
        return "61-90"
    return "over 90"


# --------------------------------------------------------------------------------------------------
# Shared queries
# --------------------------------------------------------------------------------------------------


def _ledger_table(kind: str):
    return s.CustomerTransaction if kind == "customer" else s.VendorTransaction


def party_conditions(table, p: Party) -> list:
    """Rows of ``table`` that belong to party ``p``: its legal entity and its account column."""
    return [table.legal_entity == p.legal_entity, getattr(table, f"{p.kind}_account") == p.account]


def _open_items(ctx: OracleContext, kind: str, *conditions) -> list:
    t = _ledger_table(kind)
    query = select(t).where(
        t.posted.is_(True), t.open_amount_cur != 0, t.txn_date <= ctx.today, *conditions
    )
    return list(ctx.session.scalars(query.order_by(t.legal_entity, t.voucher)))


def ledger_open_items(ctx: OracleContext, kind: str, le: str) -> list:
    """All open items of one legal entity's AR or AP ledger, loaded once per context.

    Callers must not mutate the list (they filter into new lists)."""
    key = (kind, le)
    if key not in ctx.cache:
        ctx.cache[key] = _open_items(ctx, kind, _ledger_table(kind).legal_entity == le)
    return ctx.cache[key]


def party_open_items(ctx: OracleContext, p: Party) -> list:
    """The party's open ledger items."""
    return _open_items(ctx, p.kind, *party_conditions(_ledger_table(p.kind), p))


def _sum(values: Iterable[Decimal]) -> Decimal:
    return sum(values, Decimal("0.00"))


def _aging(ctx: OracleContext, items, column: str = "open_amount_cur") -> dict[str, Decimal]:
    buckets = {name: Decimal("0.00") for name in BUCKETS}
    for item in items:
        days = overdue_days(ctx.today, item)
        buckets[bucket_of(days)] += getattr(item, column)
    return buckets


def _bucket_text(buckets: dict[str, Decimal], currency: str) -> str:
    parts = [f"{name}: {money(value, currency)}" for name, value in buckets.items()]
    return "; ".join(parts)


def _bucket_facts(
    buckets: dict[str, Decimal], currency: str, side: LedgerSide, prefix: str = "aging"
) -> list[ExpectedFact]:
    return [
        _amount(f"{prefix}_{name}", value, currency, side)
        for name, value in buckets.items()
        if value != 0
    ]


def party_txns(
    ctx: OracleContext,
    p: Party,
    *conditions,
    start: dt.date | None = None,
    end: dt.date | None = None,
) -> list:
    """The party's posted ledger lines up to today (from ``start`` to ``end`` when given), by
    date."""
    t = _ledger_table(p.kind)
    window = [*([t.txn_date >= start] if start else []), *([t.txn_date <= end] if end else [])]
    query = select(t).where(
        *party_conditions(t, p), t.posted.is_(True), t.txn_date <= ctx.today, *conditions, *window
    )
    return list(ctx.session.scalars(query.order_by(t.txn_date, t.voucher)))


def _txn_path(kind: str, row) -> str:
    set_name = "customer-transactions" if kind == "customer" else "vendor-transactions"
    return record_path(set_name, row.legal_entity, row.voucher)


def _party_txn_refs(p: Party, rows: Sequence[Any]) -> list[str]:
    """The party's record, then its first LIST_LIMIT ledger transactions among ``rows``."""
    return [p.path, *(_txn_path(p.kind, row) for row in rows[:LIST_LIMIT])]


def _txn_line(row, currency: str, amount_column: str = "amount_cur") -> str:
    amount = abs(getattr(row, amount_column))
    return f"{row.document_number} on {long_date(row.txn_date)}, {money(amount, currency)}"


def _by_amount_desc(rows, column: str = "amount_cur", absolute: bool = True):
    def key(row):
        value = getattr(row, column)
        return (-(abs(value) if absolute else value), row.txn_date, row.voucher)

    return sorted(rows, key=key)


# shared by several scenarios


def _names(ctx: OracleContext, kind: str, le: str, accounts: Iterable[str]) -> dict[str, str]:
    table = _party_table(kind)
    accounts = list(accounts)
    rows = ctx.session.execute(
        select(table.account, table.name).where(
            table.legal_entity == le, table.account.in_(accounts)
        )
    )
    return {key: value for key, value in rows}


def _balance_answer(ctx: OracleContext, p: Party, items: Sequence[Any], lead: str) -> Answer:
    """A party's open balance over its open ``items``; ``lead`` words it ("The open ... of")."""
    total = _sum(row.open_amount_cur for row in items)
    total_acct = _sum(row.open_amount_acct for row in items)
    side = balance_side(p.kind)
    facts = [_amount("balance", total, p.currency, side)]
    text = f"{lead} {p.label} in {p.legal_entity} as of "
    text += f"{long_date(ctx.today)} is {money(total, p.currency)}"
    acct = ctx.currency(p.legal_entity)
    if acct != p.currency and total:
        text += f" ({money(total_acct, acct)} in accounting currency)"
        facts.append(_amount("balance_accounting", total_acct, acct, side))
    text += f", over {len(items)} open transaction(s)."
    if not items:
        facts.append(_none("open_items"))
    return Answer(text=text, facts=facts, refs=[p.path], records=1 if items else 0)


def _terms_answer(ctx: OracleContext, p: Party) -> Answer:
    terms = ctx.session.scalars(
        select(s.PaymentTerms).where(
            s.PaymentTerms.legal_entity == p.legal_entity,
            s.PaymentTerms.terms_id == p.row.payment_terms,
        )
    ).first()
    description = f" ({terms.description})" if terms else ""
    return Answer(
        text=f"{p.label} in {p.legal_entity} has payment terms {p.row.payment_terms}{description}.",
        facts=[_fact("id", "payment_terms", p.row.payment_terms)],
        refs=[
            p.path,
            *([record_path("payment-terms", p.legal_entity, terms.terms_id)] if terms else []),
        ],
        records=1,
    )


def _payments(
    ctx: OracleContext, p: Party, start: dt.date | None = None, end: dt.date | None = None
):
    return party_txns(ctx, p, s.CustomerTransaction.txn_type == "payment", start=start, end=end)


def _open_ap_due(ctx: OracleContext, le: str, start: dt.date, end: dt.date):
    rows = [
        row
        for row in ledger_open_items(ctx, "vendor", le)
        if is_open_invoice(row) and due_between(row, start, end)
    ]
    rows.sort(key=lambda row: (row.due_date, row.voucher))
    return rows
