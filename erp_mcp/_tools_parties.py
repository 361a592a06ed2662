"""Tools about the ERP itself, parties and reference data."""

from __future__ import annotations

import datetime as dt
from functools import cache, lru_cache
from typing import Literal

from fastmcp.exceptions import ToolError
from pydantic import Field
from sqlalchemy import Connection, Select, and_, bindparam, case, func, select

from erp_mcp._common import first_where, to_record
from erp_mcp._ledger import LEDGERS, open_amounts
from erp_mcp._records import StrictModel, money, record_model
from erp_mcp._runtime import ErpRuntime
from erp_mcp._tooling import erp_tool
from synthetic_erp import _schema as s
from synthetic_erp._catalog import ENTITY_SETS

# --------------------------------------------------------------------------------------------------
# erp_info
# --------------------------------------------------------------------------------------------------


class ErpInfoArgs(StrictModel):
    pass


class LegalEntityInfo(StrictModel):
    code: str
    """Company code used as ``legal_entity`` in every other tool, e.g. USMF."""
    name: str
    accounting_currency: str
    """Currency of all ``*_acct`` amounts in this legal entity."""
    country: str
    fiscal_year_start_month: int
    """1 = fiscal year runs January..December; 4 = April..March."""
    customer_count: int
    vendor_count: int


class CurrencyInfo(StrictModel):
    code: str
    name: str


class ErpInfo(StrictModel):
    """Facts about the ERP snapshot the server is serving."""

    today: dt.date
    """The ERP's frozen "today": the default as-of date of every tool, and what "today", "this
    week", "last month" or "the next 7 days" in a question are counted from."""
    default_legal_entity: str | None
    """The legal entity a question means when it names none: the one with the most customers."""
    snapshot_hash: str | None
    """Hash of the snapshot: a dataset built on another snapshot does not match it."""
    source: str | None
    """generated | fno-import"""
    legal_entities: list[LegalEntityInfo]
    currencies: list[CurrencyInfo]
    entity_sets: list[str]
    """Kinds of citable records (the generic tools query them; record URLs use them)."""
    record_url_pattern: str
    """How record links look: {base}/erp/{legal_entity}/{entity_set}/{key}."""


@erp_tool("finance", ErpInfoArgs, lookup=True)
def erp_info(rt: ErpRuntime, args: ErpInfoArgs) -> ErpInfo:
    """ERP facts: today (the default as-of date), legal entities, currencies, snapshot. Call it
    first."""
    counts = rt.party_counts
    codes = list(rt.legal_entities)
    default = min(codes, key=lambda c: (-counts.get((c, "customer"), 0), c)) if codes else None
    return ErpInfo(
        today=rt.today,
        default_legal_entity=default,
        snapshot_hash=rt.meta.get("snapshot_hash"),
        source=rt.meta.get("source"),
        legal_entities=[
            LegalEntityInfo(
                code=le.code,
                name=le.name,
                accounting_currency=le.accounting_currency,
                country=le.country,
                fiscal_year_start_month=le.fiscal_year_start_month,
                customer_count=counts.get((le.code, "customer"), 0),
                vendor_count=counts.get((le.code, "vendor"), 0),
            )
            for le in rt.legal_entities.values()
        ],
        currencies=[CurrencyInfo(code=c, name=n) for c, n in rt.currencies.items()],
        entity_sets=[es.name for es in ENTITY_SETS],
        record_url_pattern=rt.url_pattern,
    )


# --------------------------------------------------------------------------------------------------
# search_parties
# --------------------------------------------------------------------------------------------------


class SearchPartiesArgs(StrictModel):
    query: str = Field(min_length=1, max_length=200)
    """Name, partial or misspelled name, or account id."""
    party_type: Literal["customer", "vendor", "any"] = "any"
    """Search customers, vendors or both."""
    legal_entity: str | None = None
    """Company code; omit for all."""
    limit: int = Field(10, ge=1, le=50)
    """Most candidates to return."""
    min_score: float = Field(60.0, ge=0, le=100)
    """Drop candidates scoring below this (0-100)."""


class PartyMatch(StrictModel):
    party_type: Literal["customer", "vendor"]
    legal_entity: str
    account: str
    name: str
    score: float
    """Match score 0-100: 100 exact account or name, 99 same letters (spacing/punctuation differ),
    85-95 partial name, lower fuzzy."""
    match: str
    """account | account_number (same number, other zero padding) | exact_name | same_letters |
    partial_name | fuzzy_name | similar_account"""
    url: str | None


