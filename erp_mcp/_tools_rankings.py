"""Ranking parties by money: which customers (or vendors) were invoiced, paid or still owe most."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field
from sqlalchemy import String, case, func, literal, select, union_all

from erp_mcp._common import check_range, text_key
from erp_mcp._ledger import LEDGERS
from erp_mcp._records import StrictModel, money
from erp_mcp._runtime import ErpRuntime
from erp_mcp._summaries import amount_sum, as_money
from erp_mcp._tooling import erp_tool
from synthetic_erp._summaries import OPEN_PARTY, OPEN_PARTY_TOTAL, PARTY_PERIOD, PERIOD_TOTAL

INVOICE_TYPES = {
    "customer": ("sales_invoice", "free_text_invoice"),
    "vendor": ("invoice",),
}


class RankArgs(StrictModel):
    party_type: Literal["customer", "vendor"] = "customer"
    """AR or AP."""
    measure: Literal["invoiced", "paid", "open"] = "invoiced"
    """invoiced or paid in the period, or open today on transactions of the period."""
    date_from: dt.date | None = None
    """On or after."""
    date_to: dt.date | None = None
    """On or before; default today."""
    legal_entity: str | None = None
    """Company code; omit to rank within each."""
    top_n: int = Field(10, ge=1, le=100)
    """How many parties per legal entity."""
    ascending: bool = False
    """Smallest first instead of largest first."""


class RankedParty(StrictModel):
    rank: int
    """1 = largest (smallest with ascending) within its legal entity."""
    legal_entity: str
    account: str
    name: str | None
    amount_acct: float
    """The measure in the accounting currency."""
    accounting_currency: str
    transactions: int
    """Transactions that make up the amount."""
    url: str | None
    """The party's record link."""


class PartyRanking(StrictModel):
    party_type: str
    measure: str
    date_from: dt.date | None
    date_to: dt.date | None
    rows: list[RankedParty]
    totals_acct: dict[str, float]
    """The measure over every party (not just the top), per accounting currency."""
    parties_counted: dict[str, int]
    """Parties with a non-zero amount, per legal entity."""
    truncated: bool = False
    """True when rows were cut to stay within the result budget (about 100,000 characters)."""


@erp_tool("finance", RankArgs)
def rank_parties(rt: ErpRuntime, args: RankArgs) -> PartyRanking:
    """Rank parties by invoiced, paid or open amount in a period (top_n per legal entity)."""
    check_range("date_from/date_to", args.date_from, args.date_to)
    le = rt.check_legal_entity(args.legal_entity)
    les = [le] if le else list(rt.legal_entities)
    ledger = LEDGERS[args.party_type]
    if (
        args.measure != "open"
        and rt.summaries
        and rt.summaries.has_period(les, args.date_from, args.date_to)
    ):  # a summarised period: the per-party sums are stored, sorted by amount
        rows, totals, counted = _summary_top_and_totals(rt, args, les)
        return _ranking(rt, args, ledger, rows, totals, counted)
    if args.measure == "open" and not args.date_from and not args.date_to and rt.summaries:
        # open today on any transaction: today's per-party sums, read in the order of their
        # balance index
        rows, totals, counted = _open_top_and_totals(rt, args, les)
        return _ranking(rt, args, ledger, rows, totals, counted)
    t = ledger.txn
    clauses = [t.c.posted.is_(True)]
    if le:
        clauses.append(t.c.legal_entity == le)
    if args.date_from:
        clauses.append(t.c.txn_date >= args.date_from)
    if args.date_to:
        clauses.append(t.c.txn_date <= args.date_to)
    if args.measure == "invoiced":
        clauses.append(t.c.txn_type.in_(INVOICE_TYPES[args.party_type]))
        amount = func.sum(t.c.amount_acct)
    elif args.measure == "paid":
        clauses.append(t.c.txn_type == "payment")
        amount = -func.sum(t.c.amount_acct)
    else:
        # closed_date is NULL on every open line: it lets the open-items index serve the query
        clauses += [t.c.closed_date.is_(None), t.c.open_amount_cur != 0]
        amount = func.sum(t.c.open_amount_acct)
    party = ledger.account
    if args.measure == "invoiced" and len(INVOICE_TYPES[args.party_type]) > 1:
        # Several types come from the by-type index in several runs, not in party order; as an
        # expression the party key cannot pull SQLite to the party index for its order (which
        # reads every ledger row of the legal entity), so the covering by-type index serves.
        party = func.coalesce(party, party)
    per_party = (
        select(
            t.c.legal_entity,
            party.label("account"),
            amount.label("amount"),
            func.count().label("n"),
        )
        .where(*clauses)
        .group_by(t.c.legal_entity, party)
        .cte("per_party")
    )
    rows, totals, counted = _top_and_totals(rt, per_party, args, les)
    return _ranking(rt, args, ledger, rows, totals, counted)


def _ranking(rt: ErpRuntime, args: RankArgs, ledger, rows, totals, counted) -> PartyRanking:
    return PartyRanking(
        party_type=args.party_type,
        measure=args.measure,
        date_from=args.date_from,
        date_to=args.date_to,
        rows=[
            RankedParty(
                rank=rank,
                legal_entity=r.legal_entity,
                account=r.account,
                name=rt.party_name(args.party_type, r.legal_entity, r.account),
                amount_acct=money(r.amount),
                accounting_currency=rt.legal_entities[r.legal_entity].accounting_currency,
                transactions=int(r.n),
                url=rt.url(ledger.party_set, r.legal_entity, r.account),
            )
            for rank, r in rows
        ],
        totals_acct=totals,
        parties_counted=counted,
    )


