"""The summary tables as a source for the aggregate tools, where they answer exactly.

``synthetic_erp._summaries`` writes them; the server finds them when it opens the ERP
(:func:`load_summaries`; an ERP built by older code has none, and every tool then runs its query
over the raw tables). A tool takes the summary path only when it is the same computation over
fewer rows: open-item sums on an aging date on or after the snapshot's today (and after the
latest open transaction), period sums for a period the tables hold, ledger sums for filters and
groupings on the columns they are keyed by (the transaction date among them). Amounts there
are whole cents; :func:`amount_sum` divides the sum by 100 in SQL, which gives the float of the
exact sum on SQLite and the exact ``numeric`` on PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Date,
    Engine,
    Integer,
    String,
    and_,
    func,
    inspect,
    literal,
    literal_column,
    or_,
    select,
    true,
    union_all,
)

from synthetic_erp import _summaries as st


@dataclass(frozen=True)
class OpenTree:
    """Where aging dates sit in ``summary_open_tree``."""

    epoch: dt.date
    """Aging date ``a`` has index ``(a - epoch).days``."""
    size: int
    """The largest index."""

    def nodes_before(self, date: dt.date | None) -> list[int]:
        """The nodes that sum the aging dates before ``date`` (None: all of them)."""
        index = self.size if date is None else (date - self.epoch).days - 1
        return st.tree_nodes(min(max(index, 0), self.size))


@dataclass(frozen=True)
class Summaries:
    """What the ERP's summary tables cover."""

    open_items_from: dt.date
    """Open-item sums are exact for aging dates on or after this day."""
    periods: frozenset[tuple[str, dt.date, dt.date]]
    """(legal entity, first day, last day) of each summarised period."""
    history_before: dt.date | None = None
    """Open-item sums of a past day (``open_item_history``) are exact before this day (the
    ERP's today); None: the ERP has no per-day tables (nor ``summary_settlement_day``)."""
    party_totals: bool = False
    """Whether the ERP has today's open balances per legal entity (``summary_open_party_total``)."""
    tree: OpenTree | None = None
    """The index of ``summary_open_tree`` (None: the ERP has none, and a past day's buckets are
    read per aging date)."""
    ledger_days: bool = False
    """Whether the ERP has the ledger sums per transaction and due date (``summary_ledger_day``,
    ``summary_ledger_due_day``)."""

    @property
    def groups_summed(self) -> bool:
        """Whether the ERP has today's open items summed over the groups
        (``summary_open_items_all``, one of the current per-day tables)."""
        return self.history_before is not None

    def open_items_hold(self, as_of: dt.date) -> bool:
        return as_of >= self.open_items_from

    def history_holds(self, as_of: dt.date) -> bool:
        return self.history_before is not None and as_of < self.history_before

    def has_period(self, les: list[str], start: dt.date | None, end: dt.date | None) -> bool:
        if start is None or end is None:
            return False
        return all((le, start, end) in self.periods for le in les)


def load_summaries(engine: Engine, today: dt.date) -> Summaries | None:
    """The summary tables' coverage, or None when the ERP has none (or they are of another
    version or another snapshot's today)."""
    if not inspect(engine).has_table(st.SUMMARY_META.name):
        _without_summaries("it has no summary tables")
        return None
    with engine.connect() as conn:
        meta = dict(conn.execute(select(st.SUMMARY_META.c.key, st.SUMMARY_META.c.value)).all())
        if meta.get("version") != st.SUMMARY_VERSION:
            _without_summaries(
                f"its summary tables are version {meta.get('version')}, "
                f"this server reads version {st.SUMMARY_VERSION}"
            )
            return None
        if meta.get("as_of") != today.isoformat():
            _without_summaries("its summary tables were built for another snapshot")
            return None
        p = st.PERIOD
        periods = frozenset(
            (le, _as_date(start), _as_date(end))
            for le, start, end in conn.execute(
                select(p.c.legal_entity, p.c.period_start, p.c.period_end)
            )
        )
    latest = meta.get("open_items_max_txn_date") or today.isoformat()
    history = meta.get("day_tables") == st.DAY_TABLES_VERSION
    tree = None
    if history and meta.get("open_tree") == st.OPEN_TREE_VERSION:
        tree = OpenTree(dt.date.fromisoformat(meta["open_tree_epoch"]), int(meta["open_tree_size"]))
    return Summaries(
        max(today, dt.date.fromisoformat(latest)),
        periods,
        today if history else None,
        party_totals=meta.get("open_party_total") == st.OPEN_PARTY_TOTAL_VERSION,
        tree=tree,
        ledger_days=meta.get("ledger_days") == st.LEDGER_DAYS_VERSION,
    )


