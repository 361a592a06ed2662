"""Ledger tools for both sides: aging, transactions, settlements, disputes and cash discounts."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from fastmcp.exceptions import ToolError
from pydantic import Field, field_validator
from sqlalchemy import and_, case, exists, func, literal, or_, select, union, union_all

from erp_mcp._common import (
    CurrencyTotal,
    PageArgs,
    PageInfo,
    check_range,
    currency_totals,
    cursor_offset,
    page_info,
    page_of,
    text_key,
    to_record,
)
from erp_mcp._ledger import (
    LEDGERS,
    bucket_bounds,
    bucket_of,
    in_bucket,
    make_buckets,
    open_item_rows,
)
from erp_mcp._records import StrictModel, money, record_model
from erp_mcp._runtime import ErpRuntime
from erp_mcp._summaries import (
    RAW,
    SUMMED,
    Sums,
    discount_day_totals,
    open_bucket_history,
    open_item_history,
    open_item_summary,
    open_party_page,
    past_party_page,
    settlement_day_totals,
)
from erp_mcp._tooling import erp_tool
from synthetic_erp import _schema as s

PartyType = Literal["customer", "vendor"]

# --------------------------------------------------------------------------------------------------
# get_aging
# --------------------------------------------------------------------------------------------------


MAX_BUCKET_DAYS = 36_500
"""A century: the widest aging bucket that fits the date range of an ERP."""


class AgingArgs(StrictModel):
    party_type: PartyType = "customer"
    """AR or AP."""
    as_of: dt.date | None = None
    """Aging date; default today."""
    legal_entity: str | None = None
    """Company code; omit for all."""
    account: str | None = None
    """One party's account id (exact name also works)."""
    group_id: str | None = None
    """Only parties in this customer or vendor group."""
    currency: str | None = None
    """Only transactions in this currency."""
    group_by: Literal["party", "group", "currency", "legal_entity"] = "party"
    """Row per party, group, currency or legal entity."""
    bucket_edges: list[Annotated[int, Field(ge=1, le=MAX_BUCKET_DAYS)]] = Field(
        default_factory=lambda: [30, 60, 90], min_length=1, max_length=10
    )
    """Ascending day edges of the overdue buckets, default [30, 60, 90]."""
    aging_basis: Literal["due_date", "txn_date"] = "due_date"
    """Count days from the due date or the transaction date."""
    include_transactions: bool = False
    """With account: list its open transactions."""
    sort_by: Literal["balance", "overdue", "key"] = "balance"
    """Row order."""
    limit: int = Field(100, ge=1, le=1000)
    """Most rows (totals cover all)."""

    @field_validator("bucket_edges")
    @classmethod
    def _ascending(cls, edges: list[int]) -> list[int]:
        if not edges or len(edges) > 10:
            raise ValueError("give 1 to 10 bucket edges, e.g. [30, 60, 90]")
        if any(e <= 0 for e in edges) or sorted(set(edges)) != edges:
            raise ValueError("bucket edges must be positive day counts in ascending order")
        return edges


class BucketAmount(StrictModel):
    label: str
    """current (not yet due), "1-30", ..., "over N"."""
    from_days: int | None
    """Smallest days overdue in the bucket (None for current)."""
    to_days: int | None
    """Largest days overdue in the bucket (None for the last)."""
    amount_acct: float
    """Open amount in the accounting currency."""
    amount_cur: float | None = None
    """Open amount in the transaction currency (rows with a single currency only)."""


class AgingRow(StrictModel):
    legal_entity: str | None
    account: str | None = None
    name: str | None = None
    group_id: str | None = None
    currency: str | None = None
    """The transaction currency when the row holds one currency only."""
    accounting_currency: str | None
    balance_acct: float
    balance_cur: float | None
    """Balance in ``currency`` (rows with a single currency only)."""
    overdue_acct: float
    """Part of the balance past due (every bucket but current)."""
    open_transaction_count: int
    buckets: list[BucketAmount]
    url: str | None
    """Link to the party or group record."""


class AgingTotal(StrictModel):
    currency: str
    """Accounting currency (``totals_acct``) or transaction currency (``totals_by_currency``)."""
    balance: float
    buckets: list[BucketAmount]


class AgingItem(StrictModel):
    legal_entity: str
    voucher: str
    document_number: str
    txn_type: str
    txn_date: dt.date
    due_date: dt.date | None
    currency: str
    amount_cur: float
    open_amount_cur: float
    """Open on ``as_of``."""
    open_amount_acct: float
    days_overdue: int
    bucket: str
    url: str | None


class AgingReport(StrictModel):
    party_type: str
    as_of: dt.date
    group_by: str
    aging_basis: str
    bucket_labels: list[str]
    rows: list[AgingRow]
    total_rows: int
    """Rows before ``limit``."""
    totals_acct: list[AgingTotal]
    """Totals per accounting currency over all rows (one entry per accounting currency)."""
    totals_by_currency: list[AgingTotal]
    """Totals per transaction currency over all rows."""
    transactions: list[AgingItem] | None = None
    truncated: bool = False
    """True when a list was cut to stay within the result budget (about 100,000 characters):
    narrow the call (account, legal_entity, a smaller limit) for the rest."""


