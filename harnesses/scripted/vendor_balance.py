"""Vendor Balance: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harnesses.scripted._base import (
    Context,
    long_date,
    money,
    plural,
    recognised_by,
    spread,
    total,
    when,
    where,
    with_table,
)
from harnesses.scripted._shared import (
    due_window,
    open_ap,
    party_balance,
)

__all__ = [
    "ap_by_currency_entity",
    "ap_by_group_entity",
    "ap_due_next_month_top",
    "ap_group_balance",
    "ap_overdue_entity",
    "ap_overdue_vendor_invoices",
    "vendor_balance",
]

vendor_balance = recognised_by(r"ap balance for|owed to|how much do we owe")(
    party_balance(
        "vendor",
        "There are no open transactions with {who} {where} {when}: the AP balance is {zero}.",
        "The open AP balance owed to {who} {where} {when} is",
    )
)


async def _vendor_aging(ctx: Context, **args: Any) -> dict[str, Any]:
    return await ctx.call(
        "get_aging", party_type="vendor", legal_entity=ctx.legal_entity, as_of=ctx.as_of, **args
    )


@recognised_by(r"by vendor group")
async def ap_by_group_entity(ctx: Context) -> str:
    data = await _vendor_aging(ctx, group_by="group", limit=1000)
    acct = ctx.accounting_currency(ctx.legal_entity)
    rows = sorted(data.get("rows", []), key=lambda r: str(r.get("group_id")))
    combined = total(rows, "balance_acct")
    if not rows:
        return f"There are no open vendor balances {where(ctx)} {when(ctx)}."
    head = f"Open AP balance {where(ctx)} {when(ctx)} by vendor group (accounting currency): "
    head += "; ".join(
        f"group {ctx.link('vendor-groups', ctx.legal_entity, str(r.get('group_id')))} "
        f"{money(r.get('balance_acct'), acct)}"
        for r in rows
    )
    head += f"; total **{money(combined, acct)}**."
    table_rows = [
        [r.get("group_id"), r.get("name") or "", money(r.get("balance_acct"))] for r in rows
    ]
    return with_table(head, ["Vendor group", "Name", "Balance"], table_rows)


@recognised_by(r"vendor group|vendors of group")
async def ap_group_balance(ctx: Context) -> str:
    group = ctx.question.group_id
    data = await _vendor_aging(ctx, group_id=group, group_by="group")
    acct = ctx.accounting_currency(ctx.legal_entity)
    combined = total(data.get("rows", []), "balance_acct")
    if not data.get("rows") or not round(combined, 2):
        return (
            f"There are no open items for the vendors of vendor group {group} {where(ctx)}: "
            f"the combined AP balance is {money(0, acct)}."
        )
    return (
        f"The combined AP balance of vendor group "
        f"{ctx.link('vendor-groups', ctx.legal_entity, str(group))} {where(ctx)} {when(ctx)} is "
        f"**{money(combined, acct)}** (accounting currency)."
    )


@recognised_by(r"by (?:transaction )?currency|vendor balance .*(?:usd|eur|gbp|cad)")
async def ap_by_currency_entity(ctx: Context) -> str:
    data = await _vendor_aging(ctx, group_by="currency")
    acct = ctx.accounting_currency(ctx.legal_entity)
    rows = sorted(data.get("rows", []), key=lambda r: str(r.get("currency")))
    if not rows:
        return f"There are no open vendor balances {where(ctx)} {when(ctx)}."
    combined = total(rows, "balance_acct")
    head = f"Open AP balance {where(ctx)} {when(ctx)} by transaction currency: " + "; ".join(
        f"{r.get('currency')} {money(r.get('balance_cur'), r.get('currency'))} "
        f"({money(r.get('balance_acct'), acct)} accounting)"
        for r in rows
    )
    head += f"; total **{money(combined, acct)}** in accounting currency."
    table_rows = [
        [r.get("currency"), money(r.get("balance_cur")), money(r.get("balance_acct"))] for r in rows
    ]
    return with_table(head, ["Currency", "Balance", f"Balance ({acct})"], table_rows)


@recognised_by(r"overdue ap|payables is past due|ap balance.*overdue|past due.*payables")
async def ap_overdue_entity(ctx: Context) -> str:
    items = await open_ap(ctx, overdue_as_of=ctx.as_of)
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"There are no overdue vendor invoices {where(ctx)} {when(ctx)}: {money(0, acct)}."
    return (
        f"The overdue AP balance {where(ctx)} {when(ctx)} is "
        f"**{money(total(items, 'open_amount_acct'), acct)}** (accounting currency) across "
        f"{spread(items, 'open vendor invoice', 'vendor')}."
    )


@recognised_by(r"ap balances due|vendors have the most open invoice value|due next month")
async def ap_due_next_month_top(ctx: Context) -> str:
    start, end = due_window(ctx)
    items = await open_ap(ctx, due_from=start, due_to=end)
    totals: dict[str, float] = defaultdict(float)
    for i in items:
        totals[i["vendor_account"]] += float(i.get("open_amount_acct") or 0)
    ranked = sorted(((round(v, 2), a) for a, v in totals.items()), key=lambda x: (-x[0], x[1]))
    ranked = ranked[: ctx.question.n or 5]
    span = f"between {long_date(start)} and {long_date(end)}"
    if not ranked:
        return f"There are no open vendor balances falling due {span} {where(ctx)}."
    acct = ctx.accounting_currency(ctx.legal_entity)
    le = ctx.legal_entity
    head = f"The {plural(len(ranked), 'largest AP balance')} due {span} {where(ctx)}: " + "; ".join(
        f"{ctx.link('vendors', le, a)} {money(v, acct)}" for v, a in ranked
    )
    rows = [[ctx.link("vendors", le, a), money(v, acct)] for v, a in ranked]
    return with_table(head + ".", ["Vendor", "Due"], rows)


@recognised_by(r"vendor invoices (?:is|are) past due")
async def ap_overdue_vendor_invoices(ctx: Context) -> str:
    """The overdue AP question worded as "vendor invoices past due" (tried before other rules)."""
    return await ap_overdue_entity(ctx)