def _without_summaries(why: str) -> None:
    logging.getLogger("erp_mcp").warning(
        "the ERP's aggregates read the raw ledgers (slower at scale): %s; add them with "
        "'python -m synthetic_erp summarize --db <the ERP URL>'",
        why,
    )


def _as_date(value: Any) -> dt.date:
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


def amount_sum(expression: Any) -> Any:
    """SQL: the sum of a cents expression as money (the sum divided by 100)."""
    return func.sum(expression).op("/")(literal_column("100.0"))


def as_money(expression: Any) -> Any:
    """SQL: one cents value as money."""
    return expression.op("/")(literal_column("100.0"))


@dataclass(frozen=True)
class Sums:
    """How a tool aggregates its item rows: raw ledger lines (a count of rows, plain sums) or
    summary rows (a sum of ``n``, sums of cents)."""

    summed: bool

    def count(self, items: Any) -> Any:
        return func.sum(items.c.n) if self.summed else func.count()

    def total(self, expression: Any) -> Any:
        return amount_sum(expression) if self.summed else func.sum(expression)


RAW = Sums(False)
SUMMED = Sums(True)


def open_item_summary(
    party_type: str,
    basis: str,
    *,
    legal_entity: str | None,
    currency: str | None,
    group_id: str | None,
    with_party: bool,
    groups_summed: bool = True,
) -> Any:
    """The summed open items in the shape of ``open_item_rows`` (``legal_entity``, ``group_id``,
    ``currency``, ``aging_date``, ``open_cur``, ``open_acct``) plus ``n``; amounts in cents.
    ``with_party`` keeps only the items of parties that exist (as the raw query's join does);
    without it and a group the sums over the groups are read (``group_id`` NULL) when the ERP
    has them (``groups_summed``: summarized with the current per-day tables), else the sums per
    group (the same totals, three times the rows)."""
    by_group = with_party or group_id is not None or not groups_summed
    o = st.OPEN_ITEMS if by_group else st.OPEN_ITEMS_ALL
    where = [o.c.party_type == party_type, o.c.basis == basis]
    if legal_entity:
        where.append(o.c.legal_entity == legal_entity)
    if group_id is not None:
        where.append(o.c.group_id == group_id)
    elif with_party:
        where.append(o.c.group_id.is_not(None))
    if currency:
        where.append(o.c.currency == currency)
    return (
        select(
            o.c.legal_entity,
            o.c.group_id if by_group else literal(None, String).label("group_id"),
            o.c.currency,
            o.c.aging_date,
            o.c.open_cur,
            o.c.open_acct,
            o.c.n,
        )
        .where(*where)
        .subquery("open_items")
    )


def open_item_history(
    party_type: str,
    basis: str,
    as_of: dt.date,
    *,
    legal_entity: str | None,
    currency: str | None,
    group_id: str | None,
    with_party: bool,
) -> Any:
    """The open items of a past day ``as_of`` summed per legal entity, group, currency and aging
    date, in the shape of :func:`open_item_summary`; amounts in cents.

    Each series' aging dates come from ``summary_open_dates`` (those with items open on
    ``as_of``: begun by then and not all closed), and each date's row is the latest
    of ``summary_open_history`` on or before ``as_of``, found by one index seek: the cost grows
    with the days and series, not with the ledger. The seek is fenced (``OFFSET 0``) so that it
    runs once per aging date, and the history row is then read by its id."""
    se, d, h = st.OPEN_SERIES, st.OPEN_DATES, st.OPEN_HISTORY
    where = [
        *_series_filter(party_type, basis, legal_entity, currency, group_id, with_party),
        d.c.first_event <= as_of,
        or_(d.c.closed_from.is_(None), d.c.closed_from > as_of),
    ]
    latest = (
        select(h.c.id)
        .where(
            h.c.series_id == d.c.series_id,
            h.c.aging_date == d.c.aging_date,
            h.c.event_date <= as_of,
        )
        .order_by(h.c.event_date.desc())
        .limit(1)
        .scalar_subquery()
    )
    dates = (
        select(
            se.c.legal_entity,
            se.c.group_id,
            se.c.currency,
            d.c.aging_date,
            latest.label("history_id"),
        )
        .select_from(se.join(d, d.c.series_id == se.c.series_id))
        .where(*where)
        .offset(0)
        .subquery("dates")
    )
    return (
        select(
            dates.c.legal_entity,
            dates.c.group_id,
            dates.c.currency,
            dates.c.aging_date,
            h.c.open_cur,
            h.c.open_acct,
            h.c.n,
        )
        .select_from(dates.join(h, h.c.id == dates.c.history_id))
        .where(h.c.n > 0)
        .subquery("open_items")
    )