@erp_tool("finance", AgingArgs)
def get_aging(rt: ErpRuntime, args: AgingArgs) -> AgingReport:
    """Open balances and aging as of a date (AR or AP), with totals; buckets by bucket_edges."""
    ledger = LEDGERS[args.party_type]
    t, p = ledger.txn, ledger.party
    as_of = args.as_of or rt.today
    le = rt.check_legal_entity(args.legal_entity)
    currency = rt.check_currency(args.currency)
    where = []
    if args.account:
        le, account = rt.resolve_party(args.party_type, args.account, le)
        where.append(ledger.account == account)
    if le:
        where.append(t.c.legal_entity == le)
    if currency:
        where.append(t.c.currency == currency)
    with_party = args.group_id is not None or args.group_by == "group"
    if args.group_id is not None:
        where.append(p.c.group_id == args.group_id)
    columns = [p.c.group_id.label("group_id")] if with_party else []
    items = open_item_rows(ledger, as_of, rt.today, basis=args.aging_basis, where=where,
                           columns=columns, with_party=with_party)  # fmt: skip
    buckets = make_buckets(args.bucket_edges)
    bounds = bucket_bounds(as_of, args.bucket_edges)
    totals_items, totals_sums = items, RAW
    if rt.summaries and rt.summaries.open_items_hold(as_of) and not args.account:
        # Today's open items summed per group, currency and aging date: the same sums for every
        # row key but the party (which the summary does not keep) and for the totals.
        totals_items = open_item_summary(args.party_type, args.aging_basis, legal_entity=le,
                                         currency=currency, group_id=args.group_id,
                                         with_party=with_party,
                                         groups_summed=rt.summaries.groups_summed)  # fmt: skip
        totals_sums = SUMMED
    elif rt.summaries and rt.summaries.history_holds(as_of) and not args.account:
        # A past day's open items, summed the same way from the running totals of each day.
        totals_items = _past_open_items(rt, args, as_of, le, currency, with_party, bounds)
        totals_sums = SUMMED
    row_items, row_sums = (items, RAW) if args.group_by == "party" else (totals_items, totals_sums)

    def parties_items(entity: str, accounts: list[str]):
        """The open items of a few parties of one legal entity (a page's)."""
        chosen = [t.c.legal_entity == entity, ledger.account.in_(accounts)]
        return open_item_rows(ledger, as_of, rt.today, basis=args.aging_basis,
                              where=[*where, *chosen], columns=columns,
                              with_party=with_party)  # fmt: skip

    with rt.engine.connect() as conn:
        rows, total_rows = _aging_page(
            rt, conn, row_items, args, le, as_of, bounds, row_sums, parties_items
        )
        totals = conn.execute(
            select(
                totals_items.c.legal_entity,
                totals_items.c.currency,
                *_bucket_sums(totals_items, bounds, totals_sums),
            )
            .group_by(totals_items.c.legal_entity, totals_items.c.currency)
            .order_by(totals_items.c.legal_entity, totals_items.c.currency)
        ).all()
        group_names = _group_names(conn, ledger) if args.group_by == "group" else {}
        transactions = None
        if args.include_transactions and args.account:
            transactions = _aging_items(rt, conn, ledger, args, where, with_party, as_of, bounds)
    return AgingReport(
        party_type=args.party_type,
        as_of=as_of,
        group_by=args.group_by,
        aging_basis=args.aging_basis,
        bucket_labels=[b.label for b in buckets],
        rows=[_aging_row(rt, ledger, args, r, buckets, group_names) for r in rows],
        total_rows=total_rows,
        totals_acct=_totals(rt, totals, buckets, by="acct"),
        totals_by_currency=_totals(rt, totals, buckets, by="cur"),
        transactions=transactions,
    )


_AGING_KEYS = {
    "party": "account",
    "group": "group_id",
    "currency": "currency",
    "legal_entity": None,
}
"""The key of an aging row besides its legal entity, per ``group_by``."""


def _past_open_items(rt: ErpRuntime, args: AgingArgs, as_of, le, currency, with_party, bounds):
    """A past day's open items from the summaries: one row per series and bucket from the
    Fenwick tree where the ERP has one, else one per series and aging date."""
    filters = {"legal_entity": le, "currency": currency, "group_id": args.group_id,
               "with_party": with_party}  # fmt: skip
    if rt.summaries.tree is not None:
        items = open_bucket_history(
            rt.summaries.tree, args.party_type, args.aging_basis, as_of, bounds, **filters
        )
        if items is not None:
            return items
    return open_item_history(args.party_type, args.aging_basis, as_of, **filters)


def _bucket_sums(items, bounds, sums: Sums = RAW) -> list:
    """Per bucket, the open amount in the accounting currency (``acct_i``) and in the transaction
    currency (``cur_i``, meaningful where one currency is summed)."""
    out = []
    for name, column in (("acct", items.c.open_acct), ("cur", items.c.open_cur)):
        for i, bucket in enumerate(bounds):
            amount = case((in_bucket(items.c.aging_date, bucket), column), else_=0)
            out.append(sums.total(amount).label(f"{name}_{i}"))
    return out


