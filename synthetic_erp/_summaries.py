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
- ``summary_ledger_day`` / ``summary_ledger_due_day``: ``summary_ledger_type`` per transaction
  (due) date as well, with each series' running sums up to the day (query_entity_set's sums and
  counts with date filters or groups: a date range is two rows per series).
- ``summary_party_period`` / ``summary_period_total``: per party (and per legal entity) and
  period, the posted amounts of a measure: ``invoiced`` (invoices), ``paid`` (minus payments) and,
  for vendors, ``spend`` (invoices plus credit and debit notes, with ``invoiced`` and ``credits``
  apart and ``n`` the invoices). The periods (``summary_period``) are the calendar years,
  quarters and months and each legal entity's fiscal years and quarters that the ledgers span.
- ``summary_open_items``: today's open items (posted, not closed, open amount not zero) per party
  type, legal entity, party group, currency, aging basis and aging date. The number of distinct
  dates does not grow with the parties, so neither does the table much.
- ``summary_open_party``: today's open items per party (customers and vendors): how many, the
  balance and the part past due today on either aging basis; get_aging picks its page of parties
  from it.
- ``summary_open_party_total``: the same summed per legal entity (rank_parties' open totals).
- ``summary_open_items_all``: today's open items summed over the party groups.
- ``summary_open_customer``: the same per customer with its collections agent and pool, split by
  the sign of the open amount (the worklist's overdue counts positive items only).
- ``summary_settlement_day``: settlements per party type, legal entity, day and currency.
- ``summary_discount_day``: today's open invoices with a cash discount per party type, legal
  entity, discount date and currency.
- ``summary_open_series`` / ``summary_open_dates`` / ``summary_open_history``: the open items of
  every past day. A transaction's open amount on a past day changes only on the days a
  settlement of it was made, so each series (party type, aging basis, legal entity, currency and,
  in the ``group`` family, party group) keeps, per aging date, the running count and sums of the
  items open after each such day. The open items of any past day are then one row per series and
  aging date (the latest on or before that day), however many transactions the ledger holds.
- ``summary_open_tree``: the same running totals summed over ranges of aging dates (a Fenwick
  tree), so that a past day's aging buckets take a few rows per series and bucket edge, however
  many aging dates hold open items.

``summary_meta`` holds the version, the ERP's today they were built for and the latest
transaction date among the open items: open-item sums answer exactly only on or after both.
Its ``day_tables`` key names the version of the per-day tables (settlements per day, open items
of past days): an ERP summarised by older code lacks them, and those aggregates read the ledger.
The keys ``open_tree`` and ``open_party_total`` name the versions of the two newest tables; an
ERP without them answers from the per-aging-date and per-party tables, with the same answers.
The key ``ledger_days`` names the version of ``summary_ledger_day`` and
``summary_ledger_due_day``: an ERP without it answers date filters from the raw ledger.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

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
    or_,
    select,
    union,
)

from synthetic_erp import _schema as s
from synthetic_erp._db import ErpDatabaseError, normalize_url, open_engine, redact_url, sqlite_path

SUMMARY_VERSION = "2"
DAY_TABLES_VERSION = "2"
"""Version of the per-day tables (``summary_meta`` key ``day_tables``)."""
OPEN_PARTY_TOTAL_VERSION = "1"
"""Version of ``summary_open_party_total`` (``summary_meta`` key ``open_party_total``)."""
OPEN_TREE_VERSION = "1"
"""Version of ``summary_open_tree`` (``summary_meta`` key ``open_tree``): an ERP summarised
before it had one reads a past day's aging buckets from ``summary_open_history``."""
LEDGER_DAYS_VERSION = "1"
"""Version of ``summary_ledger_day`` and ``summary_ledger_due_day`` (``summary_meta`` key
``ledger_days``)."""
METADATA = MetaData()

INVOICE_TYPES = {"customer": ("sales_invoice", "free_text_invoice"), "vendor": ("invoice",)}
"""The txn types a party is invoiced with (rank_parties' ``invoiced``)."""
SPEND_TYPES = ("invoice", "credit_note", "debit_note")
"""Vendor spend: posted invoices minus credit and debit notes (get_vendor_spend)."""


def open_on_day(t: Any, st: Any, day: Any) -> tuple[Any, Any]:
    """SQL: ``(open_cur, open_acct)`` of each transaction of ledger table ``t`` at the end of
    ``day`` (a date or a column): today's open amount plus what settlements dated later took off
    it (a debit's settled amount; a credit's less the cash discount taken), converted at the
    transaction's rate to the cent. The raw past-day query and the per-day tables use this one
    arithmetic, so the tables answer exactly as the ledger."""
    later = and_(st.c.legal_entity == t.c.legal_entity, st.c.settled_date > day)
    debit_back = (
        select(func.coalesce(func.sum(st.c.amount_cur), 0))
        .where(later, st.c.debit_voucher == t.c.voucher)
        .scalar_subquery()
    )
    credit_back = (
        select(func.coalesce(func.sum(st.c.amount_cur - st.c.cash_discount_taken), 0))
        .where(later, st.c.credit_voucher == t.c.voucher)
        .scalar_subquery()
    )
    open_cur = t.c.open_amount_cur + debit_back - credit_back
    return open_cur, func.round(open_cur * t.c.exchange_rate, 2)


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


def _ledger_day_table(name: str, day: str, short: str) -> Table:
    """``summary_ledger_type`` per ``day`` (a date column of the ledgers): the day's sums and the
    running sums of its series (the other key columns) up to and including the day."""
    series = ["party_type", "legal_entity", "txn_type", "posted", "currency"]
    return Table(
        name,
        METADATA,
        Column("party_type", String, nullable=False),
        Column("legal_entity", String, nullable=False),
        Column("txn_type", String, nullable=False),
        Column("posted", Boolean, nullable=False),
        Column("currency", String, nullable=False),
        Column(day, Date, nullable=day == "due_date"),
        *_cents(),
        *(Column(f"run_{c.name}", c.type, nullable=False) for c in _cents()),
        Index(f"ux_{short}", *series, day, unique=True),
        Index(f"ix_{short}_date", "party_type", day, *series[1:], "n", "amount_cur",
              "amount_acct", "open_amount_cur", "open_amount_acct"),
    )  # fmt: skip


LEDGER_DAY = _ledger_day_table("summary_ledger_day", "txn_date", "sumday")
"""``summary_ledger_type`` per transaction date, with the running sums (``run_n``,
``run_amount_cur``, ...) of each series (the other key columns) up to and including that day.
Grouped by day, a date range is one range of the covering index ``ix_sumday_date``: at most a
row per day and series, however many ledger lines a day holds. Summed over a date range, each
series is its running sums on the range's last day less those before its first: two index
seeks per series, however long the range and large the ledger."""
LEDGER_DUE_DAY = _ledger_day_table("summary_ledger_due_day", "due_date", "sumdueday")
"""The same per due date. Lines without one sum to a row of NULL ``due_date`` per series, whose
running sums are its own (a date range never holds it)."""
LEDGER_DAY_TABLES = {"txn_date": LEDGER_DAY, "due_date": LEDGER_DUE_DAY}
"""Per date field of the ledgers, its per-day summary."""
PERIOD = Table(
    "summary_period",
    METADATA,
    Column("legal_entity", String, nullable=False),
    Column("kind", String, nullable=False),  # a key of PERIOD_MONTHS
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
OPEN_ITEMS_ALL = Table(
    "summary_open_items_all",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("basis", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("currency", String, nullable=False),
    Column("aging_date", Date, nullable=False),
    Column("n", Integer, nullable=False),
    Column("open_cur", BigInteger, nullable=False),
    Column("open_acct", BigInteger, nullable=False),
    Index("ix_sumopenall", "party_type", "basis", "legal_entity", "currency", "aging_date", "n",
          "open_cur", "open_acct"),
)  # fmt: skip
"""``summary_open_items`` summed over the party groups: aging without a group reads a third of
the rows."""
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
OPEN_PARTY_TOTAL = Table(
    "summary_open_party_total",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("parties", Integer, nullable=False),  # with a non-zero balance
    Column("open_acct", BigInteger, nullable=False),
    Index("ux_sumopenpartytotal", "party_type", "legal_entity", unique=True),
)
"""``summary_open_party`` summed per party type and legal entity: rank_parties' open totals
read one row per legal entity, however many parties it has."""
OPEN_SERIES = Table(
    "summary_open_series",
    METADATA,
    Column("series_id", Integer, primary_key=True, autoincrement=False),
    Column("party_type", String, nullable=False),
    Column("basis", String, nullable=False),  # due_date | txn_date
    Column("family", String, nullable=False),  # all | group
    Column("legal_entity", String, nullable=False),
    Column("group_id", String),  # family all: NULL; group: NULL when the party is missing
    Column("currency", String, nullable=False),
    Index("ix_sumseries", "party_type", "basis", "family", "legal_entity", "currency"),
)
OPEN_DATES = Table(
    "summary_open_dates",
    METADATA,
    Column("series_id", Integer, nullable=False),
    Column("aging_date", Date, nullable=False),
    Column("first_event", Date, nullable=False),
    Column("closed_from", Date),  # from this day on no item of the date is open; NULL: some is
    Index("ux_sumdates", "series_id", "aging_date", "first_event", "closed_from", unique=True),
)


def _running_totals(name: str, key: Column, index: str) -> Table:
    """A table of running open-item totals per series and ``key`` after each day (``event_date``),
    looked up by the latest row on or before a day (the index ends in ``id``)."""
    return Table(
        name,
        METADATA,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("series_id", Integer, nullable=False),
        key,
        Column("event_date", Date, nullable=False),
        Column("n", Integer, nullable=False),
        Column("open_cur", BigInteger, nullable=False),
        Column("open_acct", BigInteger, nullable=False),
        Index(index, "series_id", key.name, "event_date", "id", unique=True),
    )


OPEN_HISTORY = _running_totals(
    "summary_open_history", Column("aging_date", Date, nullable=False), "ux_sumhistory"
)
"""Per series and aging date, after each day (``event_date``) an open item of it began, changed
or closed: how many items are open and their open amounts (cents), in total, from that day until
the next row's."""
OPEN_TREE = _running_totals(
    "summary_open_tree", Column("node", Integer, nullable=False), "ux_sumtree"
)
"""``summary_open_history`` summed over ranges of aging dates, as a Fenwick tree: aging date ``a``
has index ``(a - epoch).days`` (``summary_meta`` keys ``open_tree_epoch`` and ``open_tree_size``)
and ``node`` ``i`` holds the aging dates of indexes ``i - lowbit(i) + 1`` to ``i``, with a row
after each day the open items of one of them changed. The open items of any past day with aging
dates before some date are then a sum over at most log2(size) nodes, one index seek each: the
cost of a past day's aging buckets does not grow with the ledger (:func:`tree_nodes`)."""
PARTY_HISTORY = Table(
    "summary_party_history",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("account", String, nullable=False),
    Column("group_id", String),  # NULL: the party is missing from its table
    Column("event_date", Date, nullable=False),
    Column("next_event", Date),  # NULL: in force until today
    Column("n", Integer, nullable=False),
    Column("open_acct", BigInteger, nullable=False),
)
"""Per party, each stretch of days (``event_date`` until the day before ``next_event``) on which
it had open items: how many and its balance (cents). Exactly one row of a party is in force on
a day it had open items, so a past day's parties by balance are read off an index in balance
order, skipping the rows not in force that day, and stop after the page."""
PARTY_COUNT = Table(
    "summary_party_count",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("group_key", String, nullable=False),  # the party's group; "": missing party
    Column("event_date", Date, nullable=False),
    Column("parties", Integer, nullable=False),
    Index("ux_sumpartycount", "party_type", "legal_entity", "group_key", "event_date", "parties",
          unique=True),
)  # fmt: skip
"""Per party type, legal entity and party group, how many parties had open items from each
day on (running count): the number of a past day's ``get_aging`` rows per party."""
# A past day's page of parties in get_aging's orders: by balance (largest first, then legal entity
# and account) over all legal entities or one, and by key; each covers the in-force test.
_IN_FORCE = ("event_date", "next_event", "n", "group_id")
Index("ix_sumpartyhist_balance", PARTY_HISTORY.c.party_type, PARTY_HISTORY.c.open_acct.desc(),
      PARTY_HISTORY.c.legal_entity, PARTY_HISTORY.c.account,
      *(PARTY_HISTORY.c[c] for c in _IN_FORCE))  # fmt: skip
Index("ix_sumpartyhist_le_balance", PARTY_HISTORY.c.party_type, PARTY_HISTORY.c.legal_entity,
      PARTY_HISTORY.c.open_acct.desc(), PARTY_HISTORY.c.account,
      *(PARTY_HISTORY.c[c] for c in _IN_FORCE))  # fmt: skip
Index("ix_sumpartyhist_key", PARTY_HISTORY.c.party_type, PARTY_HISTORY.c.legal_entity,
      PARTY_HISTORY.c.account, *(PARTY_HISTORY.c[c] for c in _IN_FORCE),
      PARTY_HISTORY.c.open_acct)  # fmt: skip
DISCOUNT_DAY = Table(
    "summary_discount_day",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("cash_discount_date", Date, nullable=False),
    Column("currency", String, nullable=False),
    Column("n", Integer, nullable=False),
    Column("cash_discount_amount", BigInteger, nullable=False),
    Index("ix_sumdiscountday", "party_type", "legal_entity", "cash_discount_date", "currency",
          "n", "cash_discount_amount"),
)  # fmt: skip
"""Today's open posted invoices with a cash discount, per party type, legal entity, discount
date and currency: how many and their discount amounts (cents); list_cash_discounts' count and
totals of the discounts expiring within some days."""
SETTLEMENT_DAY = Table(
    "summary_settlement_day",
    METADATA,
    Column("party_type", String, nullable=False),
    Column("legal_entity", String, nullable=False),
    Column("settled_date", Date, nullable=False),
    Column("currency", String),  # the settled transaction's; NULL: it is missing from the ledger
    Column("n", Integer, nullable=False),
    Column("amount_cur", BigInteger, nullable=False),
    Column("cash_discount_taken", BigInteger, nullable=False),
    Index("ix_sumsettleday", "party_type", "legal_entity", "settled_date", "currency", "n",
          "amount_cur", "cash_discount_taken"),
)  # fmt: skip
"""Settlements per party type, legal entity, day and currency of the settled transaction: how
many and their amounts (cents); list_settlements' count and totals over a date range."""
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
        _ledger_days(conn, party_type, t)
        _period_sums(conn, party_type, t, account_column)
        _open_items(conn, party_type, t, party, account_column)
        _open_parties(conn, party_type, t, party, account_column, _as_date(as_of))
    _open_items_all(conn)
    _open_party_totals(conn)
    _open_customers(conn)
    _open_history(conn)
    tree = _open_tree(conn)
    _settlement_days(conn)
    _discount_days(conn)
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
        "day_tables": DAY_TABLES_VERSION,
        "open_party_total": OPEN_PARTY_TOTAL_VERSION,
        "ledger_days": LEDGER_DAYS_VERSION,
        **tree,
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


PERIOD_MONTHS = {"calendar": 12, "fiscal": 12, "quarter": 3, "fiscal_quarter": 3, "month": 1}
"""The summarised periods: kind -> months long. Years and quarters start in January (calendar,
quarter) or in the legal entity's fiscal start month (fiscal, fiscal_quarter)."""


def _periods(conn: Connection) -> list[dict]:
    """Calendar and fiscal years, calendar and fiscal quarters and calendar months (per legal
    entity) from the first to the last transaction date of either ledger; a period listed under
    two kinds (a fiscal year that is the calendar year) is listed once."""
    bounds = [
        conn.execute(select(func.min(t.c.txn_date), func.max(t.c.txn_date))).first()
        for t, _, _ in _LEDGERS.values()
    ]
    days = [_as_date(d) for row in bounds for d in row if d is not None]
    if not days:
        return []
    first, last = min(days), max(days)
    le = s.LegalEntity.__table__
    rows, seen = [], set()
    for code, fiscal_month in conn.execute(select(le.c.code, le.c.fiscal_year_start_month)):
        for kind, months in PERIOD_MONTHS.items():
            anchor = int(fiscal_month) if kind.startswith("fiscal") else 1
            for start, end in _spans(first, last, anchor, months):
                if (code, start, end) not in seen:
                    seen.add((code, start, end))
                    rows.append({"legal_entity": code, "kind": kind, "period_start": start,
                                 "period_end": end})  # fmt: skip
    return rows


def _spans(
    first: dt.date, last: dt.date, anchor: int, months: int
) -> list[tuple[dt.date, dt.date]]:
    """``(first day, last day)`` of each span of ``months`` months, aligned on month ``anchor``,
    that holds a day from ``first`` to ``last``."""
    index = first.year * 12 + first.month - 1  # months since year 0
    index -= (index - (anchor - 1)) % months
    spans = []
    while dt.date(index // 12, index % 12 + 1, 1) <= last:
        following = index + months
        end = dt.date(following // 12, following % 12 + 1, 1) - dt.timedelta(days=1)
        spans.append((dt.date(index // 12, index % 12 + 1, 1), end))
        index = following
    return spans


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


_LEDGER_AMOUNTS = ("amount_cur", "amount_acct", "open_amount_cur", "open_amount_acct")


def _ledger_days(conn: Connection, party_type: str, t: Table) -> None:
    measures = ["n", *_LEDGER_AMOUNTS]
    sums = [cast(func.count(), Integer), *(_sum_cents(t.c[c]) for c in _LEDGER_AMOUNTS)]
    for day, table in LEDGER_DAY_TABLES.items():
        keys = [t.c.legal_entity, t.c.txn_type, t.c.posted, t.c.currency, t.c[day]]
        daily = (
            select(*keys, *(total.label(name) for total, name in zip(sums, measures, strict=True)))
            .group_by(*keys)
            .subquery("daily")
        )
        # the NULL day (no due date) apart: databases sort NULL first or last
        series = [*(daily.c[k.name] for k in keys[:-1]), daily.c[day].is_(None)]
        window = {"partition_by": series, "order_by": daily.c[day]}
        running = [
            cast(func.sum(daily.c[name]).over(**window), Integer if name == "n" else BigInteger)
            for name in measures
        ]
        conn.execute(
            insert(table).from_select(
                ["party_type", *(k.name for k in keys), *measures,
                 *(f"run_{m}" for m in measures)],
                select(literal(party_type), *daily.c, *running),
            )
        )  # fmt: skip


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


def _open_items_all(conn: Connection) -> None:
    o = OPEN_ITEMS
    keys = [o.c.party_type, o.c.basis, o.c.legal_entity, o.c.currency, o.c.aging_date]
    conn.execute(
        insert(OPEN_ITEMS_ALL).from_select(
            [k.name for k in keys] + ["n", "open_cur", "open_acct"],
            select(*keys, cast(func.sum(o.c.n), Integer), cast(func.sum(o.c.open_cur), BigInteger),
                   cast(func.sum(o.c.open_acct), BigInteger)).group_by(*keys),
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


def _open_party_totals(conn: Connection) -> None:
    op = OPEN_PARTY
    keys = [op.c.party_type, op.c.legal_entity]
    conn.execute(
        insert(OPEN_PARTY_TOTAL).from_select(
            ["party_type", "legal_entity", "parties", "open_acct"],
            select(
                *keys,
                cast(func.sum(case((op.c.open_acct != 0, 1), else_=0)), Integer),
                cast(func.sum(op.c.open_acct), BigInteger),
            ).group_by(*keys),
        )
    )


# -- open items of past days -----------------------------------------------------------------------

_SETTLEMENTS = {
    "customer": s.CustomerSettlement.__table__,
    "vendor": s.VendorSettlement.__table__,
}
_AGING_DATES = {
    "due_date": lambda t: func.coalesce(t.c.due_date, t.c.txn_date),
    "txn_date": lambda t: t.c.txn_date,
}
_SCRATCH = MetaData()
_POINTS = Table(
    "scratch_open_points",
    _SCRATCH,
    Column("txn_id", Integer, nullable=False),
    Column("p", Date, nullable=False),
    Column("cur", BigInteger, nullable=False),
    Column("acct", BigInteger, nullable=False),
    prefixes=["TEMPORARY"],
)
_DELTAS = Table(
    "scratch_open_deltas",
    _SCRATCH,
    Column("txn_id", Integer, nullable=False),
    Column("event_date", Date, nullable=False),
    Column("n", Integer, nullable=False),
    Column("open_cur", BigInteger, nullable=False),
    Column("open_acct", BigInteger, nullable=False),
    prefixes=["TEMPORARY"],
)


def _open_history(conn: Connection) -> None:
    """Write the past-day tables: per party type, each transaction's open amount on every day it
    changed (valued as ``erp_mcp``'s raw query values it on that day, so the sums are the same),
    the changes summed per series, aging date and day, and their running totals."""
    next_series, next_row = 1, 1
    for party_type, (t, party, _) in _LEDGERS.items():
        for scratch in (_POINTS, _DELTAS):
            scratch.create(conn)
        _value_change_points(conn, t, _SETTLEMENTS[party_type])
        _changes(conn, t)
        _party_history(conn, party_type, t, party)
        for basis, aging in _AGING_DATES.items():
            for family in ("all", "group"):
                next_series, next_row = _series_history(
                    conn, party_type, basis, family, t, party, aging(t), next_series, next_row
                )
        for scratch in (_DELTAS, _POINTS):
            scratch.drop(conn)
    h = OPEN_HISTORY
    dates = (
        select(
            h.c.series_id,
            h.c.aging_date,
            func.min(h.c.event_date).label("first_event"),
            func.max(h.c.event_date).label("last_event"),
        )
        .group_by(h.c.series_id, h.c.aging_date)
        .subquery("dates")
    )
    open_after_last = (
        select(h.c.n)
        .where(
            h.c.series_id == dates.c.series_id,
            h.c.aging_date == dates.c.aging_date,
            h.c.event_date == dates.c.last_event,
        )
        .scalar_subquery()
    )
    conn.execute(
        insert(OPEN_DATES).from_select(
            ["series_id", "aging_date", "first_event", "closed_from"],
            select(dates.c.series_id, dates.c.aging_date, dates.c.first_event,
                   case((open_after_last == 0, dates.c.last_event), else_=None)),
        )
    )  # fmt: skip


def tree_nodes(index: int) -> list[int]:
    """The Fenwick nodes whose sums add up to indexes 1 to ``index`` (none for 0)."""
    nodes = []
    while index > 0:
        nodes.append(index)
        index &= index - 1
    return nodes


def _tree_parents(index: int, size: int) -> list[int]:
    """The Fenwick nodes (up to ``size``) that hold index ``index``."""
    nodes = []
    while index <= size:
        nodes.append(index)
        index += index & -index
    return nodes


_NODE_OF = Table(
    "scratch_tree_nodes",
    _SCRATCH,
    Column("aging_date", Date, nullable=False),
    Column("node", Integer, nullable=False),
    prefixes=["TEMPORARY"],
)


def _open_tree(conn: Connection) -> dict[str, str]:
    """Write ``summary_open_tree`` from ``summary_open_history`` (its changes summed per series,
    node and day, then running); returns its ``summary_meta`` keys."""
    h = OPEN_HISTORY
    first, last = conn.execute(select(func.min(h.c.aging_date), func.max(h.c.aging_date))).one()
    if first is None:
        return {}
    epoch = _as_date(first) - dt.timedelta(days=1)
    size = (_as_date(last) - epoch).days
    dates = [_as_date(d) for (d,) in conn.execute(select(h.c.aging_date).distinct())]
    _NODE_OF.create(conn)
    conn.execute(
        insert(_NODE_OF),
        [{"aging_date": d, "node": node} for d in dates
         for node in _tree_parents((d - epoch).days, size)],
    )  # fmt: skip
    before = {"partition_by": [h.c.series_id, h.c.aging_date], "order_by": h.c.event_date}
    names = ("n", "open_cur", "open_acct")
    changes = select(
        h.c.series_id, h.c.aging_date, h.c.event_date,
        *((h.c[name] - func.lag(h.c[name], 1, 0).over(**before)).label(name) for name in names),
    ).subquery("changes")  # fmt: skip
    m = _NODE_OF
    node_keys = [changes.c.series_id, m.c.node, changes.c.event_date]
    sums = [func.sum(changes.c[name]) for name in names]
    per_node = (
        select(*node_keys, *(sum_.label(name) for sum_, name in zip(sums, names, strict=True)))
        .select_from(changes.join(m, m.c.aging_date == changes.c.aging_date))
        .group_by(*node_keys)
        .having(or_(*(sum_ != 0 for sum_ in sums)))
        .subquery("per_node")
    )
    running = {"partition_by": [per_node.c.series_id, per_node.c.node],
               "order_by": per_node.c.event_date}  # fmt: skip
    order = [per_node.c.series_id, per_node.c.node, per_node.c.event_date]
    conn.execute(
        insert(OPEN_TREE).from_select(
            ["id", "series_id", "node", "event_date", *names],
            select(
                func.row_number().over(order_by=order).label("id"),
                per_node.c.series_id, per_node.c.node, per_node.c.event_date,
                *(cast(func.sum(per_node.c[name]).over(**running),
                       Integer if name == "n" else BigInteger) for name in names),
            ),
        )
    )  # fmt: skip
    _NODE_OF.drop(conn)
    return {"open_tree": OPEN_TREE_VERSION, "open_tree_epoch": epoch.isoformat(),
            "open_tree_size": str(size)}  # fmt: skip


def _value_change_points(conn: Connection, t: Table, st: Table) -> None:
    """Each posted transaction's open amount (cents) on its date and on each later day a
    settlement of it was made before it closed: the days its open amount can change."""
    ever_open = and_(
        t.c.posted.is_(True), or_(t.c.closed_date.is_(None), t.c.closed_date > t.c.txn_date)
    )

    def settled(voucher: str):
        return (
            select(t.c.id, st.c.settled_date)
            .select_from(
                t.join(
                    st, and_(st.c.legal_entity == t.c.legal_entity, st.c[voucher] == t.c.voucher)
                )
            )
            .where(
                ever_open,
                st.c.settled_date > t.c.txn_date,
                or_(t.c.closed_date.is_(None), st.c.settled_date < t.c.closed_date),
            )
        )

    points = union(
        select(t.c.id, t.c.txn_date).where(ever_open), settled("debit_voucher"),
        settled("credit_voucher"),
    ).subquery("points")  # fmt: skip
    txn_id, day = points.c[0], points.c[1]
    open_cur, open_acct = open_on_day(t, st, day)  # as erp_mcp._ledger.open_amounts
    conn.execute(
        insert(_POINTS).from_select(
            ["txn_id", "p", "cur", "acct"],
            select(txn_id, day, cents(open_cur), cents(open_acct)).select_from(
                points.join(t, t.c.id == txn_id)
            ),
        )
    )


def _changes(conn: Connection, t: Table) -> None:
    """Per transaction and day, the change of its open count and amounts: it opens on its first
    point, changes by the difference at each later one and closes on its closed date."""
    p = _POINTS
    window = {"partition_by": p.c.txn_id, "order_by": p.c.p}
    steps = select(
        p.c.txn_id,
        p.c.p,
        p.c.cur,
        p.c.acct,
        func.row_number().over(**window).label("k"),
        func.lag(p.c.cur, 1, 0).over(**window).label("prev_cur"),
        func.lag(p.c.acct, 1, 0).over(**window).label("prev_acct"),
        func.lead(p.c.p).over(**window).label("next_p"),
    ).subquery("steps")
    columns = ["txn_id", "event_date", "n", "open_cur", "open_acct"]
    conn.execute(
        insert(_DELTAS).from_select(
            columns,
            select(
                steps.c.txn_id,
                steps.c.p,
                case((steps.c.k == 1, 1), else_=0),
                cast(steps.c.cur - steps.c.prev_cur, BigInteger),
                cast(steps.c.acct - steps.c.prev_acct, BigInteger),
            ),
        )
    )
    closes = (
        select(steps.c.txn_id, t.c.closed_date, literal(-1), -steps.c.cur, -steps.c.acct)
        .select_from(steps.join(t, t.c.id == steps.c.txn_id))
        .where(steps.c.next_p.is_(None), t.c.closed_date.is_not(None))
    )
    conn.execute(insert(_DELTAS).from_select(columns, closes))


def _series_history(
    conn: Connection,
    party_type: str,
    basis: str,
    family: str,
    t: Table,
    party: Table,
    aging: object,
    next_series: int,
    next_row: int,
) -> tuple[int, int]:
    """Write the series of one party type, basis and family and their running totals; returns
    the next free series id and row id."""
    d = _DELTAS
    group = party.c.group_id if family == "group" else literal(None, String)
    source = d.join(t, t.c.id == d.c.txn_id)
    if family == "group":
        source = source.outerjoin(
            party,
            and_(party.c.legal_entity == t.c.legal_entity,
                 party.c.account == t.c[_LEDGERS[party_type][2]]),
        )  # fmt: skip
    keys = [t.c.legal_entity.label("legal_entity"), group.label("group_id"),
            t.c.currency.label("currency")]  # fmt: skip
    found = conn.execute(select(*keys).select_from(source).distinct()).all()
    series = [
        {"series_id": next_series + i, "party_type": party_type, "basis": basis,
         "family": family, "legal_entity": le, "group_id": g, "currency": cur}
        for i, (le, g, cur) in enumerate(sorted(found, key=lambda k: tuple(map(str, k))))
    ]  # fmt: skip
    if not series:
        return next_series, next_row
    conn.execute(insert(OPEN_SERIES), series)
    day_keys = [*keys, aging.label("aging_date"), d.c.event_date]
    changes = (
        select(
            *day_keys,
            func.sum(d.c.n).label("n"),
            func.sum(d.c.open_cur).label("open_cur"),
            func.sum(d.c.open_acct).label("open_acct"),
        )
        .select_from(source)
        .group_by(*day_keys)
        .subquery("changes")
    )
    se = OPEN_SERIES
    same_series = and_(
        se.c.party_type == party_type,
        se.c.basis == basis,
        se.c.family == family,
        se.c.legal_entity == changes.c.legal_entity,
        func.coalesce(se.c.group_id, "") == func.coalesce(changes.c.group_id, ""),
        se.c.currency == changes.c.currency,
    )
    running = {
        "partition_by": [se.c.series_id, changes.c.aging_date],
        "order_by": changes.c.event_date,
    }
    order = [se.c.series_id, changes.c.aging_date, changes.c.event_date]
    rows = select(
        (func.row_number().over(order_by=order) + (next_row - 1)).label("id"),
        se.c.series_id,
        changes.c.aging_date,
        changes.c.event_date,
        *(
            cast(func.sum(changes.c[name]).over(**running), Integer if name == "n" else BigInteger)
            for name in ("n", "open_cur", "open_acct")
        ),
    ).select_from(changes.join(se, same_series))
    conn.execute(
        insert(OPEN_HISTORY).from_select(
            ["id", "series_id", "aging_date", "event_date", "n", "open_cur", "open_acct"], rows
        )
    )
    last_row = conn.execute(select(func.max(OPEN_HISTORY.c.id))).scalar()
    return next_series + len(series), (last_row or 0) + 1


def _party_history(conn: Connection, party_type: str, t: Table, party: Table) -> None:
    """Write the stretches of each party's open items (from the per-transaction changes) and the
    running number of parties with open items per legal entity and group."""
    d = _DELTAS
    account = t.c[_LEDGERS[party_type][2]]
    day_keys = [t.c.legal_entity.label("legal_entity"), account.label("account"), d.c.event_date]
    daily = (
        select(*day_keys, func.sum(d.c.n).label("dn"), func.sum(d.c.open_acct).label("dacct"))
        .select_from(d.join(t, t.c.id == d.c.txn_id))
        .group_by(*day_keys)
        .subquery("daily")
    )
    window = {"partition_by": [daily.c.legal_entity, daily.c.account],
              "order_by": daily.c.event_date}  # fmt: skip
    running = select(
        daily.c.legal_entity,
        daily.c.account,
        daily.c.event_date,
        func.lead(daily.c.event_date).over(**window).label("next_event"),
        func.sum(daily.c.dn).over(**window).label("n"),
        func.sum(daily.c.dacct).over(**window).label("open_acct"),
    ).subquery("running")
    before = func.lag(running.c.n, 1, 0).over(
        partition_by=[running.c.legal_entity, running.c.account], order_by=running.c.event_date
    )
    r = select(
        running,
        (case((running.c.n > 0, 1), else_=0) - case((before > 0, 1), else_=0)).label("opened"),
    ).subquery("stretches")
    with_group = r.outerjoin(
        party, and_(party.c.legal_entity == r.c.legal_entity, party.c.account == r.c.account)
    )
    conn.execute(
        insert(PARTY_HISTORY).from_select(
            ["party_type", "legal_entity", "account", "group_id", "event_date", "next_event", "n",
             "open_acct"],
            select(literal(party_type), r.c.legal_entity, r.c.account, party.c.group_id,
                   r.c.event_date, r.c.next_event, cast(r.c.n, Integer),
                   cast(r.c.open_acct, BigInteger))
            .select_from(with_group)
            .where(r.c.n > 0),
        )
    )  # fmt: skip
    group_key = func.coalesce(party.c.group_id, "")
    count_keys = [r.c.legal_entity.label("legal_entity"), group_key.label("group_key"),
                  r.c.event_date.label("event_date")]  # fmt: skip
    changes = (
        select(*count_keys, func.sum(r.c.opened).label("opened"))
        .select_from(with_group)
        .group_by(*count_keys)
        .having(func.sum(r.c.opened) != 0)
        .subquery("changes")
    )
    c = changes
    parties = func.sum(c.c.opened).over(
        partition_by=[c.c.legal_entity, c.c.group_key], order_by=c.c.event_date
    )
    conn.execute(
        insert(PARTY_COUNT).from_select(
            ["party_type", "legal_entity", "group_key", "event_date", "parties"],
            select(literal(party_type), c.c.legal_entity, c.c.group_key, c.c.event_date,
                   cast(parties, Integer)),
        )
    )  # fmt: skip


def _discount_days(conn: Connection) -> None:
    for party_type, (t, _, _) in _LEDGERS.items():
        keys = [t.c.legal_entity, t.c.cash_discount_date, t.c.currency]
        conn.execute(
            insert(DISCOUNT_DAY).from_select(
                ["party_type", "legal_entity", "cash_discount_date", "currency", "n",
                 "cash_discount_amount"],
                select(literal(party_type), *keys, cast(func.count(), Integer),
                       _sum_cents(t.c.cash_discount_amount))
                .where(t.c.cash_discount_date.is_not(None), t.c.posted.is_(True),
                       t.c.open_amount_cur != 0)
                .group_by(*keys),
            )
        )  # fmt: skip


def _settlement_days(conn: Connection) -> None:
    for party_type, (t, _, _) in _LEDGERS.items():
        st = _SETTLEMENTS[party_type]
        keys = [st.c.legal_entity, st.c.settled_date, t.c.currency]
        conn.execute(
            insert(SETTLEMENT_DAY).from_select(
                ["party_type", "legal_entity", "settled_date", "currency", "n", "amount_cur",
                 "cash_discount_taken"],
                select(literal(party_type), *keys, cast(func.count(), Integer),
                       _sum_cents(st.c.amount_cur), _sum_cents(st.c.cash_discount_taken))
                .select_from(st.outerjoin(t, and_(t.c.legal_entity == st.c.legal_entity,
                                                  t.c.voucher == st.c.debit_voucher)))
                .group_by(*keys),
            )
        )  # fmt: skip