def _series_filter(
    party_type: str,
    basis: str,
    legal_entity: str | None,
    currency: str | None,
    group_id: str | None,
    with_party: bool,
) -> list[Any]:
    """SQL: the ``summary_open_series`` rows a past day's open items are summed over."""
    se = st.OPEN_SERIES
    family = "group" if with_party or group_id is not None else "all"
    where = [se.c.party_type == party_type, se.c.basis == basis, se.c.family == family]
    if legal_entity:
        where.append(se.c.legal_entity == legal_entity)
    if currency:
        where.append(se.c.currency == currency)
    if group_id is not None:
        where.append(se.c.group_id == group_id)
    elif with_party:
        where.append(se.c.group_id.is_not(None))
    return where


_SERIES_KEYS = ("legal_entity", "txn_type", "posted", "currency")
_LEDGER_MEASURES = ("n", "amount_cur", "amount_acct", "open_amount_cur", "open_amount_acct")
_RANGE_ENDS = {
    day: (table.alias("upto"), table.alias("prior")) for day, table in st.LEDGER_DAY_TABLES.items()
}
"""Per date field, a range's last day and the day before it in its per-day table (aliases made
once: each proxies every column)."""


def ledger_range(
    party_type: str,
    series_where: list[Any],
    first: dt.date | None,
    last: dt.date | None,
    day: str = "txn_date",
) -> Any:
    """The ledger sums of the dates ``first`` to ``last`` (both included; None: no bound) of date
    field ``day`` (``txn_date`` or ``due_date``) per series of ``summary_ledger_type`` that
    ``series_where`` keeps, in its shape (``legal_entity``, ``txn_type``, ``posted``,
    ``currency``, ``n`` and the amounts in cents).

    Each series' sums are its running sums (``summary_ledger_day`` or
    ``summary_ledger_due_day``) on its last day up to ``last`` less those on its last day before
    ``first``, each day found by one index seek: the cost grows with the series, not with the
    range or the ledger. A series without a line in the range has ``n`` 0 (or no row)."""
    lt, d = st.LEDGER_TYPE, st.LEDGER_DAY_TABLES[day]

    def last_day(*bound: Any) -> Any:
        same_series = [d.c[k] == lt.c[k] for k in _SERIES_KEYS]
        return (
            select(d.c[day])
            .where(d.c.party_type == party_type, *same_series, d.c[day].is_not(None), *bound)
            .order_by(d.c[day].desc())
            .limit(1)
            .scalar_subquery()
        )

    before = literal(None, Date) if first is None else last_day(d.c[day] < first)
    bounds = (
        select(
            *(lt.c[k] for k in _SERIES_KEYS),
            last_day(*([] if last is None else [d.c[day] <= last])).label("last_day"),
            before.label("day_before"),
        )
        .where(*series_where)
        .offset(0)
        .subquery("bounds")
    )
    upto, prior = _RANGE_ENDS[day]

    def on(end: Any, alias: Any) -> Any:
        same_series = [alias.c[k] == bounds.c[k] for k in _SERIES_KEYS]
        return and_(alias.c.party_type == party_type, *same_series, alias.c[day] == end)

    sums = [
        (upto.c[f"run_{m}"] - func.coalesce(prior.c[f"run_{m}"], 0)).label(m)
        for m in _LEDGER_MEASURES
    ]
    return (
        select(*(bounds.c[k] for k in _SERIES_KEYS), *sums)
        .select_from(
            bounds.join(upto, on(bounds.c.last_day, upto)).outerjoin(
                prior, on(bounds.c.day_before, prior)
            )
        )
        .subquery("ledger_range")
    )


def _constant_rows(types: dict[str, Any], rows: list[tuple], name: str) -> Any:
    """SQL: a table of constant ``rows`` (SQLite takes no column names on a ``VALUES`` list)."""
    selects = [
        select(*(literal(value, kind).label(column) for value, (column, kind)
                 in zip(row, types.items(), strict=True)))
        for row in rows
    ]  # fmt: skip
    return (union_all(*selects) if len(selects) > 1 else selects[0]).subquery(name)


