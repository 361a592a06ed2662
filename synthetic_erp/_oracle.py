"""The answer key: each obligation question template answered by querying the ERP tables directly.

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
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from ledgerbench.dataset._records import ExpectedFact
from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path

AR_INVOICE_TYPES = ("sales_invoice", "free_text_invoice")
OPEN_ACTIVITY_STATUSES = ("open", "in_progress")
BUCKETS = ("current", "1-30", "31-60", "61-90", "over 90")
LIST_LIMIT = 10
"""Ground-truth texts list at most this many records (counts and totals cover all of them)."""
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


@dataclass
class OracleContext:
    """An open session on the ERP plus the facts every template needs."""

    session: Session
    today: dt.date
    legal_entities: dict[str, LegalEntityInfo]
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
        return cls(session, dt.date.fromisoformat(meta["as_of"]), entities)

    def close(self) -> None:
        self.session.close()

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
    name: str
    scenario: str
    segment: str
    """AR or AP."""
    party: str | None
    """customer | vendor when the template is about one party (params carry it), else None."""
    answer: Callable[[OracleContext, dict[str, Any]], Answer]


TEMPLATES: dict[str, Template] = {}


def _template(name: str, scenario: str, segment: str, party: str | None = None):
    def register(function: Callable[[OracleContext, dict[str, Any]], Answer]):
        TEMPLATES[name] = Template(name, scenario, segment, party, function)
        return function

    return register


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


def _amount(name: str, value: Decimal | float | int) -> ExpectedFact:
    return ExpectedFact(kind="amount", field=name, value=_num(value), tolerance=AMOUNT_TOLERANCE)


def _count(name: str, value: int) -> ExpectedFact:
    return ExpectedFact(kind="count", field=name, value=int(value))


def _none(name: str) -> ExpectedFact:
    return ExpectedFact(kind="no_records", field=name, value=True)


def _fact(kind: str, name: str, value: Any) -> ExpectedFact:
    return ExpectedFact(kind=kind, field=name, value=value)


def _top(name: str, values: Sequence[str], ordered: bool = True) -> ExpectedFact:
    return ExpectedFact(kind="top_n", field=name, value=list(values), ordered=ordered)


def _d(value: str) -> dt.date:
    return dt.date.fromisoformat(value)


def _only(asked: int, found: int, noun: str) -> str:
    return f" (there are only {found} {noun})" if found < asked else ""


def _listing(lines: Sequence[str], total: int) -> str:
    shown = "; ".join(lines[:LIST_LIMIT])
    if total > LIST_LIMIT:
        shown += f"; ... and {total - LIST_LIMIT} more"
    return shown


def _where(legal_entity: str | None) -> str:
    return f"in {legal_entity}" if legal_entity else "across all legal entities"


def _le_filter(table, legal_entity: str | None):
    return [table.legal_entity == legal_entity] if legal_entity else []


def days_overdue(today: dt.date, due: dt.date | None, txn_date: dt.date) -> int:
    return (today - (due or txn_date)).days


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


def open_customer_items(ctx: OracleContext, *conditions) -> list[s.CustomerTransaction]:
    t = s.CustomerTransaction
    query = select(t).where(
        t.posted.is_(True), t.open_amount_cur != 0, t.txn_date <= ctx.today, *conditions
    )
    return list(ctx.session.scalars(query.order_by(t.legal_entity, t.voucher)))


def open_vendor_items(ctx: OracleContext, *conditions) -> list[s.VendorTransaction]:
    t = s.VendorTransaction
    query = select(t).where(
        t.posted.is_(True), t.open_amount_cur != 0, t.txn_date <= ctx.today, *conditions
    )
    return list(ctx.session.scalars(query.order_by(t.legal_entity, t.voucher)))


def ledger_open_items(ctx: OracleContext, kind: str, le: str) -> list:
    """All open items of one legal entity's AR or AP ledger, loaded once per context.

    Callers must not mutate the list (they filter into new lists)."""
    key = (kind, le)
    if key not in ctx.cache:
        t = s.CustomerTransaction if kind == "customer" else s.VendorTransaction
        query = open_customer_items if kind == "customer" else open_vendor_items
        ctx.cache[key] = query(ctx, t.legal_entity == le)
    return ctx.cache[key]


def _cust_items(ctx: OracleContext, p: Party) -> list[s.CustomerTransaction]:
    t = s.CustomerTransaction
    return open_customer_items(
        ctx, t.legal_entity == p.legal_entity, t.customer_account == p.account
    )


def _vend_items(ctx: OracleContext, p: Party) -> list[s.VendorTransaction]:
    t = s.VendorTransaction
    return open_vendor_items(ctx, t.legal_entity == p.legal_entity, t.vendor_account == p.account)


def _sum(values: Iterable[Decimal]) -> Decimal:
    return sum(values, Decimal("0.00"))


def _aging(ctx: OracleContext, items, column: str = "open_amount_cur") -> dict[str, Decimal]:
    buckets = {name: Decimal("0.00") for name in BUCKETS}
    for item in items:
        days = days_overdue(ctx.today, item.due_date, item.txn_date)
        buckets[bucket_of(days)] += getattr(item, column)
    return buckets


def _bucket_text(buckets: dict[str, Decimal], currency: str) -> str:
    parts = [f"{name}: {money(value, currency)}" for name, value in buckets.items()]
    return "; ".join(parts)


def _bucket_facts(buckets: dict[str, Decimal], prefix: str = "aging") -> list[ExpectedFact]:
    return [_amount(f"{prefix}_{name}", value) for name, value in buckets.items() if value != 0]


def _customer_txns(ctx: OracleContext, p: Party, *conditions) -> list[s.CustomerTransaction]:
    t = s.CustomerTransaction
    query = select(t).where(
        t.legal_entity == p.legal_entity,
        t.customer_account == p.account,
        t.posted.is_(True),
        t.txn_date <= ctx.today,
        *conditions,
    )
    return list(ctx.session.scalars(query.order_by(t.txn_date, t.voucher)))


def _vendor_txns(ctx: OracleContext, p: Party, *conditions) -> list[s.VendorTransaction]:
    t = s.VendorTransaction
    query = select(t).where(
        t.legal_entity == p.legal_entity,
        t.vendor_account == p.account,
        t.posted.is_(True),
        t.txn_date <= ctx.today,
        *conditions,
    )
    return list(ctx.session.scalars(query.order_by(t.txn_date, t.voucher)))


def _txn_path(kind: str, row) -> str:
    set_name = "customer-transactions" if kind == "customer" else "vendor-transactions"
    return record_path(set_name, row.legal_entity, row.voucher)


def _txn_line(row, currency: str, amount_column: str = "amount_cur") -> str:
    amount = abs(getattr(row, amount_column))
    return f"{row.document_number} on {long_date(row.txn_date)}, {money(amount, currency)}"


def _by_amount_desc(rows, column: str = "amount_cur", absolute: bool = True):
    def key(row):
        value = getattr(row, column)
        return (-(abs(value) if absolute else value), row.txn_date, row.voucher)

    return sorted(rows, key=key)


# ==================================================================================================
# AR templates
# ==================================================================================================

# ---- Aged Balance --------------------------------------------------------------------------------


@_template("aging_customer", "Aged Balance", "AR", party="customer")
def aging_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    items = _cust_items(ctx, p)
    if not items:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open transactions as of "
            f"{long_date(ctx.today)}: the balance is {money(0, p.currency)}.",
            facts=[_none("open_items"), _amount("balance", 0)],
            refs=[p.path],
        )
    buckets = _aging(ctx, items)
    total = _sum(buckets.values())
    return Answer(
        text=f"{p.label} in {p.legal_entity} has an open balance of {money(total, p.currency)} "
        f"as of {long_date(ctx.today)}, aged by days overdue: {_bucket_text(buckets, p.currency)}.",
        facts=[_amount("balance", total), *_bucket_facts(buckets)],
        refs=[p.path, *(_txn_path("customer", row) for row in items[:LIST_LIMIT])],
        records=1,
    )


@_template("balance_all_entities", "Aged Balance", "AR")
def balance_all_entities(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    found = parties_named(ctx, "customer", params["name"])
    if not found:
        raise UnknownParty("customer", params["name"], None)
    lines, facts, refs = [], [], []
    for p in found:
        balance = _sum(row.open_amount_cur for row in _cust_items(ctx, p))
        lines.append(f"{p.label} in {p.legal_entity}: {money(balance, p.currency)}")
        facts.append(_amount(f"balance_{p.legal_entity}_{p.account}", balance))
        refs.append(p.path)
    currencies = {p.currency for p in found}
    text = f"Open balances for customers named {found[0].name} across all legal entities as of "
    text += f"{long_date(ctx.today)}: " + "; ".join(lines) + "."
    if len(found) > 1 and len(currencies) == 1:
        total = _sum(Decimal(str(f.value)) for f in facts)
        text += f" Combined: {money(total, currencies.pop())}."
        facts.append(_amount("balance_combined", total))
    elif len(found) > 1:
        text += " The balances are in different currencies, so they are not added up."
    return Answer(text=text, facts=facts, refs=refs, records=len(found))


@_template("top_past_due_group", "Aged Balance", "AR")
def top_past_due_group(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, group, days, n = params["legal_entity"], params["group_id"], params["days"], params["n"]
    c = s.Customer
    accounts = set(
        ctx.session.scalars(select(c.account).where(c.legal_entity == le, c.group_id == group))
    )
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in ledger_open_items(ctx, "customer", le):
        overdue = days_overdue(ctx.today, row.due_date, row.txn_date) > days
        invoice = row.txn_type in AR_INVOICE_TYPES and row.open_amount_cur > 0
        if row.customer_account in accounts and invoice and overdue:
            totals[row.customer_account] += row.open_amount_acct
    ranked = sorted(((v, a) for a, v in totals.items() if v > 0), key=lambda x: (-x[0], x[1]))[:n]
    currency = ctx.currency(le)
    if not ranked:
        return Answer(
            text=f"No customer in group {group} in {le} has unpaid invoices more than {days} "
            f"days past due as of {long_date(ctx.today)}.",
            facts=[_none("customers")],
        )
    names = _names(ctx, "customer", le, [a for _, a in ranked])
    lines = [f"{names[a]} ({a}) {money(v, currency)}" for v, a in ranked]
    return Answer(
        text=f"Top {len(ranked)} customers in group {group} in {le} by unpaid invoices more than "
        f"{days} days past due as of {long_date(ctx.today)} (accounting currency): "
        + "; ".join(lines)
        + ".",
        facts=[_top("customers", [a for _, a in ranked])]
        + [_amount(f"past_due_{a}", v) for v, a in ranked[:3]],
        refs=[record_path("customers", le, a) for _, a in ranked],
        records=len(ranked),
    )


def _names(ctx: OracleContext, kind: str, le: str, accounts: Iterable[str]) -> dict[str, str]:
    table = _party_table(kind)
    accounts = list(accounts)
    rows = ctx.session.execute(
        select(table.account, table.name).where(
            table.legal_entity == le, table.account.in_(accounts)
        )
    )
    return {key: value for key, value in rows}


@_template("aging_totals_entity", "Aged Balance", "AR")
def aging_totals_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    items = ledger_open_items(ctx, "customer", le)
    buckets = _aging(ctx, items, "open_amount_acct")
    total = _sum(buckets.values())
    currency = ctx.currency(le)
    return Answer(
        text=f"Open customer balances in {le} as of {long_date(ctx.today)} by days overdue "
        f"(accounting currency): {_bucket_text(buckets, currency)}; "
        f"total {money(total, currency)}.",
        facts=[_amount("total", total), *_bucket_facts(buckets)],
        refs=[],
        records=len(BUCKETS),
    )


@_template("past_due_total_entity", "Aged Balance", "AR")
def past_due_total_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    items = [
        row
        for row in ledger_open_items(ctx, "customer", le)
        if row.txn_type in AR_INVOICE_TYPES
        and row.open_amount_cur > 0
        and days_overdue(ctx.today, row.due_date, row.txn_date) > days
    ]
    total = _sum(row.open_amount_acct for row in items)
    currency = ctx.currency(le)
    customers = len({row.customer_account for row in items})
    return Answer(
        text=f"Unpaid customer invoices in {le} more than {days} days past due as of "
        f"{long_date(ctx.today)} total {money(total, currency)} (accounting currency) across "
        f"{len(items)} open invoice(s) of {customers} customer(s).",
        facts=[_amount("total_past_due", total), _count("invoices", len(items))],
        records=1,
    )


@_template("coming_due_customer", "Aged Balance", "AR", party="customer")
def coming_due_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    end = ctx.today + dt.timedelta(days=params["days"])
    items = [
        row
        for row in _cust_items(ctx, p)
        if row.open_amount_cur > 0 and row.due_date and ctx.today <= row.due_date <= end
    ]
    items.sort(key=lambda row: (row.due_date, row.voucher))
    window = f"{long_date(ctx.today)} and {long_date(end)}"
    if not items:
        return Answer(
            text=f"No open transactions of {p.label} in {p.legal_entity} fall due between "
            f"{window}.",
            facts=[_none("transactions_due")],
            refs=[p.path],
        )
    lines = [
        f"{row.document_number} due {long_date(row.due_date)}, open "
        f"{money(row.open_amount_cur, p.currency)}"
        for row in items
    ]
    total = _sum(row.open_amount_cur for row in items)
    return Answer(
        text=f"{len(items)} open transaction(s) of {p.label} in {p.legal_entity} fall due between "
        f"{window}, totalling {money(total, p.currency)}: {_listing(lines, len(items))}.",
        facts=[
            _count("transactions_due", len(items)),
            _amount("total_due", total),
            _top("documents", [row.document_number for row in items], ordered=False),
        ],
        refs=[p.path, *(_txn_path("customer", row) for row in items[:LIST_LIMIT])],
        records=len(items),
    )


# ---- Outstanding Balance -------------------------------------------------------------------------


@_template("unpaid_invoices_customer", "Outstanding Balance", "AR", party="customer")
def unpaid_invoices_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    items = [
        row
        for row in _cust_items(ctx, p)
        if row.txn_type in AR_INVOICE_TYPES and row.open_amount_cur > 0
    ]
    items.sort(key=lambda row: (-row.open_amount_cur, row.voucher))
    if not items:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no unpaid invoices as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("unpaid_invoices")],
            refs=[p.path],
        )
    total = _sum(row.open_amount_cur for row in items)
    lines = [
        f"{row.document_number} ({long_date(row.txn_date)}) open "
        f"{money(row.open_amount_cur, p.currency)}"
        for row in items
    ]
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(items)} unpaid invoice(s) totalling "
        f"{money(total, p.currency)} as of {long_date(ctx.today)}, largest first: "
        f"{_listing(lines, len(items))}.",
        facts=[
            _count("unpaid_invoices", len(items)),
            _amount("unpaid_total", total),
            _top("largest_unpaid", [row.document_number for row in items[:3]]),
        ],
        refs=[p.path, *(_txn_path("customer", row) for row in items[:LIST_LIMIT])],
        records=len(items),
    )


@_template("customer_balance", "Outstanding Balance", "AR", party="customer")
def customer_balance(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    items = _cust_items(ctx, p)
    total = _sum(row.open_amount_cur for row in items)
    total_acct = _sum(row.open_amount_acct for row in items)
    facts = [_amount("balance", total)]
    text = f"The outstanding balance of {p.label} in {p.legal_entity} as of "
    text += f"{long_date(ctx.today)} is {money(total, p.currency)}"
    acct = ctx.currency(p.legal_entity)
    if acct != p.currency and total:
        text += f" ({money(total_acct, acct)} in accounting currency)"
        facts.append(_amount("balance_accounting", total_acct))
    text += f", over {len(items)} open transaction(s)."
    if not items:
        facts.append(_none("open_items"))
    return Answer(text=text, facts=facts, refs=[p.path], records=1 if items else 0)


# ---- Credit Limit / Credit Rating ----------------------------------------------------------------


@_template("credit_limit", "Credit Limit", "AR", party="customer")
def credit_limit(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    balance = _sum(row.open_amount_cur for row in _cust_items(ctx, p))
    limit = p.row.credit_limit
    available = limit - balance
    return Answer(
        text=f"{p.label} in {p.legal_entity} has a credit limit of {money(limit, p.currency)}; "
        f"with a balance of {money(balance, p.currency)} as of {long_date(ctx.today)}, the "
        f"available credit is {money(available, p.currency)}"
        + (" (over the limit)." if available < 0 else "."),
        facts=[
            _amount("credit_limit", limit),
            _amount("balance", balance),
            _amount("available_credit", available),
        ],
        refs=[p.path],
        records=1,
    )


@_template("credit_utilization", "Credit Limit", "AR", party="customer")
def credit_utilization(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    balance = _sum(row.open_amount_cur for row in _cust_items(ctx, p))
    limit = p.row.credit_limit
    if limit == 0:
        return Answer(
            text=f"{p.label} has no credit limit (0), so utilisation is undefined; the balance is "
            f"{money(balance, p.currency)}.",
            facts=[_amount("credit_limit", 0), _amount("balance", balance)],
            refs=[p.path],
            records=1,
        )
    percent = balance / limit * 100
    return Answer(
        text=f"{p.label} in {p.legal_entity} uses {percent:.1f}% of its credit limit as of "
        f"{long_date(ctx.today)}: balance {money(balance, p.currency)} against a limit of "
        f"{money(limit, p.currency)}.",
        facts=[
            ExpectedFact(
                kind="percent",
                field="utilization",
                value=_num(percent),
                tolerance=PERCENT_TOLERANCE,
            ),
            _amount("credit_limit", limit),
            _amount("balance", balance),
        ],
        refs=[p.path],
        records=1,
    )


@_template("credit_hold_list", "Credit Limit", "AR")
def credit_hold_list(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params.get("legal_entity")
    c = s.Customer
    rows = list(
        ctx.session.scalars(
            select(c)
            .where(c.credit_hold.is_(True), *_le_filter(c, le))
            .order_by(c.legal_entity, c.account)
        )
    )
    if not rows:
        return Answer(
            text=f"No customers are on credit hold {_where(le)}.", facts=[_none("customers")]
        )
    lines = [f"{r.name} ({r.account}, {r.legal_entity})" for r in rows]
    return Answer(
        text=f"{len(rows)} customer(s) are on credit hold {_where(le)} as of "
        f"{long_date(ctx.today)}: {_listing(lines, len(rows))}.",
        facts=[
            _count("customers_on_hold", len(rows)),
            _top("customers", [r.account for r in rows], ordered=False),
        ],
        refs=[record_path("customers", r.legal_entity, r.account) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("over_limit_group_top", "Credit Limit", "AR")
def over_limit_group_top(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, group, n = params["legal_entity"], params["group_id"], params["n"]
    c = s.Customer
    customers = {
        r.account: r
        for r in ctx.session.scalars(select(c).where(c.legal_entity == le, c.group_id == group))
    }
    balances: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in ledger_open_items(ctx, "customer", le):
        if row.customer_account in customers:
            balances[row.customer_account] += row.open_amount_cur
    over = [
        (balances[a] - r.credit_limit, a)
        for a, r in customers.items()
        if balances[a] - r.credit_limit > 0
    ]
    over.sort(key=lambda x: (-x[0], x[1]))
    over = over[:n]
    if not over:
        return Answer(
            text=f"No customer in group {group} in {le} is over its credit limit as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("customers")],
        )
    lines = [
        f"{customers[a].name} ({a}) over by {money(v, customers[a].currency)}" for v, a in over
    ]
    return Answer(
        text=f"Customers in group {group} in {le} over their credit limit as of "
        f"{long_date(ctx.today)}, largest excess first: " + "; ".join(lines) + ".",
        facts=[_top("customers", [a for _, a in over])]
        + [_amount(f"excess_{a}", v) for v, a in over[:3]],
        refs=[record_path("customers", le, a) for _, a in over],
        records=len(over),
    )


@_template("credit_rating", "Credit Rating", "AR", party="customer")
def credit_rating(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    return Answer(
        text=f"The credit rating of {p.label} in {p.legal_entity} is {p.row.credit_rating}.",
        facts=[_fact("text", "credit_rating", p.row.credit_rating)],
        refs=[p.path],
        records=1,
    )


@_template("rating_count_group", "Credit Rating", "AR")
def rating_count_group(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, rating, group = params["legal_entity"], params["rating"], params["group_id"]
    c = s.Customer
    rows = list(
        ctx.session.scalars(
            select(c)
            .where(c.legal_entity == le, c.group_id == group, c.credit_rating == rating)
            .order_by(c.account)
        )
    )
    if not rows:
        return Answer(
            text=f"No customer in group {group} in {le} has the credit rating {rating}.",
            facts=[_none("customers"), _count("customers", 0)],
        )
    lines = [f"{r.name} ({r.account})" for r in rows]
    return Answer(
        text=f"{len(rows)} customer(s) in group {group} in {le} are rated {rating}: "
        f"{_listing(lines, len(rows))}.",
        facts=[_count("customers", len(rows))],
        refs=[record_path("customers", le, r.account) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


# ---- Customer Setup ------------------------------------------------------------------------------


@_template("payment_terms_customer", "Customer Setup", "AR", party="customer")
def payment_terms_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    return _terms_answer(ctx, p)


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


@_template("contact_customer", "Customer Setup", "AR", party="customer")
def contact_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    r = p.row
    return Answer(
        text=f"{p.label} in {p.legal_entity}: contact {r.contact_name}, phone {r.contact_phone}, "
        f"email {r.contact_email}, address {r.address_street}, {r.address_city}, "
        f"{r.address_state} {r.address_zip}, {r.address_country}.",
        facts=[
            _fact("text", "phone", r.contact_phone),
            _fact("text", "email", r.contact_email),
            _fact("name", "contact_name", r.contact_name),
        ],
        refs=[p.path],
        records=1,
    )


@_template("customers_in_group", "Customer Setup", "AR")
def customers_in_group(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, group = params["legal_entity"], params["group_id"]
    c = s.Customer
    rows = list(
        ctx.session.scalars(
            select(c).where(c.legal_entity == le, c.group_id == group).order_by(c.account)
        )
    )
    if not rows:
        return Answer(
            text=f"No customers are in customer group {group} in {le}.",
            facts=[_none("customers"), _count("customers", 0)],
        )
    lines = [f"{r.name} ({r.account})" for r in rows]
    return Answer(
        text=f"{len(rows)} customer(s) are in customer group {group} in {le}; by account: "
        f"{_listing(lines, len(rows))}.",
        facts=[_count("customers", len(rows))],
        refs=[record_path("customers", le, r.account) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("customers_by_currency", "Customer Setup", "AR")
def customers_by_currency(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, currency = params["legal_entity"], params["currency"]
    c = s.Customer
    rows = list(
        ctx.session.scalars(
            select(c).where(c.legal_entity == le, c.currency == currency).order_by(c.account)
        )
    )
    if not rows:
        return Answer(
            text=f"No customers in {le} use {currency} as their currency.",
            facts=[_none("customers"), _count("customers", 0)],
        )
    lines = [f"{r.name} ({r.account})" for r in rows]
    return Answer(
        text=f"{len(rows)} customer(s) in {le} use {currency}: {_listing(lines, len(rows))}.",
        facts=[_count("customers", len(rows))],
        refs=[record_path("customers", le, r.account) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("method_of_payment_customer", "Customer Setup", "AR", party="customer")
def method_of_payment_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    method = p.row.method_of_payment
    if not method:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no method of payment set.",
            facts=[_none("method_of_payment")],
            refs=[p.path],
        )
    return Answer(
        text=f"{p.label} in {p.legal_entity} pays by method of payment {method}.",
        facts=[_fact("id", "method_of_payment", method)],
        refs=[p.path],
        records=1,
    )


# ---- Payment History / Cash Collections ----------------------------------------------------------


def _payments(
    ctx: OracleContext, p: Party, start: dt.date | None = None, end: dt.date | None = None
):
    t = s.CustomerTransaction
    conditions = [t.txn_type == "payment"]
    if start:
        conditions.append(t.txn_date >= start)
    if end:
        conditions.append(t.txn_date <= end)
    return _customer_txns(ctx, p, *conditions)


@_template("largest_payment", "Payment History", "AR", party="customer")
def largest_payment(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    rows = _by_amount_desc(_payments(ctx, p))
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has made no payments as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("payments")],
            refs=[p.path],
        )
    top = rows[0]
    return Answer(
        text=f"The largest payment by {p.label} in {p.legal_entity} as of {long_date(ctx.today)} "
        f"is {_txn_line(top, p.currency)} (voucher {top.voucher}).",
        facts=[
            _fact("id", "payment", top.document_number),
            _amount("amount", -top.amount_cur),
            _fact("date", "payment_date", top.txn_date.isoformat()),
        ],
        refs=[p.path, _txn_path("customer", top)],
        records=1,
    )


@_template("top_payments", "Payment History", "AR", party="customer")
def top_payments(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    n = params["n"]
    rows = _by_amount_desc(_payments(ctx, p))[:n]
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has made no payments as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("payments")],
            refs=[p.path],
        )
    lines = [_txn_line(row, p.currency) for row in rows]
    return Answer(
        text=f"The {len(rows)} largest payment(s) by {p.label} in {p.legal_entity} as of "
        f"{long_date(ctx.today)}{_only(n, len(rows), 'payments')}: " + "; ".join(lines) + ".",
        facts=[
            _top("payments", [row.document_number for row in rows]),
            _amount("largest_amount", -rows[0].amount_cur),
        ],
        refs=[p.path, *(_txn_path("customer", row) for row in rows)],
        records=len(rows),
    )


@_template("payments_in_range", "Payment History", "AR", party="customer")
def payments_in_range(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    start, end = _d(params["start"]), _d(params["end"])
    rows = _payments(ctx, p, start, end)
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} made no payments {window}.",
            facts=[_none("payments"), _count("payments", 0)],
            refs=[p.path],
        )
    total = -_sum(row.amount_cur for row in rows)
    lines = [_txn_line(row, p.currency) for row in rows]
    return Answer(
        text=f"{p.label} in {p.legal_entity} made {len(rows)} payment(s) {window} totalling "
        f"{money(total, p.currency)}: {_listing(lines, len(rows))}.",
        facts=[_count("payments", len(rows)), _amount("total_paid", total)],
        refs=[p.path, *(_txn_path("customer", row) for row in rows[:LIST_LIMIT])],
        records=len(rows),
    )


@_template("last_payment", "Payment History", "AR", party="customer")
def last_payment(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    rows = _payments(ctx, p)
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has made no payments as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("payments")],
            refs=[p.path],
        )
    last_day = max(row.txn_date for row in rows)
    last = [row for row in rows if row.txn_date == last_day]
    lines = [_txn_line(row, p.currency) for row in last]
    return Answer(
        text=f"The most recent payment by {p.label} in {p.legal_entity} was on "
        f"{long_date(last_day)}: " + "; ".join(lines) + ".",
        facts=[
            _fact("date", "last_payment_date", last_day.isoformat()),
            _amount("amount", -_sum(row.amount_cur for row in last)),
        ],
        refs=[p.path, *(_txn_path("customer", row) for row in last)],
        records=len(last),
    )


@_template("collected_fiscal_year", "Cash Collections", "AR", party="customer")
def collected_fiscal_year(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    start, _ = ctx.fiscal_year(p.legal_entity)
    rows = _payments(ctx, p, start, ctx.today)
    window = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.today)})"
    if not rows:
        return Answer(
            text=f"Nothing was collected from {p.label} in {p.legal_entity} {window}: no payments.",
            facts=[_none("payments"), _amount("total_collected", 0)],
            refs=[p.path],
        )
    total = -_sum(row.amount_cur for row in rows)
    return Answer(
        text=f"{money(total, p.currency)} was collected from {p.label} in {p.legal_entity} "
        f"{window}, in {len(rows)} payment(s).",
        facts=[_amount("total_collected", total), _count("payments", len(rows))],
        refs=[p.path, *(_txn_path("customer", row) for row in rows[:LIST_LIMIT])],
        records=1,
    )


# ---- Invoicing History ---------------------------------------------------------------------------


def _invoices(
    ctx: OracleContext, p: Party, start: dt.date | None = None, end: dt.date | None = None
):
    t = s.CustomerTransaction
    conditions = [t.txn_type.in_(AR_INVOICE_TYPES)]
    if start:
        conditions.append(t.txn_date >= start)
    if end:
        conditions.append(t.txn_date <= end)
    return _customer_txns(ctx, p, *conditions)


@_template("invoices_in_range_customer", "Invoicing History", "AR", party="customer")
def invoices_in_range_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    start, end = _d(params["start"]), _d(params["end"])
    rows = _invoices(ctx, p, start, end)
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return Answer(
            text=f"No invoices were issued to {p.label} in {p.legal_entity} {window}.",
            facts=[_none("invoices"), _count("invoices", 0)],
            refs=[p.path],
        )
    total = _sum(row.amount_cur for row in rows)
    lines = [_txn_line(row, p.currency) for row in rows]
    return Answer(
        text=f"{len(rows)} invoice(s) were issued to {p.label} in {p.legal_entity} {window}, "
        f"totalling {money(total, p.currency)}: {_listing(lines, len(rows))}.",
        facts=[_count("invoices", len(rows)), _amount("total_invoiced", total)],
        refs=[p.path, *(_txn_path("customer", row) for row in rows[:LIST_LIMIT])],
        records=len(rows),
    )


@_template("invoice_count_customer", "Invoicing History", "AR", party="customer")
def invoice_count_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    rows = _invoices(ctx, p)
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no invoices as of {long_date(ctx.today)}.",
            facts=[_none("invoices"), _count("invoices", 0)],
            refs=[p.path],
        )
    total = _sum(row.amount_cur for row in rows)
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} posted invoice(s) as of "
        f"{long_date(ctx.today)}, totalling {money(total, p.currency)}.",
        facts=[_count("invoices", len(rows)), _amount("total_invoiced", total)],
        refs=[p.path],
        records=1,
    )


@_template("largest_invoice_entity", "Invoicing History", "AR")
def largest_invoice_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    start, end = _d(params["start"]), _d(params["end"])
    t = s.CustomerTransaction
    row = ctx.session.scalars(
        select(t)
        .where(
            t.legal_entity == le,
            t.posted.is_(True),
            t.txn_type.in_(AR_INVOICE_TYPES),
            t.txn_date >= start,
            t.txn_date <= end,
        )
        .order_by(t.amount_acct.desc(), t.txn_date, t.voucher)
    ).first()
    window = f"between {long_date(start)} and {long_date(end)}"
    if row is None:
        return Answer(text=f"No invoices were posted in {le} {window}.", facts=[_none("invoices")])
    name = _names(ctx, "customer", le, [row.customer_account])[row.customer_account]
    currency = ctx.currency(le)
    return Answer(
        text=f"The largest customer invoice in {le} {window} is {row.document_number} to {name} "
        f"({row.customer_account}) on {long_date(row.txn_date)}: "
        f"{money(row.amount_cur, row.currency)}"
        + (
            f" ({money(row.amount_acct, currency)} in accounting currency)."
            if row.currency != currency
            else "."
        ),
        facts=[
            _fact("id", "invoice", row.document_number),
            _fact("id", "customer_account", row.customer_account),
            _amount("amount", row.amount_cur),
        ],
        refs=[_txn_path("customer", row), record_path("customers", le, row.customer_account)],
        records=1,
    )


@_template("top_invoiced_customer_entity", "Invoicing History", "AR")
def top_invoiced_customer_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    start, end = _d(params["start"]), _d(params["end"])
    t = s.CustomerTransaction
    rows = ctx.session.execute(
        select(t.customer_account, func.sum(t.amount_acct), func.count())
        .where(
            t.legal_entity == le,
            t.posted.is_(True),
            t.txn_type.in_(AR_INVOICE_TYPES),
            t.txn_date >= start,
            t.txn_date <= end,
        )
        .group_by(t.customer_account)
    ).all()
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return Answer(text=f"No invoices were posted in {le} {window}.", facts=[_none("invoices")])
    ranked = sorted(
        ((Decimal(total), account, n) for account, total, n in rows), key=lambda x: (-x[0], x[1])
    )
    total, account, count = ranked[0]
    name = _names(ctx, "customer", le, [account])[account]
    currency = ctx.currency(le)
    return Answer(
        text=f"{name} ({account}) has the highest total invoiced in {le} {window}: "
        f"{money(total, currency)} (accounting currency) over {count} invoice(s).",
        facts=[_fact("id", "customer_account", account), _amount("total_invoiced", total)],
        refs=[record_path("customers", le, account)],
        records=1,
    )


# ---- Sales Orders --------------------------------------------------------------------------------


def _orders(ctx: OracleContext, *conditions) -> list[s.SalesOrder]:
    o = s.SalesOrder
    query = select(o).where(o.order_date <= ctx.today, *conditions)
    return list(ctx.session.scalars(query.order_by(o.legal_entity, o.sales_id)))


def _order_line(order: s.SalesOrder, name: str | None = None) -> str:
    who = f" for {name} ({order.customer_account})" if name else ""
    return (
        f"{order.sales_id}{who}, {order.order_type} order, status {order.status}, "
        f"{money(order.total_amount, order.currency)}, ordered {long_date(order.order_date)}"
    )


def _order_path(order: s.SalesOrder) -> str:
    return record_path("sales-orders", order.legal_entity, order.sales_id)


@_template("open_orders_customer", "Sales Orders", "AR", party="customer")
def open_orders_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    o = s.SalesOrder
    rows = _orders(
        ctx, o.legal_entity == p.legal_entity, o.customer_account == p.account, o.status == "open"
    )
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open sales orders as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("open_orders"), _count("open_orders", 0)],
            refs=[p.path],
        )
    lines = [_order_line(row) for row in rows]
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} open sales order(s): "
        f"{_listing(lines, len(rows))}.",
        facts=[
            _count("open_orders", len(rows)),
            _top("orders", [row.sales_id for row in rows], ordered=False),
        ],
        refs=[p.path, *(_order_path(row) for row in rows[:LIST_LIMIT])],
        records=len(rows),
    )


@_template("order_count_customer", "Sales Orders", "AR", party="customer")
def order_count_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    o = s.SalesOrder
    rows = _orders(ctx, o.legal_entity == p.legal_entity, o.customer_account == p.account)
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no sales orders.",
            facts=[_none("orders"), _count("orders", 0)],
            refs=[p.path],
        )
    by_status: dict[str, int] = defaultdict(int)
    for row in rows:
        by_status[row.status] += 1
    split = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} sales order(s) as of "
        f"{long_date(ctx.today)}: {split}.",
        facts=[_count("orders", len(rows))]
        + [_count(f"orders_{status}", count) for status, count in sorted(by_status.items())],
        refs=[p.path],
        records=len(by_status),
    )


@_template("do_not_process_orders", "Sales Orders", "AR")
def do_not_process_orders(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params.get("legal_entity")
    o = s.SalesOrder
    rows = _orders(ctx, o.do_not_process.is_(True), *_le_filter(o, le))
    if not rows:
        return Answer(
            text=f"No sales orders are marked 'Do not process' {_where(le)}.",
            facts=[_none("orders"), _count("orders", 0)],
        )
    lines = [_order_line(row) + f" ({row.customer_account}, {row.legal_entity})" for row in rows]
    return Answer(
        text=f"{len(rows)} sales order(s) are marked 'Do not process' {_where(le)}: "
        f"{_listing(lines, len(rows))}.",
        facts=[
            _count("orders", len(rows)),
            _top("orders", [row.sales_id for row in rows], ordered=False),
        ],
        refs=[_order_path(row) for row in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("most_open_orders_entity", "Sales Orders", "AR")
def most_open_orders_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    o = s.SalesOrder
    counts: dict[str, int] = defaultdict(int)
    for row in _orders(ctx, o.legal_entity == le, o.status == "open"):
        counts[row.customer_account] += 1
    if not counts:
        return Answer(text=f"There are no open sales orders in {le}.", facts=[_none("orders")])
    best = max(counts.values())
    leaders = sorted(a for a, n in counts.items() if n == best)
    names = _names(ctx, "customer", le, leaders)
    who = ", ".join(f"{names[a]} ({a})" for a in leaders)
    return Answer(
        text=f"The customer(s) with the most open sales orders in {le} as of "
        f"{long_date(ctx.today)}: {who}, with {best} open order(s)"
        + (" each." if len(leaders) > 1 else "."),
        facts=[_count("open_orders", best), _top("customers", leaders, ordered=False)],
        refs=[record_path("customers", le, a) for a in leaders],
        records=len(leaders),
    )


@_template("largest_orders_customer", "Sales Orders", "AR", party="customer")
def largest_orders_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    o = s.SalesOrder
    rows = _orders(
        ctx,
        o.legal_entity == p.legal_entity,
        o.customer_account == p.account,
        o.order_type == "sales",
        o.status != "canceled",
    )
    rows.sort(key=lambda row: (-row.total_amount, row.sales_id))
    found = len(rows)
    rows = rows[: params["n"]]
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no sales orders (canceled ones excluded).",
            facts=[_none("orders")],
            refs=[p.path],
        )
    lines = [_order_line(row) for row in rows]
    return Answer(
        text=f"The {len(rows)} largest sales order(s) of {p.label} in {p.legal_entity}, "
        f"canceled orders excluded{_only(params['n'], found, 'such orders')}: "
        + "; ".join(lines)
        + ".",
        facts=[
            _top("orders", [row.sales_id for row in rows]),
            _amount("largest_amount", rows[0].total_amount),
        ],
        refs=[p.path, *(_order_path(row) for row in rows)],
        records=len(rows),
    )


@_template("return_orders_entity", "Sales Orders", "AR")
def return_orders_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    o = s.SalesOrder
    rows = _orders(ctx, o.legal_entity == le, o.order_type == "return")
    if not rows:
        return Answer(text=f"There are no return orders in {le}.", facts=[_none("orders")])
    by_status: dict[str, int] = defaultdict(int)
    for row in rows:
        by_status[row.status] += 1
    split = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
    return Answer(
        text=f"There are {len(rows)} return order(s) in {le} as of {long_date(ctx.today)} "
        f"({split}).",
        facts=[_count("return_orders", len(rows))],
        refs=[_order_path(row) for row in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("orders_by_release_status", "Sales Orders", "AR")
def orders_by_release_status(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, status = params["legal_entity"], params["release_status"]
    o = s.SalesOrder
    rows = _orders(ctx, o.legal_entity == le, o.release_status == status, o.status == "open")
    label = status.replace("_", " ")
    if not rows:
        return Answer(
            text=f"No open sales orders in {le} have release status '{label}'.",
            facts=[_none("orders"), _count("orders", 0)],
        )
    lines = [_order_line(row) + f" ({row.customer_account})" for row in rows]
    return Answer(
        text=f"{len(rows)} open sales order(s) in {le} have release status '{label}': "
        f"{_listing(lines, len(rows))}.",
        facts=[_count("orders", len(rows))],
        refs=[_order_path(row) for row in rows[:LIST_LIMIT]],
        records=len(rows),
    )


# ---- Collections ---------------------------------------------------------------------------------


def _letters(ctx: OracleContext, p: Party) -> list[s.CollectionLetter]:
    c = s.CollectionLetter
    query = select(c).where(
        c.legal_entity == p.legal_entity, c.customer_account == p.account, c.sent_date <= ctx.today
    )
    return list(ctx.session.scalars(query.order_by(c.sent_date, c.letter_id)))


def _letter_line(letter: s.CollectionLetter, currency: str) -> str:
    return (
        f"{letter.letter_id} level {letter.level} ({letter.sequence}) sent "
        f"{long_date(letter.sent_date)} for {money(letter.amount, currency)}"
    )


@_template("last_letter_customer", "Collections", "AR", party="customer")
def last_letter_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    letters = _letters(ctx, p)
    if not letters:
        return Answer(
            text=f"No collection letters have been sent to {p.label} in {p.legal_entity}.",
            facts=[_none("collection_letters")],
            refs=[p.path],
        )
    last = letters[-1]
    currency = ctx.currency(p.legal_entity)
    return Answer(
        text=f"The last collection letter sent to {p.label} in {p.legal_entity} was "
        f"{_letter_line(last, currency)}; the customer is at collection letter level {last.level}.",
        facts=[
            _fact("date", "sent_date", last.sent_date.isoformat()),
            _count("level", last.level),
            _fact("id", "letter", last.letter_id),
        ],
        refs=[p.path, record_path("collection-letters", p.legal_entity, last.letter_id)],
        records=1,
    )


@_template("letters_customer", "Collections", "AR", party="customer")
def letters_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    letters = _letters(ctx, p)
    if not letters:
        return Answer(
            text=f"No collection letters have been sent to {p.label} in {p.legal_entity} as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("collection_letters"), _count("collection_letters", 0)],
            refs=[p.path],
        )
    currency = ctx.currency(p.legal_entity)
    lines = [_letter_line(letter, currency) for letter in letters]
    return Answer(
        text=f"{len(letters)} collection letter(s) have been sent to {p.label} in "
        f"{p.legal_entity}: {_listing(lines, len(letters))}.",
        facts=[
            _count("collection_letters", len(letters)),
            _top("letters", [letter.letter_id for letter in letters], ordered=False),
        ],
        refs=[p.path]
        + [record_path("collection-letters", p.legal_entity, x.letter_id) for x in letters[:10]],
        records=len(letters),
    )


@_template("unassigned_pool_count", "Collections", "AR")
def unassigned_pool_count(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    c = s.Customer
    count = ctx.session.scalar(
        select(func.count()).where(c.legal_entity == le, c.collections_pool_id.is_(None))
    )
    total = ctx.session.scalar(select(func.count()).where(c.legal_entity == le))
    if not count:
        return Answer(
            text=f"Every customer in {le} ({total}) is assigned to a collections pool; none is "
            "unassigned.",
            facts=[_none("customers"), _count("unassigned_customers", 0)],
        )
    return Answer(
        text=f"{count} of the {total} customers in {le} are not assigned to any collections pool.",
        facts=[_count("unassigned_customers", count)],
        records=1,
    )


@_template("collections_agent_customer", "Collections", "AR", party="customer")
def collections_agent_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    agent_id, pool_id = p.row.collections_agent_id, p.row.collections_pool_id
    if not agent_id and not pool_id:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no collections agent or pool assigned.",
            facts=[_none("collections_agent")],
            refs=[p.path],
        )
    refs = [p.path]
    parts = []
    facts = []
    if agent_id:
        a = s.CollectionsAgent
        agent = ctx.session.scalars(
            select(a).where(a.legal_entity == p.legal_entity, a.agent_id == agent_id)
        ).first()
        name = agent.name if agent else agent_id
        parts.append(f"collections agent {name} ({agent_id})")
        facts.append(_fact("name", "agent", name))
        refs.append(record_path("collections-agents", p.legal_entity, agent_id))
    else:
        parts.append("no collections agent")
    if pool_id:
        parts.append(f"collections pool {pool_id}")
        facts.append(_fact("id", "pool", pool_id))
        refs.append(record_path("collections-pools", p.legal_entity, pool_id))
    return Answer(
        text=f"{p.label} in {p.legal_entity} is handled by " + " in ".join(parts) + ".",
        facts=facts,
        refs=refs,
        records=1,
    )


# ---- Collections Tasks ---------------------------------------------------------------------------


def _activity_line(row: s.CollectionActivity, name: str | None = None) -> str:
    who = f" for {name} ({row.customer_account})" if name else ""
    return (
        f"{row.activity_id}{who}: {row.category} {row.activity_type} '{row.purpose}', status "
        f"{row.status}, due {long_date(row.due_date)}, owner {row.owner_agent_id}"
    )


@_template("open_activities_customer", "Collections Tasks", "AR", party="customer")
def open_activities_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    a = s.CollectionActivity
    rows = list(
        ctx.session.scalars(
            select(a)
            .where(
                a.legal_entity == p.legal_entity,
                a.customer_account == p.account,
                a.status.in_(OPEN_ACTIVITY_STATUSES),
                a.created_date <= ctx.today,
            )
            .order_by(a.due_date, a.activity_id)
        )
    )
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open collections activities as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("activities"), _count("open_activities", 0)],
            refs=[p.path],
        )
    lines = [_activity_line(row) for row in rows]
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} open collections activit"
        f"{'y' if len(rows) == 1 else 'ies'}: {_listing(lines, len(rows))}.",
        facts=[
            _count("open_activities", len(rows)),
            _top("activities", [row.activity_id for row in rows], ordered=False),
        ],
        refs=[p.path]
        + [record_path("collection-activities", p.legal_entity, r.activity_id) for r in rows[:10]],
        records=len(rows),
    )


@_template("open_cases_customer", "Collections Tasks", "AR", party="customer")
def open_cases_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    c = s.CollectionCase
    rows = list(
        ctx.session.scalars(
            select(c)
            .where(
                c.legal_entity == p.legal_entity,
                c.customer_account == p.account,
                c.status == "open",
                c.opened_date <= ctx.today,
            )
            .order_by(c.opened_date, c.case_id)
        )
    )
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open collections cases.",
            facts=[_none("cases"), _count("open_cases", 0)],
            refs=[p.path],
        )
    lines = [
        f"{r.case_id} '{r.description}', opened {long_date(r.opened_date)}, owner "
        f"{r.owner_agent_id}"
        for r in rows
    ]
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} open collections case(s): "
        f"{_listing(lines, len(rows))}.",
        facts=[
            _count("open_cases", len(rows)),
            _top("cases", [r.case_id for r in rows], ordered=False),
        ],
        refs=[p.path] + [record_path("collection-cases", p.legal_entity, r.case_id) for r in rows],
        records=len(rows),
    )


@_template("agent_worklist", "Collections Tasks", "AR")
def agent_worklist(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, agent_id, day = params["legal_entity"], params["agent_id"], _d(params["date"])
    a = s.CollectionActivity
    agents = s.CollectionsAgent
    agent = ctx.session.scalars(
        select(agents).where(agents.legal_entity == le, agents.agent_id == agent_id)
    ).first()
    agent_name = f"{agent.name} ({agent_id})" if agent else agent_id
    rows = list(
        ctx.session.scalars(
            select(a)
            .where(
                a.legal_entity == le,
                a.owner_agent_id == agent_id,
                a.due_date == day,
                a.status.in_(OPEN_ACTIVITY_STATUSES),
            )
            .order_by(a.customer_account, a.activity_id)
        )
    )
    if not rows:
        return Answer(
            text=f"Collections agent {agent_name} has no open activities due on {long_date(day)} "
            f"in {le}.",
            facts=[_none("activities"), _count("activities", 0)],
        )
    names = _names(ctx, "customer", le, {r.customer_account for r in rows})
    lines = [_activity_line(r, names.get(r.customer_account)) for r in rows]
    customers = sorted({r.customer_account for r in rows})
    return Answer(
        text=f"Collections agent {agent_name} has {len(rows)} open activit"
        f"{'y' if len(rows) == 1 else 'ies'} due on {long_date(day)} in {le}, for "
        f"{len(customers)} customer(s): {_listing(lines, len(rows))}.",
        facts=[
            _count("activities", len(rows)),
            _top("customers", customers, ordered=False),
        ],
        refs=[record_path("collection-activities", le, r.activity_id) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("open_tasks_due_entity", "Collections Tasks", "AR")
def open_tasks_due_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, start, end = params["legal_entity"], _d(params["start"]), _d(params["end"])
    a = s.CollectionActivity
    rows = list(
        ctx.session.scalars(
            select(a)
            .where(
                a.legal_entity == le,
                a.category == "task",
                a.status.in_(OPEN_ACTIVITY_STATUSES),
                a.due_date >= start,
                a.due_date <= end,
            )
            .order_by(a.due_date, a.activity_id)
        )
    )
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return Answer(
            text=f"No open collections tasks in {le} are due {window}.",
            facts=[_none("tasks"), _count("tasks", 0)],
        )
    lines = [_activity_line(r) for r in rows]
    return Answer(
        text=f"{len(rows)} open collections task(s) in {le} are due {window}: "
        f"{_listing(lines, len(rows))}.",
        facts=[_count("tasks", len(rows))],
        refs=[record_path("collection-activities", le, r.activity_id) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


# ---- Cash Discounts / Discounts ------------------------------------------------------------------


@_template("discounts_expiring_entity", "Cash Discounts", "AR")
def discounts_expiring_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    end = ctx.today + dt.timedelta(days=days)
    rows = [
        row
        for row in ledger_open_items(ctx, "customer", le)
        if row.open_amount_cur > 0
        and row.txn_type in AR_INVOICE_TYPES
        and row.cash_discount_date is not None
        and ctx.today <= row.cash_discount_date <= end
    ]
    rows.sort(key=lambda row: (row.cash_discount_date, row.voucher))
    window = f"between {long_date(ctx.today)} and {long_date(end)}"
    if not rows:
        return Answer(
            text=f"No open customer invoices in {le} have a cash discount expiring {window}.",
            facts=[_none("invoices"), _count("invoices", 0)],
        )
    lines = [
        f"{r.document_number} ({r.customer_account}) discount "
        f"{money(r.cash_discount_amount or 0, r.currency)} until {long_date(r.cash_discount_date)}"
        for r in rows
    ]
    return Answer(
        text=f"{len(rows)} open customer invoice(s) in {le} have a cash discount expiring "
        f"{window}: {_listing(lines, len(rows))}.",
        facts=[
            _count("invoices", len(rows)),
            _top("invoices", [r.document_number for r in rows], ordered=False),
        ],
        refs=[_txn_path("customer", r) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("discounts_taken_customer", "Cash Discounts", "AR", party="customer")
def discounts_taken_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    start, end = _d(params["start"]), _d(params["end"])
    st = s.CustomerSettlement
    rows = list(
        ctx.session.scalars(
            select(st)
            .where(
                st.legal_entity == p.legal_entity,
                st.customer_account == p.account,
                st.cash_discount_taken > 0,
                st.settled_date >= start,
                st.settled_date <= end,
            )
            .order_by(st.settled_date, st.settlement_id)
        )
    )
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} took no cash discounts {window}: no payment "
            "was made within a discount window.",
            facts=[_none("discounts_taken"), _count("discounts_taken", 0)],
            refs=[p.path],
        )
    total = _sum(r.cash_discount_taken for r in rows)
    return Answer(
        text=f"{p.label} in {p.legal_entity} paid within the discount window {len(rows)} time(s) "
        f"{window}, taking {money(total, p.currency)} in cash discounts.",
        facts=[_count("discounts_taken", len(rows)), _amount("discount_total", total)],
        refs=[p.path]
        + [record_path("customer-settlements", p.legal_entity, r.settlement_id) for r in rows[:10]],
        records=1,
    )


@_template("open_discount_invoices_customer", "Cash Discounts", "AR", party="customer")
def open_discount_invoices_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    rows = [
        row
        for row in _cust_items(ctx, p)
        if row.open_amount_cur > 0
        and row.txn_type in AR_INVOICE_TYPES
        and row.cash_discount_date is not None
        and row.cash_discount_date >= ctx.today
    ]
    if not rows:
        return Answer(
            text=f"None of the open invoices of {p.label} in {p.legal_entity} has a cash discount "
            f"still available as of {long_date(ctx.today)}.",
            facts=[_none("invoices")],
            refs=[p.path],
        )
    lines = [
        f"{r.document_number}: {money(r.cash_discount_amount or 0, p.currency)} if paid by "
        f"{long_date(r.cash_discount_date)}"
        for r in rows
    ]
    return Answer(
        text=f"{len(rows)} open invoice(s) of {p.label} in {p.legal_entity} still carry an "
        f"available cash discount: {_listing(lines, len(rows))}.",
        facts=[
            _count("invoices", len(rows)),
            _top("invoices", [r.document_number for r in rows], ordered=False),
        ],
        refs=[p.path, *(_txn_path("customer", r) for r in rows[:LIST_LIMIT])],
        records=len(rows),
    )


def _disputes(ctx: OracleContext, p: Party, kind: str) -> list[s.CustomerDispute]:
    d = s.CustomerDispute
    query = select(d).where(
        d.legal_entity == p.legal_entity,
        d.customer_account == p.account,
        d.kind == kind,
        d.status == "open",
        d.opened_date <= ctx.today,
    )
    return list(ctx.session.scalars(query.order_by(d.opened_date, d.dispute_id)))


def _dispute_answer(ctx: OracleContext, p: Party, kind: str) -> Answer:
    rows = _disputes(ctx, p, kind)
    plural = "disputes" if kind == "dispute" else "deductions"
    noun = plural if len(rows) != 1 else kind
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open {plural} as of "
            f"{long_date(ctx.today)}.",
            facts=[_none(plural), _count(plural, 0)],
            refs=[p.path],
        )
    currency = ctx.currency(p.legal_entity)
    vouchers = _document_numbers(ctx, p.legal_entity, [r.voucher for r in rows])
    lines = [
        f"{r.dispute_id} on {vouchers.get(r.voucher, r.voucher)}: {r.reason}, "
        f"{money(r.amount, currency)}, opened {long_date(r.opened_date)}"
        for r in rows
    ]
    total = _sum(r.amount for r in rows)
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} open {noun} totalling "
        f"{money(total, currency)}: {_listing(lines, len(rows))}.",
        facts=[
            _count(plural, len(rows)),
            _amount(f"{plural}_total", total),
            _top(plural, [r.dispute_id for r in rows], ordered=False),
        ],
        refs=[p.path]
        + [record_path("customer-disputes", p.legal_entity, r.dispute_id) for r in rows[:10]],
        records=len(rows),
    )


def _document_numbers(ctx: OracleContext, le: str, vouchers: list[str]) -> dict[str, str]:
    t = s.CustomerTransaction
    rows = ctx.session.execute(
        select(t.voucher, t.document_number).where(t.legal_entity == le, t.voucher.in_(vouchers))
    )
    return {key: value for key, value in rows}


@_template("open_disputes_customer", "Dispute", "AR", party="customer")
def open_disputes_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _dispute_answer(ctx, party(ctx, "customer", params), "dispute")


@_template("open_deductions_customer", "Discounts", "AR", party="customer")
def open_deductions_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _dispute_answer(ctx, party(ctx, "customer", params), "deduction")


# ---- Credit Notes --------------------------------------------------------------------------------


@_template("unapplied_credit_notes_customer", "Credit Notes", "AR", party="customer")
def unapplied_credit_notes_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    rows = [row for row in _cust_items(ctx, p) if row.txn_type == "credit_note"]
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no unapplied credit notes as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("credit_notes"), _count("credit_notes", 0)],
            refs=[p.path],
        )
    total = -_sum(row.open_amount_cur for row in rows)
    lines = [
        f"{r.document_number} ({long_date(r.txn_date)}), unapplied "
        f"{money(-r.open_amount_cur, p.currency)} of {money(-r.amount_cur, p.currency)}"
        for r in rows
    ]
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} credit note(s) not fully applied, "
        f"{money(total, p.currency)} in total: {_listing(lines, len(rows))}.",
        facts=[_count("credit_notes", len(rows)), _amount("unapplied_total", total)],
        refs=[p.path, *(_txn_path("customer", r) for r in rows[:LIST_LIMIT])],
        records=len(rows),
    )


# ==================================================================================================
# AP templates
# ==================================================================================================

# ---- Vendor Balance ------------------------------------------------------------------------------


@_template("vendor_balance", "Vendor Balance", "AP", party="vendor")
def vendor_balance(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    items = _vend_items(ctx, p)
    total = _sum(row.open_amount_cur for row in items)
    total_acct = _sum(row.open_amount_acct for row in items)
    acct = ctx.currency(p.legal_entity)
    text = f"The open AP balance owed to {p.label} in {p.legal_entity} as of "
    text += f"{long_date(ctx.today)} is {money(total, p.currency)}"
    facts = [_amount("balance", total)]
    if acct != p.currency and total:
        text += f" ({money(total_acct, acct)} in accounting currency)"
        facts.append(_amount("balance_accounting", total_acct))
    text += f", over {len(items)} open transaction(s)."
    if not items:
        facts.append(_none("open_items"))
    return Answer(text=text, facts=facts, refs=[p.path], records=1 if items else 0)


def _vendor_group_totals(ctx: OracleContext, le: str) -> dict[str, Decimal]:
    v = s.Vendor
    groups = dict(
        (a, g)
        for a, g in ctx.session.execute(select(v.account, v.group_id).where(v.legal_entity == le))
    )
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in ledger_open_items(ctx, "vendor", le):
        totals[groups.get(row.vendor_account, "?")] += row.open_amount_acct
    return dict(sorted(totals.items()))


@_template("ap_by_group_entity", "Vendor Balance", "AP")
def ap_by_group_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    totals = _vendor_group_totals(ctx, le)
    currency = ctx.currency(le)
    if not totals:
        return Answer(text=f"There are no open AP balances in {le}.", facts=[_none("balances")])
    lines = [f"group {g}: {money(v, currency)}" for g, v in totals.items()]
    grand = _sum(totals.values())
    return Answer(
        text=f"Open AP balance in {le} by vendor group as of {long_date(ctx.today)} (accounting "
        f"currency): " + "; ".join(lines) + f"; total {money(grand, currency)}.",
        facts=[_amount("total", grand)] + [_amount(f"group_{g}", v) for g, v in totals.items()],
        refs=[record_path("vendor-groups", le, g) for g in totals if g != "?"],
        records=len(totals),
    )


@_template("ap_group_balance", "Vendor Balance", "AP")
def ap_group_balance(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, group = params["legal_entity"], params["group_id"]
    value = _vendor_group_totals(ctx, le).get(group, Decimal("0.00"))
    currency = ctx.currency(le)
    g = s.VendorGroup
    name = ctx.session.scalar(select(g.name).where(g.legal_entity == le, g.group_id == group))
    label = f"vendor group {group}" + (f" ({name})" if name else "")
    facts = [_amount("balance", value)]
    if not value:
        facts.append(_none("open_items"))
    return Answer(
        text=f"The combined open AP balance of all vendors in {label} in {le} as of "
        f"{long_date(ctx.today)} is {money(value, currency)} (accounting currency).",
        facts=facts,
        refs=[record_path("vendor-groups", le, group)] if name else [],
        records=1 if value else 0,
    )


@_template("ap_by_currency_entity", "Vendor Balance", "AP")
def ap_by_currency_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    by_cur: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal("0.00"), Decimal("0.00")])
    for row in ledger_open_items(ctx, "vendor", le):
        by_cur[row.currency][0] += row.open_amount_cur
        by_cur[row.currency][1] += row.open_amount_acct
    if not by_cur:
        return Answer(text=f"There are no open AP balances in {le}.", facts=[_none("balances")])
    acct = ctx.currency(le)
    lines = [
        f"{cur}: {money(v[0], cur)} ({money(v[1], acct)} accounting)"
        for cur, v in sorted(by_cur.items())
    ]
    grand = _sum(v[1] for v in by_cur.values())
    return Answer(
        text=f"Open AP balance in {le} by transaction currency as of {long_date(ctx.today)}: "
        + "; ".join(lines)
        + f"; total {money(grand, acct)} in accounting currency.",
        facts=[_amount("total_accounting", grand)]
        + [_amount(f"balance_{cur}", v[0]) for cur, v in sorted(by_cur.items())],
        records=len(by_cur),
    )


@_template("ap_overdue_entity", "Vendor Balance", "AP")
def ap_overdue_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    rows = [
        row
        for row in ledger_open_items(ctx, "vendor", le)
        if row.txn_type == "invoice"
        and row.open_amount_cur > 0
        and days_overdue(ctx.today, row.due_date, row.txn_date) > 0
    ]
    total = _sum(row.open_amount_acct for row in rows)
    currency = ctx.currency(le)
    if not rows:
        return Answer(
            text=f"No vendor invoices in {le} are overdue as of {long_date(ctx.today)}.",
            facts=[_none("overdue_invoices"), _amount("total_overdue", 0)],
        )
    return Answer(
        text=f"Overdue AP in {le} as of {long_date(ctx.today)} totals {money(total, currency)} "
        f"(accounting currency) across {len(rows)} open vendor invoice(s) of "
        f"{len({r.vendor_account for r in rows})} vendor(s).",
        facts=[_amount("total_overdue", total), _count("overdue_invoices", len(rows))],
        records=1,
    )


@_template("ap_due_next_month_top", "Vendor Balance", "AP")
def ap_due_next_month_top(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, n = params["legal_entity"], params["n"]
    start = (ctx.today.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
    end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in ledger_open_items(ctx, "vendor", le):
        invoice = row.txn_type == "invoice" and row.open_amount_cur > 0
        if invoice and row.due_date and start <= row.due_date <= end:
            totals[row.vendor_account] += row.open_amount_acct
    ranked = sorted(((v, a) for a, v in totals.items()), key=lambda x: (-x[0], x[1]))[:n]
    window = f"between {long_date(start)} and {long_date(end)}"
    currency = ctx.currency(le)
    if not ranked:
        return Answer(
            text=f"No open vendor invoices in {le} fall due next month ({window}).",
            facts=[_none("balances")],
        )
    names = _names(ctx, "vendor", le, [a for _, a in ranked])
    lines = [f"{names[a]} ({a}) {money(v, currency)}" for v, a in ranked]
    return Answer(
        text=f"The largest AP balances in {le} due next month ({window}), accounting currency: "
        + "; ".join(lines)
        + ".",
        facts=[_top("vendors", [a for _, a in ranked])]
        + [_amount(f"due_{a}", v) for v, a in ranked[:3]],
        refs=[record_path("vendors", le, a) for _, a in ranked],
        records=len(ranked),
    )


# ---- Vendors -------------------------------------------------------------------------------------


@_template("payment_terms_vendor", "Vendors", "AP", party="vendor")
def payment_terms_vendor(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _terms_answer(ctx, party(ctx, "vendor", params))


@_template("vendor_cash_discount", "Vendors", "AP", party="vendor")
def vendor_cash_discount(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    pt, cd = s.PaymentTerms, s.CashDiscount
    terms = ctx.session.scalars(
        select(pt).where(pt.legal_entity == p.legal_entity, pt.terms_id == p.row.payment_terms)
    ).first()
    code = terms.cash_discount_code if terms else None
    discount = (
        ctx.session.scalars(
            select(cd).where(cd.legal_entity == p.legal_entity, cd.code == code)
        ).first()
        if code
        else None
    )
    if discount is None:
        return Answer(
            text=f"No. {p.label} in {p.legal_entity} is on payment terms {p.row.payment_terms}, "
            "which carry no early-payment (cash) discount.",
            facts=[_fact("boolean", "offers_discount", False)],
            refs=[p.path],
            records=1,
        )
    return Answer(
        text=f"Yes. {p.label} in {p.legal_entity} is on payment terms {p.row.payment_terms} with "
        f"cash discount {discount.code}: {Decimal(discount.percent):g}% if paid within "
        f"{discount.days} days ({discount.description}).",
        facts=[
            _fact("boolean", "offers_discount", True),
            ExpectedFact(kind="percent", field="discount_percent", value=_num(discount.percent)),
            _count("discount_days", discount.days),
        ],
        refs=[p.path, record_path("cash-discounts", p.legal_entity, discount.code)],
        records=1,
    )


@_template("vendors_on_hold", "Vendors", "AP")
def vendors_on_hold(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params.get("legal_entity")
    v = s.Vendor
    rows = list(
        ctx.session.scalars(
            select(v)
            .where(v.payment_hold.is_(True), *_le_filter(v, le))
            .order_by(v.legal_entity, v.account)
        )
    )
    if not rows:
        return Answer(
            text=f"No vendors are on payment hold {_where(le)}.", facts=[_none("vendors")]
        )
    lines = [
        f"{r.name} ({r.account}, {r.legal_entity}): {r.hold_reason or 'no reason'}" for r in rows
    ]
    return Answer(
        text=f"{len(rows)} vendor(s) are on payment hold {_where(le)} as of "
        f"{long_date(ctx.today)}: {_listing(lines, len(rows))}.",
        facts=[
            _count("vendors_on_hold", len(rows)),
            _top("vendors", [r.account for r in rows], ordered=False),
        ],
        refs=[record_path("vendors", r.legal_entity, r.account) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("vendors_created_in_month", "Vendors", "AP")
def vendors_created_in_month(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, year, month = params["legal_entity"], params["year"], params["month"]
    start = dt.date(year, month, 1)
    end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    v = s.Vendor
    rows = list(
        ctx.session.scalars(
            select(v)
            .where(v.legal_entity == le, v.created_date >= start, v.created_date <= end)
            .order_by(v.created_date, v.account)
        )
    )
    label = f"{start:%B} {start.year}"
    if not rows:
        return Answer(
            text=f"No vendors were created in {le} in {label}.",
            facts=[_none("vendors"), _count("vendors", 0)],
        )
    lines = [f"{r.name} ({r.account}) on {long_date(r.created_date)}" for r in rows]
    return Answer(
        text=f"{len(rows)} vendor(s) were created in {le} in {label}: "
        f"{_listing(lines, len(rows))}.",
        facts=[_count("vendors", len(rows))],
        refs=[record_path("vendors", le, r.account) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("vendors_terms_longer_than", "Vendors", "AP")
def vendors_terms_longer_than(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    v, pt = s.Vendor, s.PaymentTerms
    long_terms = set(
        ctx.session.scalars(select(pt.terms_id).where(pt.legal_entity == le, pt.net_days > days))
    )
    rows = (
        list(
            ctx.session.scalars(
                select(v)
                .where(v.legal_entity == le, v.payment_terms.in_(long_terms))
                .order_by(v.account)
            )
        )
        if long_terms
        else []
    )
    if not rows:
        return Answer(
            text=f"No vendors in {le} have payment terms longer than {days} days net.",
            facts=[_none("vendors"), _count("vendors", 0)],
        )
    lines = [f"{r.name} ({r.account}) {r.payment_terms}" for r in rows]
    return Answer(
        text=f"{len(rows)} vendor(s) in {le} have payment terms longer than {days} days net: "
        f"{_listing(lines, len(rows))}.",
        facts=[_count("vendors", len(rows))],
        refs=[record_path("vendors", le, r.account) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


# ---- AP Invoices ---------------------------------------------------------------------------------


def _vendor_invoices(ctx: OracleContext, *conditions) -> list[s.VendorInvoice]:
    vi = s.VendorInvoice
    query = select(vi).where(vi.invoice_date <= ctx.today, *conditions)
    return list(ctx.session.scalars(query.order_by(vi.legal_entity, vi.invoice_id)))


def _vi_line(row: s.VendorInvoice) -> str:
    return (
        f"{row.invoice_id} (vendor invoice {row.vendor_invoice_number}, {row.vendor_account}) "
        f"{money(row.amount, row.currency)} dated {long_date(row.invoice_date)}"
    )


def _vi_path(row: s.VendorInvoice) -> str:
    return record_path("vendor-invoices", row.legal_entity, row.invoice_id)


@_template("pending_approval_vendor", "AP Invoices", "AP", party="vendor")
def pending_approval_vendor(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    vi = s.VendorInvoice
    rows = _vendor_invoices(
        ctx,
        vi.legal_entity == p.legal_entity,
        vi.vendor_account == p.account,
        vi.status == "pending_approval",
    )
    if not rows:
        return Answer(
            text=f"There are no vendor invoices pending approval for {p.label} in "
            f"{p.legal_entity}.",
            facts=[_none("invoices"), _count("invoices", 0)],
            refs=[p.path],
        )
    total = _sum(r.amount for r in rows)
    lines = [_vi_line(r) + (f", approver {r.approver}" if r.approver else "") for r in rows]
    return Answer(
        text=f"{len(rows)} invoice(s) from {p.label} in {p.legal_entity} are pending approval, "
        f"{money(total, p.currency)} in total: {_listing(lines, len(rows))}.",
        facts=[
            _count("invoices", len(rows)),
            _amount("total", total),
            _top("invoices", [r.invoice_id for r in rows], ordered=False),
        ],
        refs=[p.path, *(_vi_path(r) for r in rows[:LIST_LIMIT])],
        records=len(rows),
    )


@_template("invoices_by_status_entity", "AP Invoices", "AP")
def invoices_by_status_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, status = params.get("legal_entity"), params["status"]
    vi = s.VendorInvoice
    rows = _vendor_invoices(ctx, vi.status == status, *_le_filter(vi, le))
    label = status.replace("_", " ")
    if not rows:
        return Answer(
            text=f"There are no {label} vendor invoices {_where(le)}.",
            facts=[_none("invoices"), _count("invoices", 0)],
        )
    facts = [_count("invoices", len(rows))]
    text = f"There are {len(rows)} {label} vendor invoice(s) {_where(le)}"
    currencies = {r.currency for r in rows}
    if len(currencies) == 1:
        total = _sum(r.amount for r in rows)
        facts.append(_amount("total", total))
        text += f" worth {money(total, currencies.pop())}"
    else:
        by_cur: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
        for r in rows:
            by_cur[r.currency] += r.amount
        text += " worth " + ", ".join(money(v, c) for c, v in sorted(by_cur.items()))
    lines = [_vi_line(r) for r in rows]
    return Answer(
        text=text + f": {_listing(lines, len(rows))}.",
        facts=facts,
        refs=[_vi_path(r) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


def _open_ap_due(ctx: OracleContext, le: str, start: dt.date, end: dt.date):
    rows = [
        row
        for row in ledger_open_items(ctx, "vendor", le)
        if row.txn_type == "invoice"
        and row.open_amount_cur > 0
        and row.due_date
        and start <= row.due_date <= end
    ]
    rows.sort(key=lambda row: (row.due_date, row.voucher))
    return rows


@_template("ap_due_in_window", "AP Invoices", "AP")
def ap_due_in_window(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, start, end = params["legal_entity"], _d(params["start"]), _d(params["end"])
    rows = _open_ap_due(ctx, le, start, end)
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return Answer(
            text=f"No open vendor invoices in {le} fall due {window}.",
            facts=[_none("invoices"), _count("invoices", 0)],
        )
    currency = ctx.currency(le)
    total = _sum(r.open_amount_acct for r in rows)
    lines = [
        f"{r.document_number} ({r.vendor_account}) due {long_date(r.due_date)}, open "
        f"{money(r.open_amount_cur, r.currency)}"
        for r in rows
    ]
    return Answer(
        text=f"{len(rows)} open vendor invoice(s) in {le} fall due {window}, "
        f"{money(total, currency)} in accounting currency: {_listing(lines, len(rows))}.",
        facts=[_count("invoices", len(rows)), _amount("total_due", total)],
        refs=[_txn_path("vendor", r) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("ap_posted_on_date", "AP Invoices", "AP")
def ap_posted_on_date(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, day = params["legal_entity"], _d(params["date"])
    t = s.VendorTransaction
    rows = list(
        ctx.session.scalars(
            select(t)
            .where(
                t.legal_entity == le, t.posted.is_(True), t.txn_type == "invoice", t.txn_date == day
            )
            .order_by(t.voucher)
        )
    )
    if not rows:
        return Answer(
            text=f"No vendor invoices were posted in {le} on {long_date(day)}.",
            facts=[_none("invoices"), _count("invoices", 0)],
        )
    currency = ctx.currency(le)
    total = _sum(r.amount_acct for r in rows)
    lines = [
        f"{r.document_number} ({r.vendor_account}) {money(r.amount_cur, r.currency)}" for r in rows
    ]
    return Answer(
        text=f"{len(rows)} vendor invoice(s) were posted in {le} on {long_date(day)}, "
        f"{money(total, currency)} in accounting currency: {_listing(lines, len(rows))}.",
        facts=[_count("invoices", len(rows)), _amount("total", total)],
        refs=[_txn_path("vendor", r) for r in rows[:LIST_LIMIT]],
        records=len(rows),
    )


@_template("latest_invoice_match_vendor", "AP Invoices", "AP", party="vendor")
def latest_invoice_match_vendor(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    vi = s.VendorInvoice
    rows = _vendor_invoices(ctx, vi.legal_entity == p.legal_entity, vi.vendor_account == p.account)
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no vendor invoices.",
            facts=[_none("invoices")],
            refs=[p.path],
        )
    latest = max(rows, key=lambda r: (r.invoice_date, r.invoice_id))
    reason = f" ({latest.match_failure_reason})" if latest.match_failure_reason else ""
    status = latest.match_status.replace("_", " ")
    return Answer(
        text=f"The latest invoice of {p.label} in {p.legal_entity} is {_vi_line(latest)}; its "
        f"three-way match status is {status}{reason}.",
        facts=[
            _fact("id", "invoice", latest.invoice_id),
            _fact("text", "match_status", status),
        ],
        refs=[p.path, _vi_path(latest)],
        records=1,
    )


# ---- AP Payments ---------------------------------------------------------------------------------


@_template("payment_accounts_methods", "AP Payments", "AP")
def payment_accounts_methods(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, codes = params["legal_entity"], params["codes"]
    m = s.MethodOfPayment
    rows = {
        r.code: r
        for r in ctx.session.scalars(
            select(m).where(m.legal_entity == le, m.party_type == "vendor", m.code.in_(codes))
        )
    }
    lines, facts = [], []
    for code in codes:
        row = rows.get(code)
        if row is None:
            lines.append(f"{code}: no such vendor method of payment in {le}")
            facts.append(_none(f"method_{code}"))
        else:
            lines.append(
                f"{code} ({row.description}) posts to payment account {row.payment_account}"
            )
            facts.append(_fact("id", f"payment_account_{code}", row.payment_account))
    return Answer(
        text=f"Vendor methods of payment in {le}: " + "; ".join(lines) + ".",
        facts=facts,
        records=len(rows),
    )


@_template("proposal_vendors_on_date", "AP Payments", "AP")
def proposal_vendors_on_date(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, day = params["legal_entity"], _d(params["date"])
    j, line = s.PaymentJournal, s.PaymentJournalLine
    journals = list(
        ctx.session.scalars(
            select(j)
            .where(j.legal_entity == le, j.source == "proposal", j.created_date == day)
            .order_by(j.journal_id)
        )
    )
    if not journals:
        return Answer(
            text=f"No payment proposal was created in {le} on {long_date(day)}, so no vendors are "
            "in one.",
            facts=[_none("vendors")],
        )
    ids = [x.journal_id for x in journals]
    vendors = sorted(
        set(
            ctx.session.scalars(
                select(line.vendor_account).where(line.legal_entity == le, line.journal_id.in_(ids))
            )
        )
    )
    names = _names(ctx, "vendor", le, vendors)
    who = ", ".join(f"{names.get(a, a)} ({a})" for a in vendors)
    return Answer(
        text=f"Payment proposal journal(s) {', '.join(ids)} created in {le} on {long_date(day)} "
        f"include {len(vendors)} vendor(s): {who}.",
        facts=[_count("vendors", len(vendors)), _top("vendors", vendors, ordered=False)],
        refs=[record_path("payment-journals", le, i) for i in ids],
        records=len(vendors),
    )


@_template("ap_obligation_next_days", "AP Payments", "AP")
def ap_obligation_next_days(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    end = ctx.today + dt.timedelta(days=days)
    rows = _open_ap_due(ctx, le, ctx.today, end)
    window = f"{long_date(ctx.today)} to {long_date(end)}"
    currency = ctx.currency(le)
    if not rows:
        return Answer(
            text=f"There is no AP payment obligation in {le} falling due {window}.",
            facts=[_none("invoices"), _amount("total_due", 0)],
        )
    total = _sum(r.open_amount_acct for r in rows)
    return Answer(
        text=f"The AP payment obligation in {le} falling due {window} is {money(total, currency)} "
        f"(accounting currency) across {len(rows)} open vendor invoice(s) of "
        f"{len({r.vendor_account for r in rows})} vendor(s).",
        facts=[_amount("total_due", total), _count("invoices", len(rows))],
        refs=[_txn_path("vendor", r) for r in rows[:LIST_LIMIT]],
        records=1,
    )


@_template("vendor_payments_range", "AP Payments", "AP", party="vendor")
def vendor_payments_range(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    start, end = _d(params["start"]), _d(params["end"])
    t = s.VendorTransaction
    rows = _vendor_txns(ctx, p, t.txn_type == "payment", t.txn_date >= start, t.txn_date <= end)
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return Answer(
            text=f"No payments were made to {p.label} in {p.legal_entity} {window}.",
            facts=[_none("payments"), _count("payments", 0)],
            refs=[p.path],
        )
    total = -_sum(r.amount_cur for r in rows)
    lines = [_txn_line(r, p.currency) for r in rows]
    return Answer(
        text=f"{len(rows)} payment(s) totalling {money(total, p.currency)} were made to {p.label} "
        f"in {p.legal_entity} {window}: {_listing(lines, len(rows))}.",
        facts=[_count("payments", len(rows)), _amount("total_paid", total)],
        refs=[p.path, *(_txn_path("vendor", r) for r in rows[:LIST_LIMIT])],
        records=len(rows),
    )


@_template("payment_journal_total", "AP Payments", "AP")
def payment_journal_total(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, journal_id = params["legal_entity"], params["journal_id"]
    j = s.PaymentJournal
    row = ctx.session.scalars(
        select(j).where(j.legal_entity == le, j.journal_id == journal_id)
    ).first()
    if row is None:
        return Answer(
            text=f"There is no payment journal {journal_id} in {le}.",
            facts=[_none("journal")],
        )
    return Answer(
        text=f"Payment journal {journal_id} in {le} ({row.description}; {row.source}, status "
        f"{row.status}, created {long_date(row.created_date)}) totals "
        f"{money(row.total_amount, row.currency)} over {row.line_count} line(s).",
        facts=[_amount("total", row.total_amount), _count("lines", row.line_count)],
        refs=[record_path("payment-journals", le, journal_id)],
        records=1,
    )


# ---- Other (AP documents) ------------------------------------------------------------------------


def _vendor_doc_answer(ctx: OracleContext, params: dict[str, Any], txn_type: str) -> Answer:
    p = party(ctx, "vendor", params)
    t = s.VendorTransaction
    conditions = [t.txn_type == txn_type]
    window = ""
    if params.get("start"):
        start, end = _d(params["start"]), _d(params["end"])
        conditions += [t.txn_date >= start, t.txn_date <= end]
        window = f" between {long_date(start)} and {long_date(end)}"
    rows = _vendor_txns(ctx, p, *conditions)
    label = txn_type.replace("_", " ")
    if not rows:
        return Answer(
            text=f"There are no {label}s for {p.label} in {p.legal_entity}{window}.",
            facts=[_none(f"{txn_type}s"), _count(f"{txn_type}s", 0)],
            refs=[p.path],
        )
    total = -_sum(r.amount_cur for r in rows)
    lines = [_txn_line(r, p.currency) for r in rows]
    return Answer(
        text=f"{len(rows)} {label}(s) for {p.label} in {p.legal_entity}{window}, "
        f"{money(total, p.currency)} in total: {_listing(lines, len(rows))}.",
        facts=[_count(f"{txn_type}s", len(rows)), _amount("total", total)],
        refs=[p.path, *(_txn_path("vendor", r) for r in rows[:LIST_LIMIT])],
        records=len(rows),
    )


@_template("vendor_credit_notes", "Other", "AP", party="vendor")
def vendor_credit_notes(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, params, "credit_note")


@_template("vendor_debit_notes", "Other", "AP", party="vendor")
def vendor_debit_notes(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, params, "debit_note")


@_template("vendor_spend_fiscal_year", "Other", "AP", party="vendor")
def vendor_spend_fiscal_year(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    start, _ = ctx.fiscal_year(p.legal_entity)
    t = s.VendorTransaction
    rows = _vendor_txns(ctx, p, t.txn_type == "invoice", t.txn_date >= start)
    window = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.today)})"
    if not rows:
        return Answer(
            text=f"No invoices from {p.label} were posted in {p.legal_entity} {window}: spend is "
            f"{money(0, p.currency)}.",
            facts=[_none("invoices"), _amount("spend", 0)],
            refs=[p.path],
        )
    total = _sum(r.amount_cur for r in rows)
    return Answer(
        text=f"Spend with {p.label} in {p.legal_entity} {window} is {money(total, p.currency)} "
        f"over {len(rows)} posted invoice(s).",
        facts=[_amount("spend", total), _count("invoices", len(rows))],
        refs=[p.path],
        records=1,
    )


# ---- AP Purchase Orders --------------------------------------------------------------------------


@_template("open_pos_vendor", "AP Purchase Orders", "AP", party="vendor")
def open_pos_vendor(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    po = s.PurchaseOrder
    rows = list(
        ctx.session.scalars(
            select(po)
            .where(
                po.legal_entity == p.legal_entity,
                po.vendor_account == p.account,
                po.status == "open",
                po.order_date <= ctx.today,
            )
            .order_by(po.order_date, po.po_number)
        )
    )
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open purchase orders.",
            facts=[_none("purchase_orders"), _count("purchase_orders", 0)],
            refs=[p.path],
        )
    lines = [
        f"{r.po_number} dated {long_date(r.order_date)}, {money(r.total_amount, r.currency)}, "
        f"buyer {r.buyer}"
        for r in rows
    ]
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} open purchase order(s): "
        f"{_listing(lines, len(rows))}.",
        facts=[
            _count("purchase_orders", len(rows)),
            _top("purchase_orders", [r.po_number for r in rows], ordered=False),
        ],
        refs=[p.path]
        + [record_path("purchase-orders", p.legal_entity, r.po_number) for r in rows[:10]],
        records=len(rows),
    )