def _aging_page(
    rt: ErpRuntime,
    conn,
    items,
    args: AgingArgs,
    le: str | None,
    as_of: dt.date,
    bounds,
    sums: Sums = RAW,
    parties_items=None,
):
    """The returned rows only, grouped, summed, sorted and cut to ``limit`` in the database, and
    the number of rows before the cut (``le``: the call's checked legal entity, if any).

    Per party (tens of thousands of parties at 100x) the page is chosen from the per-party
    summaries where they hold (today's sums, or a past day's stretches) and only its parties get
    their bucket sums, from their own open items (``parties_items(legal_entity, accounts)``);
    groups, currencies and legal entities are few, so those take one pass, as does a party
    page the summaries cannot choose."""
    keys, summed, order = _row_columns(rt, items, args, as_of, bounds, sums)
    past = as_of < rt.today
    if args.group_by != "party" or sums.summed or (past and not _past_page_holds(rt, args, as_of)):
        one_pass = select(*keys, *summed, func.count().over().label("total_rows"))
        rows = conn.execute(one_pass.group_by(*keys).order_by(*order).limit(args.limit)).all()
        return rows, int(rows[0].total_rows) if rows else 0
    page, total = _party_page(rt, conn, args, le, as_of, keys, order)
    if not page:
        return [], total
    wanted: dict[str, list[str]] = {}
    for entity, account in page:
        wanted.setdefault(entity, []).append(account)
    # One arm per legal entity, so the open-items index looks each party up (an OR of the legal
    # entities' parties reads every open item). A past day's open amounts are computed in a
    # fenced subquery, so each arm computes them for its own parties only.
    arms = []
    for entity, accounts in wanted.items():
        if past:
            arm_items = parties_items(entity, accounts)
            arm_keys, arm_summed, _ = _row_columns(rt, arm_items, args, as_of, bounds, sums)
            arms.append(select(*arm_keys, *arm_summed).group_by(*arm_keys))
        else:
            arms.append(
                select(*keys, *summed)
                .where(keys[0] == entity, keys[1].in_(accounts))
                .group_by(*keys)
            )
    detail = conn.execute(union_all(*arms) if len(arms) > 1 else arms[0]).all()
    by_key = {(r.legal_entity, r.account): r for r in detail}
    return [by_key[key] for key in page], total


def _row_columns(rt: ErpRuntime, items, args: AgingArgs, as_of: dt.date, bounds, sums: Sums):
    """``(keys, summed, order)`` of the aging rows over ``items``: the row key, the summed
    columns of a row and the rows' order."""
    key_name = _AGING_KEYS[args.group_by]
    keys = [items.c.legal_entity] + ([items.c[key_name]] if key_name else [])
    balance = sums.total(items.c.open_acct)
    overdue = sums.total(case((items.c.aging_date < as_of, items.c.open_acct), else_=0))
    summed = [
        sums.count(items).label("n"),
        balance.label("balance"),
        overdue.label("overdue"),
        sums.total(items.c.open_cur).label("balance_cur"),
        func.min(items.c.currency).label("first_currency"),
        func.max(items.c.currency).label("last_currency"),
        *_bucket_sums(items, bounds, sums),
    ]
    order = [text_key(rt, key) for key in keys]
    if args.sort_by != "key":
        measure = balance if args.sort_by == "balance" else overdue
        order.insert(0, func.round(measure, 2).desc())
    return keys, summed, order


def _past_page_holds(rt: ErpRuntime, args: AgingArgs, as_of: dt.date) -> bool:
    """A past day's page of parties comes from the per-party stretches (by balance or key)."""
    return bool(
        rt.summaries
        and rt.summaries.history_holds(as_of)
        and args.sort_by in ("balance", "key")
        and not args.account
        and not args.currency
    )


def _party_page(
    rt: ErpRuntime, conn, args: AgingArgs, le: str | None, as_of: dt.date, keys, order
) -> tuple[list[tuple[str, str]], int]:
    """The ``(legal_entity, account)`` of the page's parties, in order, and the number of
    parties: from today's per-party sums or a past day's per-party stretches where they hold
    (the same order: their amounts are the rounded sums in cents), else grouped from the open
    items."""
    if as_of < rt.today and _past_page_holds(rt, args, as_of):
        page, count = past_party_page(
            args.party_type,
            as_of,
            legal_entity=le,
            group_id=args.group_id,
            order=args.sort_by,
            key_order=lambda column: text_key(rt, column),
        )
        chosen = [(entity, account) for entity, account in conn.execute(page.limit(args.limit))]
        return chosen, int(conn.execute(count).scalar() or 0)
    summed_order = {"balance": "balance", "key": "key"}
    if as_of == rt.today:
        summed_order["overdue"] = f"overdue_{args.aging_basis}"
    if (
        rt.summaries
        and rt.summaries.open_items_hold(as_of)
        and args.sort_by in summed_order
        and not args.account
        and not args.currency
    ):
        page, count = open_party_page(
            args.party_type,
            legal_entity=le,
            group_id=args.group_id,
            order=summed_order[args.sort_by],
            key_order=lambda column: text_key(rt, column),
        )
        chosen = [(entity, account) for entity, account in conn.execute(page.limit(args.limit))]
        return chosen, int(conn.execute(count).scalar() or 0)
    rows = conn.execute(
        select(*keys, func.count().over().label("total_rows"))
        .group_by(*keys)
        .order_by(*order)
        .limit(args.limit)
    ).all()
    parties = [(entity, account) for entity, account, _ in rows]
    return parties, int(rows[0].total_rows) if rows else 0


def _group_names(conn, ledger) -> dict[tuple[str, str], str]:
    g = ledger.group
    return {(r.legal_entity, r.group_id): r.name for r in conn.execute(select(g))}