def open_bucket_history(
    tree: OpenTree,
    party_type: str,
    basis: str,
    as_of: dt.date,
    buckets: list[tuple[dt.date | None, dt.date | None]],
    *,
    legal_entity: str | None,
    currency: str | None,
    group_id: str | None,
    with_party: bool,
) -> Any:
    """The open items of a past day ``as_of`` summed per legal entity, group, currency and aging
    bucket (``buckets``: each ``(first aging date, day after the last)``, None unbounded), in the
    shape of :func:`open_item_history` with each bucket's sums on one aging date inside it; None
    when no node holds an aging date the buckets cover.

    A bucket's sums are those of the aging dates before its end less those before its start,
    each a sum of Fenwick nodes (``summary_open_tree``) found by one index seek per series and
    node: the cost grows with the series and the log of the days, not with the ledger."""
    terms: dict[tuple[dt.date, int], int] = {}
    for low, high in buckets:
        inside = high - dt.timedelta(days=1) if low is None else low
        for date, sign in ((high, 1), (low, -1)):
            if date is None and sign < 0:
                continue
            for node in tree.nodes_before(date):
                terms[(inside, node)] = terms.get((inside, node), 0) + sign
    terms = {key: coefficient for key, coefficient in terms.items() if coefficient}
    if not terms:
        return None
    se, tr = st.OPEN_SERIES, st.OPEN_TREE
    nodes = _constant_rows({"node": Integer}, sorted({(node,) for _, node in terms}), "nodes")
    latest = (
        select(tr.c.id)
        .where(tr.c.series_id == se.c.series_id, tr.c.node == nodes.c.node,
               tr.c.event_date <= as_of)
        .order_by(tr.c.event_date.desc())
        .limit(1)
        .scalar_subquery()
    )  # fmt: skip
    sought = (
        select(se.c.series_id, se.c.legal_entity, se.c.group_id, se.c.currency, nodes.c.node,
               latest.label("tree_id"))
        .select_from(se.join(nodes, true()))
        .where(*_series_filter(party_type, basis, legal_entity, currency, group_id, with_party))
        .offset(0)
        .subquery("sought")
    )  # fmt: skip
    term = _constant_rows(
        {"aging_date": Date, "node": Integer, "coefficient": Integer},
        [(date, node, coefficient) for (date, node), coefficient in sorted(terms.items())],
        "terms",
    )
    sums = {
        name: func.sum(term.c.coefficient * tr.c[name]) for name in ("open_cur", "open_acct", "n")
    }
    keys = [sought.c.series_id, sought.c.legal_entity, sought.c.group_id, sought.c.currency,
            term.c.aging_date]  # fmt: skip
    return (
        select(*keys[1:], *(total.label(name) for name, total in sums.items()))
        .select_from(
            sought.join(tr, tr.c.id == sought.c.tree_id).join(term, term.c.node == sought.c.node)
        )
        .group_by(*keys)
        .having(sums["n"] > 0)
        .subquery("open_items")
    )


def settlement_day_totals(
    party_type: str, legal_entity: str | None, date_from: dt.date | None, date_to: dt.date | None
) -> tuple[Any, Any]:
    """``(count, totals)`` statements for the settlements of a party type in a legal entity (or
    all) and date range: how many, and per currency of the settled transaction the settled
    amount and discount taken (money), from the per-day sums."""
    d = st.SETTLEMENT_DAY
    where = [d.c.party_type == party_type]
    if legal_entity:
        where.append(d.c.legal_entity == legal_entity)
    if date_from:
        where.append(d.c.settled_date >= date_from)
    if date_to:
        where.append(d.c.settled_date <= date_to)
    count = select(func.coalesce(func.sum(d.c.n), 0)).where(*where)
    totals = (
        select(d.c.currency, amount_sum(d.c.amount_cur), amount_sum(d.c.cash_discount_taken))
        .where(*where, d.c.currency.is_not(None))
        .group_by(d.c.currency)
    )
    return count, totals


def discount_day_totals(
    party_type: str, legal_entity: str | None, date_from: dt.date, date_to: dt.date
) -> tuple[Any, Any]:
    """``(count, totals)`` statements for the open invoices of a party type in a legal entity (or
    all) whose cash discount date is in a range: how many, and per currency their discount
    amounts (money), from the per-day sums."""
    d = st.DISCOUNT_DAY
    where = [d.c.party_type == party_type, d.c.cash_discount_date >= date_from,
             d.c.cash_discount_date <= date_to]  # fmt: skip
    if legal_entity:
        where.append(d.c.legal_entity == legal_entity)
    count = select(func.coalesce(func.sum(d.c.n), 0)).where(*where)
    totals = (
        select(d.c.currency, amount_sum(d.c.cash_discount_amount))
        .where(*where)
        .group_by(d.c.currency)
    )
    return count, totals