class PartyMatches(StrictModel):
    query: str
    candidates: list[PartyMatch]
    """Best first. Several candidates with the same name are the same name in different legal
    entities (or different parties): name the legal entity in the answer."""
    ambiguous: bool
    """True when more than one candidate scores within 3 points of the best."""


@erp_tool("finance", SearchPartiesArgs, lookup=True)
def search_parties(rt: ErpRuntime, args: SearchPartiesArgs) -> PartyMatches:
    """Find customers and vendors by (partial, misspelled) name or account id. Use it first when a
    question names a party."""
    le = rt.check_legal_entity(args.legal_entity)
    found = rt.parties.search(
        args.query,
        party_type=args.party_type,
        legal_entity=le,
        limit=args.limit,
        min_score=args.min_score,
    )
    candidates = [
        PartyMatch(
            party_type=entry.party_type,
            legal_entity=entry.legal_entity,
            account=entry.account,
            name=entry.name,
            score=score,
            match=kind,
            url=rt.url(LEDGERS[entry.party_type].party_set, entry.legal_entity, entry.account),
        )
        for entry, score, kind in found
    ]
    best = candidates[0].score if candidates else 0
    close = [c for c in candidates if c.score >= best - 3]
    return PartyMatches(query=args.query, candidates=candidates, ambiguous=len(close) > 1)


# --------------------------------------------------------------------------------------------------
# get_customer / get_vendor
# --------------------------------------------------------------------------------------------------


class GetPartyArgs(StrictModel):
    account: str = Field(min_length=1, max_length=100)
    """Account id (or exact name)."""
    legal_entity: str | None = None
    """Company code, when the account is in several."""


class PartyBalance(StrictModel):
    as_of: dt.date
    balance_acct: float
    """Open balance in the accounting currency (positive: the party owes us / we owe the vendor)."""
    balance_by_currency: dict[str, float]
    """Open balance per transaction currency."""
    overdue_acct: float
    """Part of the balance past its due date as of ``as_of``."""
    open_transaction_count: int
    oldest_open_due_date: dt.date | None


CustomerRecord = record_model(s.Customer)
VendorRecord = record_model(s.Vendor)
CustomerGroupRecord = record_model(s.CustomerGroup)
VendorGroupRecord = record_model(s.VendorGroup)
PaymentTermsRecord = record_model(s.PaymentTerms)
MethodOfPaymentRecord = record_model(s.MethodOfPayment)
CollectionsPoolRecord = record_model(s.CollectionsPool)
CollectionsAgentRecord = record_model(s.CollectionsAgent)
CashDiscountRecord = record_model(s.CashDiscount)


class CustomerDetails(StrictModel):
    """A customer with everything its codes refer to, and its balance today."""

    customer: CustomerRecord
    group: CustomerGroupRecord | None
    payment_terms: PaymentTermsRecord | None
    cash_discount: CashDiscountRecord | None
    """Cash-discount code of the payment terms, if any."""
    method_of_payment: MethodOfPaymentRecord | None
    collections_pool: CollectionsPoolRecord | None
    collections_agent: CollectionsAgentRecord | None
    balance: PartyBalance
    credit_available_acct: float
    """credit_limit minus balance_acct (negative: over the limit)."""
    open_dispute_count: int
    open_collection_case_count: int


class VendorDetails(StrictModel):
    """A vendor with everything its codes refer to, and its balance today."""

    vendor: VendorRecord
    group: VendorGroupRecord | None
    payment_terms: PaymentTermsRecord | None
    cash_discount: CashDiscountRecord | None
    method_of_payment: MethodOfPaymentRecord | None
    balance: PartyBalance


def _maybe(rt: ErpRuntime, conn: Connection, table, **where):
    """The record of a setup table (served from the in-memory reference cache), or None."""
    if any(v is None for v in where.values()):
        return None
    row = rt.reference.get((table.__tablename__, *where.values()))
    return to_record(rt, table, row) if row is not None else None