def _aging_row(rt, ledger, args, r, buckets, group_names) -> AgingRow:
    m = r._mapping
    le = m["legal_entity"]
    facts = rt.legal_entities.get(le)
    single = m["first_currency"] if m["first_currency"] == m["last_currency"] else None
    row = AgingRow(
        legal_entity=le,
        accounting_currency=facts.accounting_currency if facts else None,
        balance_acct=money(m["balance"]),
        balance_cur=money(m["balance_cur"]) if single else None,
        currency=single,
        overdue_acct=money(m["overdue"]),
        open_transaction_count=int(m["n"]),
        buckets=[
            BucketAmount(
                label=b.label,
                from_days=b.from_days if i else None,
                to_days=b.to_days if i else None,
                amount_acct=money(m[f"acct_{i}"]),
                amount_cur=money(m[f"cur_{i}"]) if single else None,
            )
            for i, b in enumerate(buckets)
        ],
        url=None,
    )
    if args.group_by == "party":
        row.account = m["account"]
        row.name = rt.party_name(args.party_type, le, m["account"])
        row.url = rt.url(ledger.party_set, le, m["account"])
    elif args.group_by == "group":
        row.group_id = m["group_id"]
        row.name = group_names.get((le, m["group_id"]))
        row.url = rt.url(ledger.group_set, le, m["group_id"])
    elif args.group_by == "currency":
        row.currency = m["currency"]
    return row


def _totals(rt, rows, buckets, *, by: str) -> list[AgingTotal]:
    """Totals per accounting currency (``by="acct"``) or transaction currency (``"cur"``) from
    rows of ``(legal_entity, currency, acct_0.., cur_0..)``."""
    sums: dict[str, list[float]] = {}
    for row in rows:
        m = row._mapping
        if by == "acct":
            facts = rt.legal_entities.get(m["legal_entity"])
            name = facts.accounting_currency if facts else "?"
        else:
            name = m["currency"]
        values = sums.setdefault(name, [0.0] * len(buckets))
        for i in range(len(buckets)):
            values[i] += float(m[f"{by}_{i}"] or 0)
    return [
        AgingTotal(
            currency=name,
            balance=money(sum(values)),
            buckets=[
                BucketAmount(
                    label=b.label,
                    from_days=b.from_days if i else None,
                    to_days=b.to_days if i else None,
                    amount_acct=money(values[i]) if by == "acct" else 0.0,
                    amount_cur=money(values[i]) if by == "cur" else None,
                )
                for i, b in enumerate(buckets)
            ],
        )
        for name, values in sorted(sums.items())
    ]


def _aging_items(rt, conn, ledger, args, where, with_party, as_of, bounds) -> list[AgingItem]:
    """The open transactions behind one party's balance (the first 500 by aging date)."""
    t = ledger.txn
    extra = [t.c.voucher, t.c.document_number, t.c.txn_type, t.c.txn_date, t.c.due_date,
             t.c.amount_cur]  # fmt: skip
    items = open_item_rows(ledger, as_of, rt.today, basis=args.aging_basis, where=where,
                           columns=extra, with_party=with_party)  # fmt: skip
    stmt = select(items).order_by(items.c.aging_date, items.c.voucher).limit(500)
    buckets = make_buckets(args.bucket_edges)
    out = []
    for r in conn.execute(stmt):
        aging = _as_date(r.aging_date)
        out.append(
            AgingItem(
                legal_entity=r.legal_entity,
                voucher=r.voucher,
                document_number=r.document_number,
                txn_type=r.txn_type,
                txn_date=_as_date(r.txn_date),
                due_date=_as_date(r.due_date),
                currency=r.currency,
                amount_cur=money(r.amount_cur),
                open_amount_cur=money(r.open_cur),
                open_amount_acct=money(r.open_acct),
                days_overdue=max((as_of - aging).days, 0),
                bucket=buckets[bucket_of(aging, bounds)].label,
                url=rt.url(ledger.txn_set, r.legal_entity, r.voucher),
            )
        )
    return out


# --------------------------------------------------------------------------------------------------
# list_customer_transactions / list_vendor_transactions
# --------------------------------------------------------------------------------------------------


TxnType = Literal[
    "sales_invoice",
    "free_text_invoice",
    "invoice",
    "payment",
    "credit_note",
    "debit_note",
    "adjustment",
]


class TransactionArgs(PageArgs):
    account: str | None = None
    """Account id or exact name; omit for all."""
    legal_entity: str | None = None
    """Company code; omit for all."""
    txn_type: list[TxnType] | None = Field(None, max_length=7)
    """Only these types."""
    status: Literal["open", "closed", "any"] = "any"
    """open: still open today; closed: settled."""
    date_from: dt.date | None = None
    """Transaction date on or after."""
    date_to: dt.date | None = None
    """Transaction date on or before."""
    due_from: dt.date | None = None
    """Due date on or after."""
    due_to: dt.date | None = None
    """Due date on or before."""
    min_amount: float | None = Field(None, ge=0)
    """Least absolute amount."""
    max_amount: float | None = Field(None, ge=0)
    """Most absolute amount."""
    currency: str | None = None
    """Only this transaction currency."""
    overdue_as_of: dt.date | None = None
    """Open today and due before this date."""
    document_number: str | None = None
    """Exact document number or voucher."""
    sort_by: Literal["txn_date", "due_date", "amount", "open_amount", "voucher", "account"] = (
        "txn_date"
    )
    """Row order."""
    descending: bool = True
    """Newest / largest first."""


