"""AR/AP ledger arithmetic shared by the tools: open amounts as of a date and aging buckets.

A transaction's open amount as of a past date is its open amount today plus what settlements after
that date took off it: for a debit (invoice) the settled amount (which includes any cash discount
taken), for a credit (payment, credit note) the settled amount less that discount. On or after the
ERP's today it is simply ``open_amount_cur``. All of it is SQL expressions, so single-party queries
use the party indexes and never scan the ledger, and aggregates over many parties (aging, worklists)
group, sum and rank in the database: only the rows a tool returns reach Python.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Subquery, Table, and_, case, func, literal, or_, select
from sqlmodel import SQLModel

from synthetic_erp import _schema as s
from synthetic_erp._summaries import open_on_day


@dataclass(frozen=True)
class Ledger:
    party_type: str
    txn_model: type[SQLModel]
    txn: Table
    settlement: Table
    party: Table
    group: Table
    account_column: str
    txn_set: str
    settlement_set: str
    party_set: str
    group_set: str

    @property
    def account(self) -> Any:
        return self.txn.c[self.account_column]


LEDGERS: dict[str, Ledger] = {
    "customer": Ledger(
        "customer",
        s.CustomerTransaction,
        s.CustomerTransaction.__table__,
        s.CustomerSettlement.__table__,
        s.Customer.__table__,
        s.CustomerGroup.__table__,
        "customer_account",
        "customer-transactions",
        "customer-settlements",
        "customers",
        "customer-groups",
    ),
    "vendor": Ledger(
        "vendor",
        s.VendorTransaction,
        s.VendorTransaction.__table__,
        s.VendorSettlement.__table__,
        s.Vendor.__table__,
        s.VendorGroup.__table__,
        "vendor_account",
        "vendor-transactions",
        "vendor-settlements",
        "vendors",
        "vendor-groups",
    ),
}


def open_amounts(
    ledger: Ledger, as_of: dt.date, today: dt.date
) -> tuple[ColumnElement, ColumnElement, ColumnElement]:
    """``(open_cur, open_acct, where)`` expressions for the open amount of each transaction on
    ``as_of``.

    ``where`` keeps posted transactions dated on or before ``as_of`` that were still open then."""
    t = ledger.txn
    if as_of >= today:
        # closed_date is set only once a transaction is fully settled: "IS NULL" lets the
        # (legal_entity, closed_date) index find the open items without scanning the ledger.
        where = and_(
            t.c.posted.is_(True),
            t.c.txn_date <= as_of,
            t.c.closed_date.is_(None),
            t.c.open_amount_cur != 0,
        )
        return t.c.open_amount_cur, t.c.open_amount_acct, where
    open_cur, open_acct = open_on_day(t, ledger.settlement, as_of)
    where = and_(
        t.c.posted.is_(True),
        t.c.txn_date <= as_of,
        or_(t.c.closed_date.is_(None), t.c.closed_date > as_of),
    )
    return open_cur, open_acct, where


@dataclass(frozen=True)
class Bucket:
    label: str
    from_days: int | None
    """Smallest days overdue in the bucket (None: not yet due)."""
    to_days: int | None
    """Largest days overdue in the bucket (None: no upper bound)."""


def make_buckets(edges: list[int]) -> list[Bucket]:
    """``[30, 60, 90]`` -> current, 1-30, 31-60, 61-90, over 90."""
    buckets = [Bucket("current", None, 0)]
    low = 1
    for edge in edges:
        buckets.append(Bucket(f"{low}-{edge}", low, edge))
        low = edge + 1
    buckets.append(Bucket(f"over {edges[-1]}", edges[-1] + 1, None))
    return buckets


def aging_date(ledger: Ledger, basis: str) -> ColumnElement:
    """The date aging counts from: due date (falling back to the transaction date) or txn date."""
    t = ledger.txn
    if basis == "txn_date":
        return t.c.txn_date
    return func.coalesce(t.c.due_date, t.c.txn_date)


def bucket_index(ledger: Ledger, basis: str, as_of: dt.date, edges: list[int]) -> ColumnElement:
    """SQL CASE giving the bucket number (0 = current) of each transaction on ``as_of``."""
    date = aging_date(ledger, basis)
    whens = [(date >= as_of, literal(0))]
    for i, edge in enumerate(edges, start=1):
        whens.append((date >= as_of - dt.timedelta(days=edge), literal(i)))
    return case(*whens, else_=literal(len(edges) + 1))


def days_between(later: dt.date, earlier: dt.date | None) -> int | None:
    return None if earlier is None else (later - earlier).days


def open_item_rows(
    ledger: Ledger,
    as_of: dt.date,
    today: dt.date,
    *,
    basis: str = "due_date",
    where: list[Any] | tuple = (),
    columns: list[Any] | tuple = (),
    with_party: bool = False,
) -> Subquery:
    """One row per transaction open on ``as_of`` matching ``where``: ``legal_entity``,
    ``account``, ``currency``, ``aging_date`` (see :func:`aging_date`), ``open_cur``,
    ``open_acct`` and any extra ``columns`` (``with_party`` joins the party table for them).

    On a past date the open amounts are correlated subqueries over the settlements; the
    subquery is then fenced (``OFFSET 0``, which SQLite renders ``LIMIT -1 OFFSET 0``) so that
    neither database inlines them into every aggregate that reads them (a conditional sum per
    bucket would otherwise run them once per bucket). Today's are plain columns, so the query
    stays flat and reads the open-items index in its order."""
    t, p = ledger.txn, ledger.party
    open_cur, open_acct, base = open_amounts(ledger, as_of, today)
    stmt = select(
        t.c.legal_entity,
        ledger.account.label("account"),
        t.c.currency,
        aging_date(ledger, basis).label("aging_date"),
        open_cur.label("open_cur"),
        open_acct.label("open_acct"),
        *columns,
    ).where(base, *where)
    if with_party:
        stmt = stmt.join_from(
            t, p, and_(p.c.legal_entity == t.c.legal_entity, p.c.account == ledger.account)
        )
    if as_of < today:
        stmt = stmt.offset(0)
    return stmt.subquery("open_items")


def bucket_bounds(as_of: dt.date, edges: list[int]) -> list[tuple[dt.date | None, dt.date | None]]:
    """Per bucket of :func:`make_buckets`, ``(first aging date, day after the last)`` on
    ``as_of`` (None: unbounded), the same buckets as :func:`bucket_index`."""
    starts = [as_of - dt.timedelta(days=edge) for edge in edges]
    bounds: list[tuple[dt.date | None, dt.date | None]] = [(as_of, None)]
    ends = [as_of, *starts]
    for start, end in zip(starts, ends, strict=False):
        bounds.append((start, end))
    bounds.append((None, starts[-1]))
    return bounds


def in_bucket(date: ColumnElement, bounds: tuple[dt.date | None, dt.date | None]) -> ColumnElement:
    """SQL: ``date`` falls in the bucket ``bounds`` (from :func:`bucket_bounds`)."""
    low, high = bounds
    terms = []
    if low is not None:
        terms.append(date >= low)
    if high is not None:
        terms.append(date < high)
    return and_(*terms)


def bucket_of(date: dt.date, bounds: list[tuple[dt.date | None, dt.date | None]]) -> int:
    """The bucket number of an aging date (Python twin of :func:`in_bucket`)."""
    for index, (low, high) in enumerate(bounds):
        if (low is None or date >= low) and (high is None or date < high):
            return index
    raise ValueError(f"no bucket holds {date}")