def _top_and_totals(rt: ErpRuntime, per_party, args: RankArgs, les: list[str]):
    """In one statement over the per-party sums (computed once: both databases materialise a
    CTE read more than once): the top_n of each legal entity, sorted and cut in the database,
    and per legal entity the total and the parties with a non-zero amount. Window functions
    would sort every party again (most of the time at 100x)."""
    g = per_party.c
    ordered = [g.amount.asc() if args.ascending else g.amount.desc(), text_key(rt, g.account)]
    columns = [g.legal_entity, g.account, g.amount, g.n]
    tops = [
        select(literal(0).label("part"), *columns)
        .where(g.legal_entity == code)
        .order_by(*ordered)
        .limit(args.top_n)
        .subquery()
        for code in les
    ]
    summary = select(
        literal(1).label("part"),
        g.legal_entity,
        literal(None, String).label("account"),
        func.sum(g.amount).label("amount"),
        func.sum(case((g.amount != 0, 1), else_=0)).label("n"),
    ).group_by(g.legal_entity)
    with rt.engine.connect() as conn:
        found = conn.execute(union_all(*(select(top) for top in tops), summary)).all()
    return _ranked(rt, args, les, found)


def _summary_top_and_totals(rt: ErpRuntime, args: RankArgs, les: list[str]):
    """``_top_and_totals`` from the period summaries: each legal entity's top_n read in the order
    of the amount index, and its stored total and non-zero parties."""
    pp, pt = PARTY_PERIOD, PERIOD_TOTAL

    def period(table, codes: list[str]) -> list:
        return [table.c.party_type == args.party_type, table.c.legal_entity.in_(codes),
                table.c.measure == args.measure, table.c.period_start == args.date_from,
                table.c.period_end == args.date_to]  # fmt: skip

    order = [
        pp.c.amount.asc() if args.ascending else pp.c.amount.desc(),
        text_key(rt, pp.c.account),
    ]
    tops = [
        select(
            literal(0).label("part"),
            pp.c.legal_entity,
            pp.c.account,
            as_money(pp.c.amount).label("amount"),
            pp.c.n,
        )
        .where(*period(pp, [code]))
        .order_by(*order)
        .limit(args.top_n)
        .subquery()
        for code in les
    ]
    summary = select(
        literal(1).label("part"),
        pt.c.legal_entity,
        literal(None, String).label("account"),
        as_money(pt.c.amount).label("amount"),
        pt.c.parties.label("n"),
    ).where(*period(pt, les))
    with rt.engine.connect() as conn:
        found = conn.execute(union_all(*(select(top) for top in tops), summary)).all()
    return _ranked(rt, args, les, found)


def _open_top_and_totals(rt: ErpRuntime, args: RankArgs, les: list[str]):
    """``_top_and_totals`` of the open balances today, from ``summary_open_party`` (the same
    open items: posted, not closed, open amount not zero; amounts in cents)."""
    op = OPEN_PARTY
    mine = [op.c.party_type == args.party_type]
    order = [
        op.c.open_acct.asc() if args.ascending else op.c.open_acct.desc(),
        text_key(rt, op.c.account),
    ]
    tops = [
        select(
            literal(0).label("part"),
            op.c.legal_entity,
            op.c.account,
            as_money(op.c.open_acct).label("amount"),
            op.c.n,
        )
        .where(*mine, op.c.legal_entity == code)
        .order_by(*order)
        .limit(args.top_n)
        .subquery()
        for code in les
    ]
    summary = _open_totals(rt, args, les)
    with rt.engine.connect() as conn:
        found = conn.execute(union_all(*(select(top) for top in tops), summary)).all()
    return _ranked(rt, args, les, found)


def _open_totals(rt: ErpRuntime, args: RankArgs, les: list[str]):
    """Per legal entity, the open balance today and the parties with a non-zero one (part 1
    of :func:`_open_top_and_totals`): one row each where the ERP has the totals, else summed
    over its parties."""
    if rt.summaries.party_totals:
        pt = OPEN_PARTY_TOTAL
        return select(
            literal(1).label("part"), pt.c.legal_entity, literal(None, String).label("account"),
            as_money(pt.c.open_acct).label("amount"), pt.c.parties.label("n"),
        ).where(pt.c.party_type == args.party_type, pt.c.legal_entity.in_(les))  # fmt: skip
    op = OPEN_PARTY
    return (
        select(
            literal(1).label("part"),
            op.c.legal_entity,
            literal(None, String).label("account"),
            amount_sum(op.c.open_acct).label("amount"),
            func.sum(case((op.c.open_acct != 0, 1), else_=0)).label("n"),
        )
        .where(op.c.party_type == args.party_type, op.c.legal_entity.in_(les))
        .group_by(op.c.legal_entity)
    )


def _ranked(rt: ErpRuntime, args: RankArgs, les: list[str], found):
    """The ranked rows of each legal entity, the totals per accounting currency and the
    non-zero parties per legal entity, from the top rows (part 0) and the per-legal-entity
    sums (part 1)."""
    ranked: list[tuple[int, object]] = []
    sign = 1 if args.ascending else -1
    for code in sorted(les):
        mine = [r for r in found if r.part == 0 and r.legal_entity == code]
        mine.sort(key=lambda r: (sign * float(r.amount or 0), r.account))
        ranked += list(enumerate(mine, start=1))
    totals: dict[str, float] = {}
    counted: dict[str, int] = {}
    for r in sorted(found, key=lambda r: r.legal_entity):
        if r.part == 1 and r.n:
            currency = rt.legal_entities[r.legal_entity].accounting_currency
            totals[currency] = money(totals.get(currency, 0) + float(r.amount or 0))
            counted[r.legal_entity] = int(r.n)
    return ranked, totals, dict(sorted(counted.items()))
