"""Summary tables: per-party, per-period and per-date sums of the ledgers, for the MCP aggregates.

They are derived data, a pure function of the snapshot: written by ``generate_erp`` and
``import_fno`` after the indexes, added to an ERP built by older code with
``python -m synthetic_erp summarize --db URL`` (:func:`summarize`), and left out of the snapshot
hash (which covers the raw tables only, so an ERP's hash is the same with or without them). The
oracle never reads them. Every amount is a sum of cents (``BIGINT``), exact on SQLite and
PostgreSQL alike: a tool divides by 100 at the end, so it gets what PostgreSQL's exact ``numeric``
sums give. ``n`` counts the ledger lines summed.

- ``summary_ledger_type``: per party type, legal entity, txn type, posted flag and currency.
- ``summary_ledger_party``: per party type, legal entity, txn type and party.
- ``summary_party_period`` / ``summary_period_total``: per party (and per legal entity) and
  period, the posted amounts of a measure: ``invoiced`` (invoices), ``paid`` (minus payments) and,
  for vendors, ``spend`` (invoices plus credit and debit notes, with ``invoiced`` and ``credits``
  apart and ``n`` the invoices). The periods (``summary_period``) are the calendar years and each
  legal entity's fiscal years that the ledgers span.
- ``summary_open_items``: today's open items (posted, not closed, open amount not zero) per party
  type, legal entity, party group, currency, aging basis and aging date. The number of distinct
  dates does not grow with the parties, so neither does the table much.
- ``summary_open_party``: today's open items per party (customers and vendors): how many, the
  balance and the part past due today on either aging basis; get_aging picks its page of parties
  from it.
- ``summary_open_customer``: the same per customer with its collections agent and pool, split by
  the sign of the open amount (the worklist's overdue counts positive items only).

``summary_meta`` holds the version, the ERP's today they were built for and the latest
transaction date among the open items: open-item sums answer exactly only on or after both.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Date,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    and_,
    case,
    cast,
    func,
    insert,
    inspect,
    literal,
    select,
)

from synthetic_erp import _schema as s
from synthetic_erp._db import ErpDatabaseError, normalize_url, open_engine, redact_url, sqlite_path

SUMMARY_VERSION = "2"
METADATA = MetaData()

INVOICE_TYPES = {"customer": ("sales_invoice", "free_text_invoice"), "vendor": ("invoice",)}
"""The txn types a party is invoiced with (rank_parties' ``invoiced``)."""
SPEND_TYPES = ("invoice", "credit_note", "debit_note")
"""Vendor spend: posted invoices minus credit and debit notes (get_vendor_spend)."""


def _cents() -> list[Column]:
    return [Column("n", Integer, nullable=False)] + [
        Column(name, BigInteger, nullable=False)
        for name in ("amount_cur", "amount_acct", "open_amount_cur", "open_amount_acct")
    ]


SUMMARY_META = Table(
    "summary_meta",
    METADATA,
    Column("key", String, primary_key=True),
    Column("value", String, nullable=False),
)
LEDGER_TYPE = Table(
    "summary_ledger_type",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("txn_type", String, nullable=False),
    Column("posted", Boolean, nullable=False),
    Column("currency", String, nullable=False),
    *_cents(),
    Index(
        "ux_sumtype", "party_type", "legal_entity", "txn_type", "posted", "currency", unique=True
    ),
)
LEDGER_PARTY = Table(
    "summary_ledger_party",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("txn_type", String, nullable=False),
    Column("account", String, nullable=False),
    *_cents(),
    Index("ux_sumparty", "party_type", "legal_entity", "txn_type", "account", unique=True),
    Index(
        "ix_sumparty_acct", "party_type", "legal_entity", "txn_type", "amount_acct", "account", "n"
    ),
)
PERIOD = Table(
    "summary_period",
    METADATA,
    Column("legal_entity", String, nullable=False),
    Column("kind", String, nullable=False),  # calendar | fiscal
    Column("period_start", Date, nullable=False),
    Column("period_end", Date, nullable=False),
    Index("ux_sumperiod", "legal_entity", "period_start", "period_end", "kind", unique=True),
)


def _period_key() -> list[Column]:
    return [
        Column("party_type", String, nullable=False),
        Column("legal_entity", String, nullable=False),
        Column("measure", String, nullable=False),  # invoiced | paid | spend
        Column("period_start", Date, nullable=False),
        Column("period_end", Date, nullable=False),
    ]


_PERIOD_KEY = [c.name for c in _period_key()]
PARTY_PERIOD = Table(
    "summary_party_period",
    METADATA,
    *_period_key(),
    Column("account", String, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("n", Integer, nullable=False),
    Column("invoiced", BigInteger),
    Column("credits", BigInteger),
    Index("ix_sumpp_amount", *_PERIOD_KEY, "amount", "account"),
)
PERIOD_TOTAL = Table(
    "summary_period_total",
    METADATA,
    *_period_key(),
    Column("amount", BigInteger, nullable=False),
    Column("n", Integer, nullable=False),
    Column("parties", Integer, nullable=False),
    Index("ux_sumpt", *_PERIOD_KEY, unique=True),
)
OPEN_ITEMS = Table(
    "summary_open_items",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("basis", String, nullable=False),  # due_date | txn_date
    Column("legal_entity", String, nullable=False),
    Column("group_id", String),  # NULL: the party is missing from its table
    Column("currency", String, nullable=False),
    Column("aging_date", Date, nullable=False),
    Column("n", Integer, nullable=False),
    Column("open_cur", BigInteger, nullable=False),
    Column("open_acct", BigInteger, nullable=False),
    Index(
        "ix_sumopen",
        "party_type",
        "basis",
        "legal_entity",
        "group_id",
        "currency",
        "aging_date",
        "n",
        "open_cur",
        "open_acct",
    ),
)
OPEN_CUSTOMER = Table(
    "summary_open_customer",
    METADATA,
    Column("legal_entity", String, nullable=False),
    Column("account", String, nullable=False),
    Column("collections_agent_id", String),
    Column("collections_pool_id", String),
    Column("aging_date", Date, nullable=False),
    Column("positive", Boolean, nullable=False),
    Column("n", Integer, nullable=False),
    Column("open_cur", BigInteger, nullable=False),
    Column("open_acct", BigInteger, nullable=False),
    *[
        Index(
            f"ix_sumopencust_{key}",
            "legal_entity",
            f"collections_{key}_id",
            "account",
            f"collections_{other}_id",
            "aging_date",
            "positive",
            "open_acct",
        )
        for key, other in (("agent", "pool"), ("pool", "agent"))
    ],
)
OPEN_PARTY = Table(
    "summary_open_party",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("account", String, nullable=False),
    Column("group_id", String),  # NULL: the party is missing from its table
    Column("n", Integer, nullable=False),
    Column("open_acct", BigInteger, nullable=False),
    Column("overdue_due_date", BigInteger, nullable=False),
    Column("overdue_txn_date", BigInteger, nullable=False),
    Index("ux_sumopenparty", "party_type", "legal_entity", "account", unique=True),
)
# Each in the order get_aging lists parties (largest first, then legal entity and account), so the
# first page of every legal entity, or of all of them, is read off an index without a sort.
for _name, _amount in (
    ("balance", OPEN_PARTY.c.open_acct),
    ("overdue", OPEN_PARTY.c.overdue_due_date),
    ("overdue_txn", OPEN_PARTY.c.overdue_txn_date),
):
    Index(f"ix_sumopenparty_{_name}", OPEN_PARTY.c.party_type, _amount.desc(),
          OPEN_PARTY.c.legal_entity, OPEN_PARTY.c.account)  # fmt: skip
    Index(f"ix_sumopenparty_le_{_name}", OPEN_PARTY.c.party_type, OPEN_PARTY.c.legal_entity,
          _amount.desc(), OPEN_PARTY.c.account)  # fmt: skip
SUMMARY_TABLES: tuple[Table, ...] = tuple(METADATA.sorted_tables)

_LEDGERS = {
    "customer": (s.CustomerTransaction.__table__, s.Customer.__table__, "customer_account"),
    "vendor": (s.VendorTransaction.__table__, s.Vendor.__table__, "vendor_account"),
}


def cents(column) -> object:
    """SQL: a money column as whole cents (exact on both databases)."""
    return cast(func.round(column * 100), BigInteger)


def _sum_cents(column) -> object:
    return cast(func.coalesce(func.sum(cents(column)), 0), BigInteger)


def build_summaries(conn: Connection) -> dict[str, int]:
    """(Re)write every summary table from the raw tables on ``conn`` (inside the caller's
    transaction); returns the rows written per table."""
    for table in reversed(SUMMARY_TABLES):
        table.drop(conn, checkfirst=True)
    for table in SUMMARY_TABLES:
        table.create(conn)
    periods = _periods(conn)
    if periods:
        conn.execute(insert(PERIOD), periods)
    as_of = conn.execute(select(s.ErpMeta.value).where(s.ErpMeta.key == "as_of")).scalar()
    for party_type, (t, party, account_column) in _LEDGERS.items():
        _ledger_sums(conn, party_type, t, account_column)
        _period_sums(conn, party_type, t, account_column)
        _open_items(conn, party_type, t, party, account_column)
        _open_parties(conn, party_type, t, party, account_column, _as_date(as_of))
    _open_customers(conn)
    conn.execute(
        insert(PERIOD_TOTAL).from_select(
            [*_PERIOD_KEY, "amount", "n", "parties"],
            select(
                *(PARTY_PERIOD.c[name] for name in _PERIOD_KEY),
                cast(func.sum(PARTY_PERIOD.c.amount), BigInteger),
                cast(func.sum(PARTY_PERIOD.c.n), Integer),
                cast(func.sum(case((PARTY_PERIOD.c.amount != 0, 1), else_=0)), Integer),
            ).group_by(*(PARTY_PERIOD.c[name] for name in _PERIOD_KEY)),
        )
    )
    latest = [
        conn.execute(
            select(func.max(t.c.txn_date)).where(t.c.closed_date.is_(None), t.c.posted.is_(True))
        ).scalar()
        for t, _, _ in _LEDGERS.values()
    ]
    latest = [_as_date(d) for d in latest if d is not None]
    meta = {
        "version": SUMMARY_VERSION,
        "as_of": as_of or "",
        "open_items_max_txn_date": max(latest).isoformat() if latest else "",
    }
    conn.execute(insert(SUMMARY_META), [{"key": k, "value": v} for k, v in meta.items()])
    for table in SUMMARY_TABLES:
        conn.exec_driver_sql(f'ANALYZE "{table.name}"')
    return {
        table.name: int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)
        for table in SUMMARY_TABLES
    }


@dataclass(frozen=True)
class SummarizeReport:
    rows: dict[str, int]
    """Rows per summary table."""
    indexes_added: list[str]
    """Indexes of today's schema the ERP lacked (one built by older code), now created."""


def summarize(db_url: str) -> SummarizeReport:
    """Add (or rebuild) the summary tables of the ERP at ``db_url``, and the indexes of today's
    schema it lacks, in one transaction; the raw tables and the snapshot hash stay as they
    are."""
    from synthetic_erp._target import add_missing_indexes  # _target imports this module

    path = sqlite_path(normalize_url(db_url))
    if path is not None and not path.exists():
        raise ErpDatabaseError(f"ERP database {path} does not exist")
    engine = open_engine(db_url)
    try:
        with engine.begin() as conn:
            if not inspect(conn).has_table(s.ErpMeta.__tablename__):
                raise ErpDatabaseError(f"{redact_url(db_url)} holds no ERP (no erp_meta table)")
            added = add_missing_indexes(conn)
            return SummarizeReport(build_summaries(conn), added)
    finally:
        engine.dispose()


def _as_date(value) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


def _periods(conn: Connection) -> list[dict]:
    """Calendar years and fiscal years (per legal entity) from the first to the last
    transaction date of either ledger."""
    bounds = [
        conn.execute(select(func.min(t.c.txn_date), func.max(t.c.txn_date))).first()
        for t, _, _ in _LEDGERS.values()
    ]
    days = [_as_date(d) for row in bounds for d in row if d is not None]
    if not days:
        return []
    first, last = min(days), max(days)
    le = s.LegalEntity.__table__
    rows = []
    for code, start_month in conn.execute(select(le.c.code, le.c.fiscal_year_start_month)):
        for kind, month in (("calendar", 1), ("fiscal", int(start_month))):
            if kind == "fiscal" and month == 1:
                continue
            year = first.year if first.month >= month else first.year - 1
            while dt.date(year, month, 1) <= last:
                start = dt.date(year, month, 1)
                end = dt.date(year + 1, month, 1) - dt.timedelta(days=1)
                rows.append({"legal_entity": code, "kind": kind, "period_start": start,
                             "period_end": end})  # fmt: skip
                year += 1
    return rows


def _ledger_sums(conn: Connection, party_type: str, t: Table, account_column: str) -> None:
    sums = [
        cast(func.count(), Integer),
        *(_sum_cents(t.c[c]) for c in ("amount_cur", "amount_acct", "open_amount_cur",
                                         "open_amount_acct")),
    ]  # fmt: skip
    measures = ["n", "amount_cur", "amount_acct", "open_amount_cur", "open_amount_acct"]
    keys = [t.c.legal_entity, t.c.txn_type, t.c.posted, t.c.currency]
    conn.execute(
        insert(LEDGER_TYPE).from_select(
            ["party_type", "legal_entity", "txn_type", "posted", "currency", *measures],
            select(literal(party_type), *keys, *sums).group_by(*keys),
        )
    )
    keys = [t.c.legal_entity, t.c.txn_type, t.c[account_column]]
    conn.execute(
        insert(LEDGER_PARTY).from_select(
            ["party_type", "legal_entity", "txn_type", "account", *measures],
            select(literal(party_type), *keys, *sums).group_by(*keys),
        )
    )


def _period_sums(conn: Connection, party_type: str, t: Table, account_column: str) -> None:
    # A legal entity whose fiscal year is the calendar year lists it once (as calendar); DISTINCT
    # keeps any period listed under two kinds from counting its lines twice.
    periods = (
        select(PERIOD.c.legal_entity, PERIOD.c.period_start, PERIOD.c.period_end)
        .distinct()
        .subquery("periods")
    )
    p = periods
    in_period = and_(
        p.c.legal_entity == t.c.legal_entity,
        t.c.txn_date >= p.c.period_start,
        t.c.txn_date <= p.c.period_end,
    )
    account = t.c[account_column]
    measures: list[tuple[str, tuple[str, ...], object, object, object, object]] = [
        ("invoiced", INVOICE_TYPES[party_type], _sum_cents(t.c.amount_acct),
         cast(func.count(), Integer), None, None),
        ("paid", ("payment",), -_sum_cents(t.c.amount_acct), cast(func.count(), Integer),
         None, None),
    ]  # fmt: skip
    if party_type == "vendor":
        is_invoice = t.c.txn_type == "invoice"
        measures.append(
            ("spend", SPEND_TYPES, _sum_cents(t.c.amount_acct),
             cast(func.sum(case((is_invoice, 1), else_=0)), Integer),
             cast(func.sum(case((is_invoice, cents(t.c.amount_acct)), else_=0)), BigInteger),
             cast(func.sum(case((is_invoice, 0), else_=cents(t.c.amount_acct))), BigInteger))
        )  # fmt: skip
    for measure, types, amount, n, invoiced, credits in measures:
        keys = [t.c.legal_entity, p.c.period_start, p.c.period_end, account]
        conn.execute(
            insert(PARTY_PERIOD).from_select(
                ["party_type", "legal_entity", "period_start", "period_end", "account", "measure",
                 "amount", "n", "invoiced", "credits"],
                select(
                    literal(party_type), *keys, literal(measure), cast(amount, BigInteger), n,
                    invoiced if invoiced is not None else literal(None, BigInteger),
                    credits if credits is not None else literal(None, BigInteger),
                )
                .select_from(t.join(p, in_period))
                .where(t.c.posted.is_(True), t.c.txn_type.in_(types))
                .group_by(*keys),
            )
        )  # fmt: skip


def _open_rows(t: Table):
    return and_(t.c.posted.is_(True), t.c.closed_date.is_(None), t.c.open_amount_cur != 0)


def _with_party(t: Table, party: Table, account_column: str):
    """The ledger ``t`` with each line's party row (NULLs where the party is missing)."""
    return t.join(
        party,
        and_(party.c.legal_entity == t.c.legal_entity, party.c.account == t.c[account_column]),
        isouter=True,
    )


def _open_items(conn: Connection, party_type: str, t: Table, party: Table, account_column: str):
    joined = _with_party(t, party, account_column)
    for basis, date in (
        ("due_date", func.coalesce(t.c.due_date, t.c.txn_date)),
        ("txn_date", t.c.txn_date),
    ):
        keys = [t.c.legal_entity, party.c.group_id, t.c.currency, date]
        conn.execute(
            insert(OPEN_ITEMS).from_select(
                ["party_type", "basis", "legal_entity", "group_id", "currency", "aging_date", "n",
                 "open_cur", "open_acct"],
                select(
                    literal(party_type), literal(basis), *keys, cast(func.count(), Integer),
                    _sum_cents(t.c.open_amount_cur), _sum_cents(t.c.open_amount_acct),
                )
                .select_from(joined)
                .where(_open_rows(t))
                .group_by(*keys),
            )
        )  # fmt: skip


def _open_customers(conn: Connection) -> None:
    t, cu, _ = _LEDGERS["customer"]
    joined = t.join(
        cu, and_(cu.c.legal_entity == t.c.legal_entity, cu.c.account == t.c.customer_account)
    )
    positive = case((t.c.open_amount_cur > 0, True), else_=False)
    aging_date = func.coalesce(t.c.due_date, t.c.txn_date)
    keys = [t.c.legal_entity, t.c.customer_account, cu.c.collections_agent_id,
            cu.c.collections_pool_id, aging_date, positive]  # fmt: skip
    conn.execute(
        insert(OPEN_CUSTOMER).from_select(
            ["legal_entity", "account", "collections_agent_id", "collections_pool_id",
             "aging_date", "positive", "n", "open_cur", "open_acct"],
            select(*keys, cast(func.count(), Integer), _sum_cents(t.c.open_amount_cur),
                   _sum_cents(t.c.open_amount_acct))
            .select_from(joined)
            .where(_open_rows(t))
            .group_by(*keys),
        )
    )  # fmt: skip


def _open_parties(
    conn: Connection, party_type: str, t: Table, party: Table, account_column: str, today: dt.date
):
    account = t.c[account_column]
    joined = _with_party(t, party, account_column)

    def overdue(date) -> object:
        past_due = case((date < today, cents(t.c.open_amount_acct)), else_=0)
        return cast(func.coalesce(func.sum(past_due), 0), BigInteger)

    keys = [t.c.legal_entity, account, party.c.group_id]
    conn.execute(
        insert(OPEN_PARTY).from_select(
            ["party_type", "legal_entity", "account", "group_id", "n", "open_acct",
             "overdue_due_date", "overdue_txn_date"],
            select(
                literal(party_type), *keys, cast(func.count(), Integer),
                _sum_cents(t.c.open_amount_acct),
                overdue(func.coalesce(t.c.due_date, t.c.txn_date)), overdue(t.c.txn_date),
            )
            .select_from(joined)
            .where(_open_rows(t))
            .group_by(*keys),
        )
    )  # fmt: skip
