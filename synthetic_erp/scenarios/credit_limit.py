"""Credit Limit (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from ledgerbench_core.dataset._records import ExpectedFact
from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    PERCENT_TOLERANCE,
    Answer,
    OracleContext,
    Party,
    _amount,
    _num,
    _sum,
    ledger_open_items,
    long_date,
    money,
    no_records,
    party_open_items,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft
from synthetic_erp.scenarios._keys import ListKey, Ranking, party_list, top_totals

template = registrar("Credit Limit", "AR")


def _choose_over_limit_group_top(c: Chooser) -> Draft:
    le, n, group = c.view.pick_le(c.rng), c.rng.choice((3, 5, 10)), c.group()
    return c.le_draft({"legal_entity": le, "group_id": group, "n": n}, group_id=group, n=str(n))


def _credit_position(ctx: OracleContext, p: Party) -> tuple[Decimal, Decimal, str]:
    """A customer's balance and credit limit, both in the accounting currency, and that currency."""
    balance = _sum(row.open_amount_acct for row in party_open_items(ctx, p))
    return balance, p.row.credit_limit, ctx.currency(p.legal_entity)


@template(
    party="customer",
    phrasings=(
        "How much credit does {who} have left {where} {asof}, and what is its limit?",
        "What limit have we set for {who} {where}, and how much of it is still available {asof}?",
    ),
)
def credit_limit(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    balance, limit, acct = _credit_position(ctx, p)
    available = limit - balance
    return Answer(
        text=f"{p.label} in {p.legal_entity} has a credit limit of {money(limit, acct)}; "
        f"with a balance of {money(balance, acct)} as of {long_date(ctx.today)}, the "
        f"available credit is {money(available, acct)} (accounting currency)"
        + (" (over the limit)." if available < 0 else "."),
        facts=[
            _amount("credit_limit", limit, acct),
            _amount("balance", balance, acct, "debit"),
            _amount("available_credit", available, acct),
        ],
        refs=[p.path],
        records=1,
    )


@template(
    party="customer",
    phrasings=(
        "How much of its credit limit has {who} used up {where} {asof}, as a percentage?",
        "What share of the credit line of {who} {where} is in use {asof}?",
    ),
)
def credit_utilization(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    balance, limit, acct = _credit_position(ctx, p)
    if limit == 0:
        return Answer(
            text=f"{p.label} has no credit limit (0), so utilisation is undefined; the balance is "
            f"{money(balance, acct)}.",
            facts=[_amount("credit_limit", 0, acct), _amount("balance", balance, acct, "debit")],
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
            _amount("credit_limit", limit, acct),
            _amount("balance", balance, acct, "debit"),
        ],
        refs=[p.path],
        records=1,
    )


ON_HOLD = ListKey(
    "customers_on_hold",
    none="No customers are on credit hold {where}.",
    found="{n} customer(s) are on credit hold {where} as of {today}",
    counted=False,
    none_noun="customers",
    ids=("customers", "account"),
)


@template(
    choose=Chooser.entity_or_all,
    phrasings=(
        "Who is blocked on credit hold {where} {asof}?",
        "List every customer {where} that we have put on credit hold {asof}.",
    ),
)
def credit_hold_list(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params.get("legal_entity")
    on_hold = s.Customer.credit_hold.is_(True)
    return party_list(ctx, ON_HOLD, "customer", le, on_hold, line=_held_line)


def _held_line(row: s.Customer) -> str:
    return f"{row.name} ({row.account}, {row.legal_entity})"


OVER_LIMIT = Ranking("customer", "excess", line="{name} ({account}) over by {amount}")


@template(
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
    limits = dict(
        ctx.session.execute(
            select(c.account, c.credit_limit).where(c.legal_entity == le, c.group_id == group)
        ).all()
    )
    balances: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in ledger_open_items(ctx, "customer", le):
        if row.customer_account in limits:
            balances[row.customer_account] += row.open_amount_acct
    excess = {a: balances[a] - limit for a, limit in limits.items()}
    qualifying = {a: v for a, v in excess.items() if v > 0}
    over = top_totals(qualifying, n)
    if not over:
        return no_records(
            f"No customer in group {group} in {le} is over its credit limit as of "
            f"{long_date(ctx.today)}.",
            "customers",
            counted=False,
        )
    return OVER_LIMIT.answer(
        ctx,
        le,
        over,
        f"Customers in group {group} in {le} over their credit limit as of "
        f"{long_date(ctx.today)}, largest excess first",
        complete=len(over) == len(qualifying),
    )