def party_balance(
    rt: ErpRuntime, conn: Connection, party_type: str, le: str, account: str, as_of: dt.date
) -> PartyBalance:
    statement = _balance_statement(party_type, as_of, rt.today)
    rows = conn.execute(statement, {"le": le, "account": account}).all()
    oldest = [d for d in (_as_date(row[5]) for row in rows) if d is not None]
    return PartyBalance(
        as_of=as_of,
        balance_acct=money(sum(float(row[3] or 0) for row in rows)),
        balance_by_currency={row[0]: money(row[2]) for row in rows},
        overdue_acct=money(sum(float(row[4] or 0) for row in rows)),
        open_transaction_count=sum(int(row[1]) for row in rows),
        oldest_open_due_date=min(oldest) if oldest else None,
    )


@lru_cache(maxsize=16)
def _balance_statement(party_type: str, as_of: dt.date, today: dt.date) -> Select:
    """Per currency: open items, open amounts, overdue amount and oldest due date of the party
    given as the parameters ``le`` and ``account``."""
    ledger = LEDGERS[party_type]
    t = ledger.txn
    open_cur, open_acct, where = open_amounts(ledger, as_of, today)
    party_where = and_(
        where, t.c.legal_entity == bindparam("le"), ledger.account == bindparam("account")
    )
    due = func.coalesce(t.c.due_date, t.c.txn_date)
    return (
        select(
            t.c.currency,
            func.count(),
            func.sum(open_cur),
            func.sum(open_acct),
            func.sum(case((due < as_of, open_acct), else_=0)),
            func.min(case((open_cur > 0, due))),
        )
        .where(party_where)
        .group_by(t.c.currency)
    )


def _open_count(table):
    t = table.__table__
    return (
        select(func.count())
        .where(
            t.c.legal_entity == bindparam("le"),
            t.c.customer_account == bindparam("account"),
            t.c.status == "open",
        )
        .scalar_subquery()
    )


@cache
def _open_counts_statement() -> Select:
    """A customer's open disputes and open collection cases (parameters ``le``, ``account``)."""
    return select(_open_count(s.CustomerDispute), _open_count(s.CollectionCase))


def _as_date(value) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _terms(rt: ErpRuntime, conn: Connection, le: str, terms_id: str | None):
    terms = _maybe(rt, conn, s.PaymentTerms, legal_entity=le, terms_id=terms_id)
    discount = None
    if terms is not None and terms.cash_discount_code:
        discount = _maybe(rt, conn, s.CashDiscount, legal_entity=le, code=terms.cash_discount_code)
    return terms, discount


@erp_tool("finance", GetPartyArgs, lookup=True)
def get_customer(rt: ErpRuntime, args: GetPartyArgs) -> CustomerDetails:
    """One customer's master data, credit limit, balance, overdue and available credit."""
    le, account = rt.resolve_party("customer", args.account, args.legal_entity)
    with rt.engine.connect() as conn:
        row = first_where(conn, s.Customer, legal_entity=le, account=account)
        customer = to_record(rt, s.Customer, row)
        terms, discount = _terms(rt, conn, le, customer.payment_terms)
        balance = party_balance(rt, conn, "customer", le, account, rt.today)
        counts = conn.execute(_open_counts_statement(), {"le": le, "account": account})
        disputes, cases = counts.one()
        return CustomerDetails(
            customer=customer,
            group=_maybe(rt, conn, s.CustomerGroup, legal_entity=le, group_id=customer.group_id),
            payment_terms=terms,
            cash_discount=discount,
            method_of_payment=_maybe(
                rt,
                conn,
                s.MethodOfPayment,
                legal_entity=le,
                party_type="customer",
                code=customer.method_of_payment,
            ),
            collections_pool=_maybe(
                rt, conn, s.CollectionsPool, legal_entity=le, pool_id=customer.collections_pool_id
            ),
            collections_agent=_maybe(
                rt,
                conn,
                s.CollectionsAgent,
                legal_entity=le,
                agent_id=customer.collections_agent_id,
            ),
            balance=balance,
            credit_available_acct=money(customer.credit_limit - balance.balance_acct),
            open_dispute_count=int(disputes or 0),
            open_collection_case_count=int(cases or 0),
        )


