"""Aged Balance: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    AR_INVOICE_TYPES,
    Context,
    doc_link,
    listing,
    long_date,
    md_link,
    money,
    name_link,
    plural,
    recognised_by,
    spread,
    table,
    total,
    when,
    where,
    with_table,
)
from harnesses.scripted._shared import (
    aging_row,
)

PARTY_REF = r"(customer account|vendor account|\([a-z]+-\d+\))"
"""A question naming a customer or vendor account is about that party, not the entity total."""

__all__ = [
    "aging_customer",
    "aging_top_customers",
    "aging_totals_entity",
    "balance_all_entities",
    "coming_due_customer",
    "past_due_total_entity",
    "top_past_due_group",
]


def _bucket_rows(row: dict[str, Any], currency: str | None) -> list[list]:
    out = []
    for bucket in row.get("buckets") or []:
        amount = bucket.get("amount_cur")
        if amount is None:
            amount = bucket.get("amount_acct")
        out.append([bucket.get("label", ""), money(amount, currency)])
    return out


@recognised_by(r"aged balance|aging|ageing|overdue receivables|past due|balance")
async def aging_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    row = await aging_row(ctx, party)
    currency = row.get("currency") or None
    balance = row.get("balance_cur", row.get("balance_acct", 0)) or 0
    if not row or not row.get("open_transaction_count"):
        return (
            f"{party.link} has no open transactions {where(ctx, party.legal_entity)} "
            f"{when(ctx)}: the balance is {money(0, currency)}."
        )
    head = (
        f"The aged balance of {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{money(balance, currency)}** over "
        f"{plural(row.get('open_transaction_count', 0), 'open transaction')}, aged by days "
        "past due:"
    )
    return head + "\n\n" + table(["Aging bucket", "Amount"], _bucket_rows(row, currency))


@recognised_by(r"all legal entities")
async def balance_all_entities(ctx: Context) -> str:
    parties = await ctx.parties("customer", every_entity=True)
    rows, totals = [], defaultdict(float)
    for party in parties:
        row = await aging_row(ctx, party)
        currency = row.get("currency") or ""
        balance = float(row.get("balance_cur", 0) or 0)
        totals[currency] += balance
        rows.append([party.link, party.legal_entity, money(balance, currency or None)])
    head = (
        f"Open balances of customers named {parties[0].name} across all legal entities {when(ctx)}"
    )
    if len(parties) == 1:
        return f"{head}: {rows[0][0]} in {rows[0][1]} owes **{rows[0][2]}**."
    combined = ""
    if len(totals) == 1:
        currency, combined_total = next(iter(totals.items()))
        combined = f" Combined: **{money(combined_total, currency or None)}**."
    return (
        head
        + f": {len(parties)} accounts.{combined}\n\n"
        + table(["Customer", "Legal entity", "Balance"], rows)
    )


COMING_DUE = col.Table(
    {
        "Document": col.link("document_number"),
        "Due date": col.date("due_date"),
        "Open amount": col.amount("open_amount_cur"),
    }
)


@recognised_by(r"coming due|falling due")
async def coming_due_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    start = ctx.as_of if ctx.question.days else (ctx.question.start or ctx.as_of)
    end = ctx.question.end or start + dt.timedelta(days=ctx.question.days or 7)
    if ctx.question.days:
        end = start + dt.timedelta(days=ctx.question.days)
    items = await ctx.party_items(
        "list_customer_transactions",
        party,
        status="open",
        due_from=start,
        due_to=end,
        sort_by="due_date",
        descending=False,
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    span = f"between {long_date(start)} and {long_date(end)}"
    if not items:
        return f"No open transactions of {party.link} fall due {span}."
    due = [f"{doc_link(i, 'document_number')} due {long_date(i['due_date'])}" for i in items]
    head = (
        f"{plural(len(items), 'open transaction')} of {party.link} fall due {span}, totalling "
        f"**{money(total(items, 'open_amount_cur'), items[0].get('currency'))}**: "
        + listing(due)
        + "."
    )
    return COMING_DUE.answer(head, items)


async def _past_due_invoices(ctx: Context, days: int) -> list[dict[str, Any]]:
    """Open customer invoices more than ``days`` past due with something left to pay."""
    items = await ctx.entity_items(
        "list_customer_transactions",
        status="open",
        txn_type=AR_INVOICE_TYPES,
        due_to=ctx.as_of - dt.timedelta(days=days + 1),
    )
    return [i for i in items if float(i.get("open_amount_cur") or 0) > 0]


@recognised_by(r"group", r"past due|overdue")
async def top_past_due_group(ctx: Context) -> str:
    q = ctx.question
    group, days = q.group_id, q.days or 90
    customers, _ = await ctx.query(
        "customers", ("group_id", "eq", group), select=["account", "name"]
    )
    names = {c["account"]: c for c in customers}
    totals: dict[str, float] = defaultdict(float)
    for item in await _past_due_invoices(ctx, days):
        if item.get("customer_account") in names:
            totals[item["customer_account"]] += float(item.get("open_amount_acct") or 0)
    ranked = sorted(
        ((round(v, 2), a) for a, v in totals.items() if v > 0), key=lambda x: (-x[0], x[1])
    )
    ranked = ranked[: q.n or 10]
    if not ranked:
        return (
            f"No customer in group {group} {where(ctx)} has invoices more than {days} days past "
            f"due {when(ctx)}."
        )
    acct = ctx.accounting_currency(ctx.legal_entity)
    lines = [
        f"{md_link(names[a].get('name', a) + f' ({a})', names[a].get('url'))} {money(v, acct)}"
        for v, a in ranked
    ]
    head = (
        f"Top {len(ranked)} customers in group {group} {where(ctx)} by balance more than {days} "
        f"days past due {when(ctx)} (accounting currency): " + "; ".join(lines) + "."
    )
    rows = [[names[a].get("name", a), a, money(v, acct)] for v, a in ranked]
    return with_table(head, ["Customer", "Account", "Past due"], rows)


async def _customer_aging(ctx: Context, **args: Any) -> list[dict[str, Any]]:
    """``get_aging`` rows of the question's customers (30/60/90-day buckets)."""
    data = await ctx.call(
        "get_aging",
        party_type="customer",
        legal_entity=ctx.legal_entity,
        as_of=ctx.as_of,
        bucket_edges=[30, 60, 90],
        **args,
    )
    return data.get("rows") or []


