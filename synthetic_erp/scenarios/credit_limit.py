"""Credit Limit (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from ledgerbench.dataset._records import ExpectedFact
from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    LIST_LIMIT,
    PERCENT_TOLERANCE,
    Answer,
    OracleContext,
    _amount,
    _count,
    _cust_items,
    _le_filter,
    _none,
    _num,
    _sum,
    _top,
    _where,
    ledger_open_items,
    listed,
    long_date,
    money,
    no_records,
    party,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft

template = registrar("Credit Limit", "AR")


def _choose_credit_hold_list(c: Chooser) -> Draft:
    le = None if c.rng.random() < 0.2 else c.view.pick_le(c.rng)
    return c.le_draft({"legal_entity": le})


def _choose_over_limit_group_top(c: Chooser) -> Draft:
    le, n, group = c.view.pick_le(c.rng), c.rng.choice((3, 5, 10)), c.group()
    return c.le_draft({"legal_entity": le, "group_id": group, "n": n}, group_id=group, n=str(n))


@template(
    "credit_limit",
    party="customer",
    phrasings=(
        "How much credit does {who} have left {where} {asof}, and what is its limit?",
        "What limit have we set for {who} {where}, and how much of it is still available {asof}?",
    ),
)
def credit_limit(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    balance = _sum(row.open_amount_acct for row in _cust_items(ctx, p))
    limit = p.row.credit_limit
    available = limit - balance
    acct = ctx.currency(p.legal_entity)
    return Answer(
        text=f"{p.label} in {p.legal_entity} has a credit limit of {money(limit, acct)}; "
        f"with a balance of {money(balance, acct)} as of {long_date(ctx.today)}, the "
        f"available credit is {money(available, acct)} (accounting currency)"
        + (" (over the limit)." if available < 0 else "."),
        facts=[
            _amount("credit_limit", limit),
            _amount("balance", balance),
            _amount("available_credit", available),
        ],
        refs=[p.path],
        records=1,
    )


@template(
    "credit_utilization",
    party="customer",
    phrasings=(
        "How much of its credit limit has {who} used up {where} {asof}, as a percentage?",
        "What share of the credit line of {who} {where} is in use {asof}?",
    ),
)
def credit_utilization(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    balance = _sum(row.open_amount_acct for row in _cust_items(ctx, p))
    limit = p.row.credit_limit
    acct = ctx.currency(p.legal_entity)
    if limit == 0:
        return Answer(
            text=f"{p.label} has no credit limit (0), so utilisation is undefined; the balance is "
            f"{money(balance, acct)}.",
            facts=[_amount("credit_limit", 0), _amount("balance", balance)],
            refs=[p.path],
            records=1,
        )
    percent = balance / limit * 100
    return Answer(
        text=f"{p.label} in {p.legal_entity} uses {percent:.1f}% of its credit limit as of "
        f"{long_date(ctx.today)}: balance {money(balance, acct)} against a limit of "
        f"{money(limit, acct)} (accounting currency).",
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


@template(
    "credit_hold_list",
    choose=_choose_credit_hold_list,
    phrasings=(
        "Who is blocked on credit hold {where} {asof}?",
        "List every customer {where} that we have put on credit hold {asof}.",
    ),
)
def credit_hold_list(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params.get("legal_entity")
    c = s.Customer
    rows = ctx.rows(
        select(c)
        .where(c.credit_hold.is_(True), *_le_filter(c, le))
        .order_by(c.legal_entity, c.account)
    )
    if not rows:
        return Answer(
            text=f"No customers are on credit hold {_where(le)}.", facts=[_none("customers")]
        )
    lines = [f"{r.name} ({r.account}, {r.legal_entity})" for r in rows]
    return listed(
        rows,
        lines,
        f"{len(rows)} customer(s) are on credit hold {_where(le)} as of {long_date(ctx.today)}",
        [
            _count("customers_on_hold", len(rows)),
            _top("customers", [r.account for r in rows], ordered=False),
        ],
        [record_path("customers", r.legal_entity, r.account) for r in rows[:LIST_LIMIT]],
    )


@template(
    "over_limit_group_top",
    choose=_choose_over_limit_group_top,
    phrasings=(
        "Which {n} customers in group {group_id} {where} are furthest over their credit "
        "limit {asof}?",
        "Rank the customers of group {group_id} {where} that exceed their credit limit and "
        "give me the top {n} {asof}.",
    ),
)
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
            balances[row.customer_account] += row.open_amount_acct
    over = [
        (balances[a] - r.credit_limit, a)
        for a, r in customers.items()
        if balances[a] - r.credit_limit > 0
    ]
    over.sort(key=lambda x: (-x[0], x[1]))
    over = over[:n]
    if not over:
        return no_records(
            f"No customer in group {group} in {le} is over its credit limit as of "
            f"{long_date(ctx.today)}.",
            "customers",
            counted=False,
        )
    lines = [f"{customers[a].name} ({a}) over by {money(v, ctx.currency(le))}" for v, a in over]
    return Answer(
        text=f"Customers in group {group} in {le} over their credit limit as of "
        f"{long_date(ctx.today)}, largest excess first: " + "; ".join(lines) + ".",
        facts=[_top("customers", [a for _, a in over])]
        + [_amount(f"excess_{a}", v) for v, a in over[:3]],
        refs=[record_path("customers", le, a) for _, a in over],
        records=len(over),
    )