@erp_tool("finance", GetPartyArgs, lookup=True)
def get_vendor(rt: ErpRuntime, args: GetPartyArgs) -> VendorDetails:
    """One vendor's master data, payment hold, balance and overdue."""
    le, account = rt.resolve_party("vendor", args.account, args.legal_entity)
    with rt.engine.connect() as conn:
        row = first_where(conn, s.Vendor, legal_entity=le, account=account)
        vendor = to_record(rt, s.Vendor, row)
        terms, discount = _terms(rt, conn, le, vendor.payment_terms)
        return VendorDetails(
            vendor=vendor,
            group=_maybe(rt, conn, s.VendorGroup, legal_entity=le, group_id=vendor.group_id),
            payment_terms=terms,
            cash_discount=discount,
            method_of_payment=_maybe(
                rt,
                conn,
                s.MethodOfPayment,
                legal_entity=le,
                party_type="vendor",
                code=vendor.method_of_payment,
            ),
            balance=party_balance(rt, conn, "vendor", le, account, rt.today),
        )


# --------------------------------------------------------------------------------------------------
# list_reference_data
# --------------------------------------------------------------------------------------------------

ReferenceKind = Literal[
    "payment_terms",
    "methods_of_payment",
    "customer_groups",
    "vendor_groups",
    "collections_pools",
    "collections_agents",
    "cash_discounts",
    "currencies",
    "exchange_rates",
    "legal_entities",
]

_REFERENCE_TABLES = {
    "payment_terms": (s.PaymentTerms, ("legal_entity", "terms_id")),
    "methods_of_payment": (s.MethodOfPayment, ("legal_entity", "party_type", "code")),
    "customer_groups": (s.CustomerGroup, ("legal_entity", "group_id")),
    "vendor_groups": (s.VendorGroup, ("legal_entity", "group_id")),
    "collections_pools": (s.CollectionsPool, ("legal_entity", "pool_id")),
    "collections_agents": (s.CollectionsAgent, ("legal_entity", "agent_id")),
    "cash_discounts": (s.CashDiscount, ("legal_entity", "code")),
    "currencies": (s.Currency, ("code",)),
    "exchange_rates": (s.ExchangeRate, ("rate_date", "from_currency", "to_currency")),
    "legal_entities": (s.LegalEntity, ("code",)),
}


class ReferenceArgs(StrictModel):
    kind: ReferenceKind
    """Which reference table to list."""
    legal_entity: str | None = None
    """Company code; omit for all."""
    party_type: Literal["customer", "vendor"] | None = None
    """methods_of_payment only: customer or vendor methods."""
    from_currency: str | None = None
    """exchange_rates only."""
    to_currency: str | None = None
    """exchange_rates only."""
    date_from: dt.date | None = None
    """exchange_rates only: first rate date."""
    date_to: dt.date | None = None
    """exchange_rates only: last rate date."""
    limit: int = Field(200, ge=1, le=500)


class ReferenceData(StrictModel):
    kind: str
    items: list[dict]
    """Rows of the reference table, each with its ``url`` where the record is citable."""
    total_count: int
    truncated: bool = False
    """True when items were cut to stay within the result budget (about 100,000 characters):
    narrow the call (legal_entity, dates, currencies) for the rest."""


@erp_tool("finance", ReferenceArgs, lookup=True)
def list_reference_data(rt: ErpRuntime, args: ReferenceArgs) -> ReferenceData:
    """Setup data: terms, payment methods, groups, collections pools and agents, discount codes,
    currencies, exchange rates, legal entities."""
    table, order = _REFERENCE_TABLES[args.kind]
    t = table.__table__
    clauses = []
    le = rt.check_legal_entity(args.legal_entity)
    if le and "legal_entity" in t.c:
        clauses.append(t.c.legal_entity == le)
    if args.party_type and "party_type" in t.c:
        clauses.append(t.c.party_type == args.party_type)
    if args.kind == "exchange_rates":
        if args.from_currency:
            clauses.append(t.c.from_currency == rt.check_currency(args.from_currency))
        if args.to_currency:
            clauses.append(t.c.to_currency == rt.check_currency(args.to_currency))
        if args.date_from:
            clauses.append(t.c.rate_date >= args.date_from)
        if args.date_to:
            clauses.append(t.c.rate_date <= args.date_to)
    elif any((args.from_currency, args.to_currency, args.date_from, args.date_to)):
        raise ToolError("from_currency, to_currency, date_from and date_to apply to exchange_rates")
    with rt.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(t).where(*clauses)).scalar()
        rows = conn.execute(
            select(t).where(*clauses).order_by(*(t.c[c] for c in order)).limit(args.limit)
        ).all()
    items = [to_record(rt, table, row).model_dump(mode="json") for row in rows]
    return ReferenceData(kind=args.kind, items=items, total_count=int(total or 0))