@recognised_by(r"top \d+ customers|top (?:five|ten) customers", r"outstanding|balance")
async def aging_top_customers(ctx: Context) -> str:
    rows = await _customer_aging(ctx, sort_by="balance", limit=ctx.question.n or 10)
    if not rows:
        return f"There are no customers with open balances {where(ctx)} {when(ctx)}."
    labels = [b.get("label", "") for b in rows[0].get("buckets", [])]
    head = (
        f"The {plural(len(rows), 'customer')} with the largest outstanding balances {where(ctx)} "
        f"{when(ctx)} (accounting currency): "
        + "; ".join(
            f"{name_link(r)} {money(r.get('balance_acct'), r.get('accounting_currency'))}"
            for r in rows
        )
        + "."
    )
    table_rows = [
        [name_link(r), money(r.get("balance_acct"))]
        + [money(b.get("amount_acct")) for b in r.get("buckets", [])]
        for r in rows
    ]
    return with_table(head, ["Customer", "Balance", *labels], table_rows)


@recognised_by(r"aging bucket|aging summary for all|by aging")
async def aging_totals_entity(ctx: Context) -> str:
    row = (await _customer_aging(ctx, group_by="legal_entity") or [{}])[0]
    acct = ctx.accounting_currency(ctx.legal_entity)
    buckets = [[b.get("label"), money(b.get("amount_acct"), acct)] for b in row.get("buckets", [])]
    head = (
        f"Open customer balances {where(ctx)} {when(ctx)} total "
        f"**{money(row.get('balance_acct', 0), acct)}** (accounting currency), by days past due:"
    )
    return head + "\n\n" + table(["Aging bucket", "Amount"], buckets)


@recognised_by(
    r"past due|overdue|\d+\+ days",
    r"total|how much customer ar|how much in customer invoices",
    unless=(PARTY_REF,),
)
async def past_due_total_entity(ctx: Context) -> str:
    days = ctx.question.days or 90
    items = await _past_due_invoices(ctx, days)
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"There are no customer transactions more than {days} days past due {where(ctx)}."
    return (
        f"Unpaid customer receivables more than {days} days past due {where(ctx)} {when(ctx)} "
        f"total **{money(total(items, 'open_amount_acct'), acct)}** (accounting currency) across "
        f"{spread(items, 'open transaction', 'customer')}."
    )