def open_customer_summary(les: list[str], agent_id: str | None, pool_id: str | None) -> Any:
    """Today's open items of customers summed per customer, aging date and sign, with the
    customer's collections agent and pool; amounts in cents."""
    o = st.OPEN_CUSTOMER
    where = [o.c.legal_entity.in_(les)]
    if agent_id:
        where.append(o.c.collections_agent_id == agent_id)
    if pool_id:
        where.append(o.c.collections_pool_id == pool_id)
    return (
        select(
            o.c.legal_entity,
            o.c.account,
            o.c.collections_agent_id,
            o.c.collections_pool_id,
            o.c.aging_date,
            o.c.positive,
            o.c.open_cur,
            o.c.open_acct,
        )
        .where(*where)
        .subquery("open_items")
    )


def open_party_page(
    party_type: str,
    *,
    legal_entity: str | None,
    group_id: str | None,
    order: str,
    key_order: Any,
) -> tuple[Any, Any]:
    """``(page, count)`` over today's open items per party: the parties in ``get_aging``'s order
    (``order``: ``balance``, ``overdue_due_date`` or ``overdue_txn_date`` largest first, or
    ``key``), each its ``legal_entity`` and ``account``, to be cut with ``limit``; and the number
    of such parties. ``key_order`` wraps a text column for ORDER BY (``text_key``). An index
    holds each order, so the page is read without grouping or sorting every party."""
    o = st.OPEN_PARTY
    where = [o.c.party_type == party_type]
    if legal_entity:
        where.append(o.c.legal_entity == legal_entity)
    if group_id is not None:
        where.append(o.c.group_id == group_id)
    keys = [key_order(o.c.legal_entity), key_order(o.c.account)]
    if order != "key":
        keys.insert(0, o.c["open_acct" if order == "balance" else order].desc())
    page = select(o.c.legal_entity, o.c.account).where(*where).order_by(*keys)
    return page, select(func.count()).select_from(o).where(*where)


def past_party_page(
    party_type: str,
    as_of: dt.date,
    *,
    legal_entity: str | None,
    group_id: str | None,
    order: str,
    key_order: Any,
) -> tuple[Any, Any]:
    """``(page, count)`` over the parties with open items on a past day ``as_of``: the parties
    in ``get_aging``'s order (``order``: ``balance`` largest first, or ``key``), each its
    ``legal_entity`` and ``account``, to be cut with ``limit``; and the number of such parties.

    Each party has one row of ``summary_party_history`` in force on a day it had open items,
    with its balance then, so the page is the first rows in force on ``as_of`` of an index in
    that order: the scan stops after the page and skips only rows of other days. The count
    sums, per legal entity and group, the latest running count on or before ``as_of``."""
    h, c = st.PARTY_HISTORY, st.PARTY_COUNT
    where = [
        h.c.party_type == party_type,
        h.c.event_date <= as_of,
        or_(h.c.next_event.is_(None), h.c.next_event > as_of),
    ]
    series_where = [c.c.party_type == party_type]
    if legal_entity:
        where.append(h.c.legal_entity == legal_entity)
        series_where.append(c.c.legal_entity == legal_entity)
    if group_id is not None:
        where.append(h.c.group_id == group_id)
        series_where.append(c.c.group_key == group_id)
    keys = [key_order(h.c.legal_entity), key_order(h.c.account)]
    if order == "balance":
        keys.insert(0, h.c.open_acct.desc())
    page = select(h.c.legal_entity, h.c.account).where(*where).order_by(*keys)
    series = (
        select(c.c.party_type, c.c.legal_entity, c.c.group_key)
        .where(*series_where)
        .distinct()
        .subquery("series")
    )
    latest = (
        select(c.c.parties)
        .where(
            c.c.party_type == series.c.party_type,
            c.c.legal_entity == series.c.legal_entity,
            c.c.group_key == series.c.group_key,
            c.c.event_date <= as_of,
        )
        .order_by(c.c.event_date.desc())
        .limit(1)
        .scalar_subquery()
    )
    count = select(func.coalesce(func.sum(latest), 0)).select_from(series)
    return page, count