def _transaction_output(name: str, table):
    record = record_model(table)

    class Item(record):
        party_name: str | None = None
        """Name of the customer or vendor."""
        days_overdue: int | None = None
        """Days past due as of overdue_as_of (or today) for open items with a due date."""

    Item.__name__ = f"{name}Item"

    class Page(PageInfo):
        items: list[Item]
        totals: list[CurrencyTotal]
        """Per transaction currency over all matching rows: count, sum of amount, sum of open
        amount."""
        total_amount_acct: dict[str, float]
        """Sum of amount_acct per accounting currency over all matching rows."""
        total_open_amount_acct: dict[str, float]
        """Sum of open_amount_acct per accounting currency over all matching rows."""

    Page.__name__ = f"{name}Page"
    return Item, Page


CustomerTransactionItem, CustomerTransactionPage = _transaction_output(
    "CustomerTransaction", s.CustomerTransaction
)
VendorTransactionItem, VendorTransactionPage = _transaction_output(
    "VendorTransaction", s.VendorTransaction
)


def _list_transactions(rt: ErpRuntime, party_type: str, args: TransactionArgs, item_cls, page_cls):
    ledger = LEDGERS[party_type]
    t = ledger.txn
    for name, low, high in (
        ("date_from/date_to", args.date_from, args.date_to),
        ("due_from/due_to", args.due_from, args.due_to),
        ("min_amount/max_amount", args.min_amount, args.max_amount),
    ):
        check_range(name, low, high)
    le = rt.check_legal_entity(args.legal_entity)
    clauses = []
    if args.account:
        le, account = rt.resolve_party(party_type, args.account, le)
        clauses.append(ledger.account == account)
    if le:
        clauses.append(t.c.legal_entity == le)
    if args.txn_type:
        allowed = _TXN_TYPES[party_type]
        bad = [x for x in args.txn_type if x not in allowed]
        if bad:
            raise ToolError(f"txn_type: unknown {bad}; allowed: {', '.join(allowed)}")
        clauses.append(t.c.txn_type.in_(args.txn_type))
    if args.status == "open":
        clauses.append(t.c.open_amount_cur != 0)
    elif args.status == "closed":
        clauses.append(t.c.open_amount_cur == 0)
    for column, op, value in (
        (t.c.txn_date, ">=", args.date_from),
        (t.c.txn_date, "<=", args.date_to),
        (t.c.due_date, ">=", args.due_from),
        (t.c.due_date, "<=", args.due_to),
    ):
        if value is not None:
            clauses.append(column >= value if op == ">=" else column <= value)
    if args.min_amount is not None:
        clauses.append(func.abs(t.c.amount_cur) >= args.min_amount)
    if args.max_amount is not None:
        clauses.append(func.abs(t.c.amount_cur) <= args.max_amount)
    if args.currency:
        clauses.append(t.c.currency == rt.check_currency(args.currency))
    if args.overdue_as_of:
        clauses += [t.c.open_amount_cur != 0, t.c.due_date < args.overdue_as_of]
    if args.document_number:
        clauses.append(
            or_(t.c.document_number == args.document_number, t.c.voucher == args.document_number)
        )
    sort_column = {
        "txn_date": t.c.txn_date,
        "due_date": t.c.due_date,
        "amount": t.c.amount_cur,
        "open_amount": t.c.open_amount_cur,
        "voucher": t.c.voucher,
        "account": ledger.account,
    }[args.sort_by]
    order = [sort_column.desc() if args.descending else sort_column.asc(), t.c.voucher]
    reference = args.overdue_as_of or rt.today
    with rt.engine.connect() as conn:
        rows, info = page_of(conn, select(t).where(*clauses), order, args)
        totals = conn.execute(
            select(
                t.c.currency, func.count(), func.sum(t.c.amount_cur), func.sum(t.c.open_amount_cur)
            )
            .where(*clauses)
            .group_by(t.c.currency)
            .order_by(t.c.currency)
        ).all()
        acct = conn.execute(
            select(t.c.legal_entity, func.sum(t.c.amount_acct), func.sum(t.c.open_amount_acct))
            .where(*clauses)
            .group_by(t.c.legal_entity)
        ).all()
    total_acct: dict[str, float] = {}
    total_open_acct: dict[str, float] = {}
    for le_code, amount, open_amount in acct:
        cur = rt.legal_entities[le_code].accounting_currency
        total_acct[cur] = money(total_acct.get(cur, 0) + float(amount or 0))
        total_open_acct[cur] = money(total_open_acct.get(cur, 0) + float(open_amount or 0))
    items = []
    for row in rows:
        m = row._mapping
        overdue = None
        if m["due_date"] is not None and m["open_amount_cur"] != 0:
            overdue = max((reference - m["due_date"]).days, 0)
        items.append(
            to_record(
                rt,
                ledger.txn_model,
                row,
                party_name=rt.party_name(party_type, m["legal_entity"], m[ledger.account_column]),
                days_overdue=overdue,
                model=item_cls,
            )
        )
    return page_cls(
        **info.model_dump(),
        items=items,
        totals=currency_totals(totals),
        total_amount_acct=total_acct,
        total_open_amount_acct=total_open_acct,
    )


_TXN_TYPES = {
    "customer": ("sales_invoice", "free_text_invoice", "payment", "credit_note", "adjustment"),
    "vendor": ("invoice", "payment", "credit_note", "debit_note", "adjustment"),
}


@erp_tool("finance", TransactionArgs)
def list_customer_transactions(rt: ErpRuntime, args: TransactionArgs) -> CustomerTransactionPage:
    """Customer (AR) ledger transactions with amounts, open amounts and dates; totals over all
    matches."""
    return _list_transactions(
        rt, "customer", args, CustomerTransactionItem, CustomerTransactionPage
    )


@erp_tool("finance", TransactionArgs)
def list_vendor_transactions(rt: ErpRuntime, args: TransactionArgs) -> VendorTransactionPage:
    """Vendor (AP) ledger transactions with amounts, open amounts and dates; totals over all
    matches."""
    return _list_transactions(rt, "vendor", args, VendorTransactionItem, VendorTransactionPage)


# --------------------------------------------------------------------------------------------------
# list_settlements
# --------------------------------------------------------------------------------------------------


class SettlementArgs(PageArgs):
    party_type: PartyType = "customer"
    account: str | None = None
    """Party account id; omit for all."""
    legal_entity: str | None = None
    voucher: str | None = None
    """A voucher on either side."""
    date_from: dt.date | None = None
    """Settled on or after."""
    date_to: dt.date | None = None
    """Settled on or before."""


class SettlementItem(StrictModel):
    legal_entity: str
    settlement_id: str
    account: str
    party_name: str | None
    debit_voucher: str
    """The invoice (or adjustment) settled."""
    credit_voucher: str
    """The payment or note applied."""
    settled_date: dt.date
    amount_cur: float
    """Amount taken off the invoice (including any cash discount)."""
    cash_discount_taken: float
    currency: str | None
    debit_document_number: str | None
    credit_document_number: str | None
    credit_txn_type: str | None
    url: str | None
    debit_url: str | None
    credit_url: str | None


class SettlementPage(PageInfo):
    items: list[SettlementItem]
    total_amount_cur: dict[str, float]
    """Sum of settled amounts per currency over all matching rows."""
    total_cash_discount_taken: dict[str, float]


@erp_tool("finance", SettlementArgs)
def list_settlements(rt: ErpRuntime, args: SettlementArgs) -> SettlementPage:
    """Settlements: which payment or note settled which invoice, when, how much, any discount."""
    ledger = LEDGERS[args.party_type]
    st, t = ledger.settlement, ledger.txn
    check_range("date_from/date_to", args.date_from, args.date_to)
    le = rt.check_legal_entity(args.legal_entity)
    account_col = st.c[ledger.account_column]
    clauses = []
    if args.account:
        le, account = rt.resolve_party(args.party_type, args.account, le)
        clauses.append(account_col == account)
    if le:
        clauses.append(st.c.legal_entity == le)
    if args.voucher:
        clauses.append(_settlements_of_voucher(rt, st, le, args.voucher.strip()))
    if args.date_from:
        clauses.append(st.c.settled_date >= args.date_from)
    if args.date_to:
        clauses.append(st.c.settled_date <= args.date_to)
    debit = t.alias("debit")
    credit = t.alias("credit")
    stmt = (
        select(
            st,
            debit.c.currency.label("d_currency"),
            debit.c.document_number.label("d_doc"),
            credit.c.document_number.label("c_doc"),
            credit.c.txn_type.label("c_type"),
        )
        .join_from(
            st,
            debit,
            and_(debit.c.legal_entity == st.c.legal_entity, debit.c.voucher == st.c.debit_voucher),
            isouter=True,
        )
        .join_from(
            st,
            credit,
            and_(
                credit.c.legal_entity == st.c.legal_entity, credit.c.voucher == st.c.credit_voucher
            ),
            isouter=True,
        )
        .where(*clauses)
    )
    # newest first, as an index holds them (legal entity last: settlement ids repeat across them)
    order = [st.c.settled_date.desc(), st.c.settlement_id, st.c.legal_entity]
    by_day = (
        rt.summaries is not None
        and rt.summaries.history_before is not None
        and not args.account
        and not args.voucher
    )
    with rt.engine.connect() as conn:
        total = None
        if by_day:
            count, totals_stmt = settlement_day_totals(
                args.party_type, le, args.date_from, args.date_to
            )
            total = int(conn.execute(count).scalar() or 0)
        rows, info = page_of(conn, stmt, order, args, total=total, row_key=st.c.id)
        if not by_day:
            totals_stmt = (
                select(
                    debit.c.currency, func.sum(st.c.amount_cur), func.sum(st.c.cash_discount_taken)
                )
                .join_from(
                    st,
                    debit,
                    and_(
                        debit.c.legal_entity == st.c.legal_entity,
                        debit.c.voucher == st.c.debit_voucher,
                    ),
                )
                .where(*clauses)
                .group_by(debit.c.currency)
            )
        totals = conn.execute(totals_stmt).all()
    items = [
        SettlementItem(
            legal_entity=r.legal_entity,
            settlement_id=r.settlement_id,
            account=r._mapping[ledger.account_column],
            party_name=rt.party_name(
                args.party_type, r.legal_entity, r._mapping[ledger.account_column]
            ),
            debit_voucher=r.debit_voucher,
            credit_voucher=r.credit_voucher,
            settled_date=r.settled_date,
            amount_cur=money(r.amount_cur),
            cash_discount_taken=money(r.cash_discount_taken),
            currency=r.d_currency,
            debit_document_number=r.d_doc,
            credit_document_number=r.c_doc,
            credit_txn_type=r.c_type,
            url=rt.url(ledger.settlement_set, r.legal_entity, r.settlement_id),
            debit_url=rt.url(ledger.txn_set, r.legal_entity, r.debit_voucher),
            credit_url=rt.url(ledger.txn_set, r.legal_entity, r.credit_voucher),
        )
        for r in rows
    ]
    return SettlementPage(
        **info.model_dump(),
        items=items,
        total_amount_cur={c: money(a) for c, a, _ in totals},
        total_cash_discount_taken={c: money(d) for c, _, d in totals},
    )


def _settlements_of_voucher(rt: ErpRuntime, st, le: str | None, voucher: str):
    """Settlements with ``voucher`` on either side: two lookups in the (legal entity, voucher)
    indexes, never a scan of the legal entity (as ``debit = v OR credit = v`` would be)."""
    scope = st.c.legal_entity.in_([le] if le else list(rt.legal_entities))
    sides = [
        select(st.c.id).where(scope, st.c[f"{side}_voucher"] == voucher)
        for side in ("debit", "credit")
    ]
    return st.c.id.in_(union(*sides))


# --------------------------------------------------------------------------------------------------
# list_disputes
# --------------------------------------------------------------------------------------------------


class DisputeArgs(PageArgs):
    account: str | None = None
    legal_entity: str | None = None
    kind: Literal["dispute", "deduction", "any"] = "any"
    status: Literal["open", "resolved", "any"] = "any"
    opened_from: dt.date | None = None
    opened_to: dt.date | None = None


class DisputeItem(record_model(s.CustomerDispute)):
    party_name: str | None = None
    invoice_url: str | None = None
    """Link to the disputed invoice."""


class DisputePage(PageInfo):
    items: list[DisputeItem]
    total_amount: float
    """Sum of disputed amounts over all matching rows."""


@erp_tool("finance", DisputeArgs)
def list_disputes(rt: ErpRuntime, args: DisputeArgs) -> DisputePage:
    """Customer disputes and deductions with reason, amount, opened date and status."""
    d = s.CustomerDispute.__table__
    check_range("opened_from/opened_to", args.opened_from, args.opened_to)
    le = rt.check_legal_entity(args.legal_entity)
    clauses = []
    if args.account:
        le, account = rt.resolve_party("customer", args.account, le)
        clauses.append(d.c.customer_account == account)
    if le:
        clauses.append(d.c.legal_entity == le)
    if args.kind != "any":
        clauses.append(d.c.kind == args.kind)
    if args.status != "any":
        clauses.append(d.c.status == args.status)
    if args.opened_from:
        clauses.append(d.c.opened_date >= args.opened_from)
    if args.opened_to:
        clauses.append(d.c.opened_date <= args.opened_to)
    with rt.engine.connect() as conn:
        rows, info = page_of(
            conn, select(d).where(*clauses), [d.c.opened_date.desc(), d.c.dispute_id], args
        )
        total = conn.execute(select(func.sum(d.c.amount)).where(*clauses)).scalar()
    items = [
        to_record(
            rt,
            s.CustomerDispute,
            r,
            party_name=rt.party_name("customer", r.legal_entity, r.customer_account),
            invoice_url=rt.url("customer-transactions", r.legal_entity, r.voucher),
            model=DisputeItem,
        )
        for r in rows
    ]
    return DisputePage(**info.model_dump(), items=items, total_amount=money(total))


# --------------------------------------------------------------------------------------------------
# list_cash_discounts
# --------------------------------------------------------------------------------------------------


class CashDiscountArgs(PageArgs):
    party_type: Literal["customer", "vendor", "any"] = "any"
    account: str | None = None
    legal_entity: str | None = None
    as_of: dt.date | None = None
    """Reference date; default the ERP's today."""
    expiring_within_days: int | None = Field(None, ge=0, le=366)
    """Discount date within N days of as_of."""
    state: Literal["available", "expired", "taken", "missed", "any"] = "any"
    """available: open, date not passed; expired: open, passed; taken; missed."""


class CashDiscountItem(StrictModel):
    party_type: str
    legal_entity: str
    account: str
    party_name: str | None
    voucher: str
    document_number: str
    txn_date: dt.date
    due_date: dt.date | None
    currency: str
    amount_cur: float
    open_amount_cur: float
    cash_discount_date: dt.date
    cash_discount_amount: float
    days_until_discount_date: int
    """Negative when the discount date has passed."""
    discount_taken: float
    """Cash discount taken in settlements."""
    state: str
    url: str | None


class CashDiscountPage(PageInfo):
    as_of: dt.date
    items: list[CashDiscountItem]
    total_discount_amount: dict[str, float]
    """Sum of cash_discount_amount per currency over all matching rows."""


@erp_tool("finance", CashDiscountArgs)
def list_cash_discounts(rt: ErpRuntime, args: CashDiscountArgs) -> CashDiscountPage:
    """Invoices with a cash discount: date, amount, available, expiring, taken or missed."""
    as_of = args.as_of or rt.today
    le = rt.check_legal_entity(args.legal_entity)
    sides = ["customer", "vendor"] if args.party_type == "any" else [args.party_type]
    if args.account and args.party_type == "any":
        raise ToolError("account needs party_type customer or vendor")
    offset = cursor_offset(args)
    totals: dict[str, float] = {}
    total_count = 0
    selects = []
    with rt.engine.connect() as conn:
        for side in sides:
            stmt, side_totals, count = _cash_discounts(
                rt, conn, side, args, le, as_of, offset + args.page_size
            )
            selects.append(stmt)
            total_count += count
            for currency, amount in side_totals.items():
                totals[currency] = money(totals.get(currency, 0) + amount)
        both = union_all(*selects).subquery() if len(selects) > 1 else selects[0].subquery()
        rows = conn.execute(
            select(both)
            .order_by(both.c.cash_discount_date, both.c.legal_entity, both.c.voucher)
            .limit(args.page_size)
            .offset(offset)
        ).all()
    items = [_cash_discount_item(rt, r._mapping, as_of) for r in rows]
    return CashDiscountPage(
        **page_info(args, offset, len(items), total_count).model_dump(),
        as_of=as_of,
        items=items,
        total_discount_amount=totals,
    )


def _cash_discounts(rt, conn, side, args, le, as_of, first: int):
    """The labelled row select of one side's ``first`` discounted invoices in the page order,
    its totals and its count (the discount taken is summed for those rows only)."""
    ledger = LEDGERS[side]
    t, st = ledger.txn, ledger.settlement
    clauses = [t.c.cash_discount_date.is_not(None), t.c.posted.is_(True)]
    if args.account:
        le, account = rt.resolve_party(side, args.account, le)
        clauses.append(ledger.account == account)
    if le:
        clauses.append(t.c.legal_entity == le)
    taken = (
        select(func.coalesce(func.sum(st.c.cash_discount_taken), 0))
        .where(st.c.legal_entity == t.c.legal_entity, st.c.debit_voucher == t.c.voucher)
        .scalar_subquery()
    )
    is_open = t.c.open_amount_cur != 0
    has_taken = exists().where(
        st.c.legal_entity == t.c.legal_entity,
        st.c.debit_voucher == t.c.voucher,
        st.c.cash_discount_taken > 0,
    )
    if args.expiring_within_days is not None:
        clauses += [
            is_open,
            t.c.cash_discount_date >= as_of,
            t.c.cash_discount_date <= as_of + dt.timedelta(days=args.expiring_within_days),
        ]
    state_clause = {
        "available": and_(is_open, t.c.cash_discount_date >= as_of, ~has_taken),
        "expired": and_(is_open, t.c.cash_discount_date < as_of, ~has_taken),
        "taken": has_taken,
        "missed": and_(~has_taken, ~is_open),
        "any": None,
    }[args.state]
    if state_clause is not None:
        clauses.append(state_clause)
    ahead = (
        select(t.c.id)
        .where(*clauses)
        .order_by(t.c.cash_discount_date, t.c.legal_entity, t.c.voucher)
        .limit(first)
        .subquery("ahead")
    )
    stmt = select(
        literal(side).label("party_type"),
        t.c.legal_entity,
        ledger.account.label("account"),
        t.c.voucher,
        t.c.document_number,
        t.c.txn_date,
        t.c.due_date,
        t.c.currency,
        t.c.amount_cur,
        t.c.open_amount_cur,
        t.c.cash_discount_date,
        t.c.cash_discount_amount,
        taken.label("taken"),
    ).select_from(ahead.join(t, t.c.id == ahead.c.id))
    count_stmt = select(func.count()).select_from(t).where(*clauses)
    totals_stmt = (
        select(t.c.currency, func.sum(t.c.cash_discount_amount))
        .where(*clauses)
        .group_by(t.c.currency)
    )
    summarised = rt.summaries is not None and rt.summaries.history_before is not None
    expiring = args.expiring_within_days is not None and args.state == "any"
    if summarised and expiring and not args.account:
        # the same open invoices summed per discount date: the cost grows with the days
        count_stmt, totals_stmt = discount_day_totals(
            side, le, as_of, as_of + dt.timedelta(days=args.expiring_within_days)
        )
    count = conn.execute(count_stmt).scalar()
    totals = {currency: float(amount or 0) for currency, amount in conn.execute(totals_stmt)}
    return stmt, totals, int(count or 0)


def _cash_discount_item(rt: ErpRuntime, m, as_of: dt.date) -> CashDiscountItem:
    side = m["party_type"]
    discount_taken = money(m["taken"])
    cash_discount_date = _as_date(m["cash_discount_date"])
    return CashDiscountItem(
        party_type=side,
        legal_entity=m["legal_entity"],
        account=m["account"],
        party_name=rt.party_name(side, m["legal_entity"], m["account"]),
        voucher=m["voucher"],
        document_number=m["document_number"],
        txn_date=_as_date(m["txn_date"]),
        due_date=_as_date(m["due_date"]),
        currency=m["currency"],
        amount_cur=money(m["amount_cur"]),
        open_amount_cur=money(m["open_amount_cur"]),
        cash_discount_date=cash_discount_date,
        cash_discount_amount=money(m["cash_discount_amount"]),
        days_until_discount_date=(cash_discount_date - as_of).days,
        discount_taken=discount_taken,
        state=_discount_state(m, discount_taken, as_of),
        url=rt.url(LEDGERS[side].txn_set, m["legal_entity"], m["voucher"]),
    )


def _as_date(value) -> dt.date | None:
    """A date from a union row (SQLite returns the text of a date column in a compound select)."""
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _discount_state(m, discount_taken: float, as_of: dt.date) -> str:
    if discount_taken > 0:
        return "taken"
    if m["open_amount_cur"] == 0:
        return "missed"
    return "available" if _as_date(m["cash_discount_date"]) >= as_of else "expired"
