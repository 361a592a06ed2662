"""Credit Limit: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    Party,
    doc_link,
    listing,
    money,
    plural,
    recognised_by,
    verb,
    when,
    where,
    with_table,
)
from harnesses.scripted._shared import (
    customer_list,
    party_record,
)

__all__ = ["credit_hold_list", "credit_limit", "credit_utilization", "over_limit_group_top"]


async def _credit(ctx: Context) -> tuple[Party, float, float, str | None]:
    """(party, credit limit, balance, accounting currency): limits are set in the legal entity's
    accounting currency and compared with the balance in it (docs/conventions.md)."""
    party, data = await party_record(ctx, "customer")
    limit = float(data["customer"].get("credit_limit") or 0)
    balance = float(data.get("balance", {}).get("balance_acct") or 0)
    return party, limit, balance, ctx.accounting_currency(party.legal_entity)


@recognised_by(r"credit limit|available credit")
async def credit_limit(ctx: Context) -> str:
    party, limit, balance, currency = await _credit(ctx)
    available = limit - balance
    over = " (over the limit)" if available < 0 else ""
    return (
        f"The credit limit of {party.link} in {party.legal_entity} is "
        f"**{money(limit, currency)}**. With an open balance of {money(balance, currency)} "
        f"{when(ctx)}, the available credit is **{money(available, currency)}**{over} "
        "(accounting currency)."
    )


@recognised_by(r"credit limit", r"percent|utili|used")
async def credit_utilization(ctx: Context) -> str:
    party, limit, balance, currency = await _credit(ctx)
    if not limit:
        return (
            f"{party.link} has no credit limit (limit {money(0, currency)}), so utilisation is "
            f"undefined; its balance is {money(balance, currency)}."
        )
    used = balance / limit * 100
    return (
        f"{party.link} in {party.legal_entity} uses **{used:.1f}%** of its credit limit "
        f"{when(ctx)}: balance {money(balance, currency)} against a credit limit of "
        f"{money(limit, currency)} (accounting currency)."
    )


@recognised_by(r"credit hold")
async def credit_hold_list(ctx: Context) -> str:
    return await customer_list(ctx, "on credit hold", ("credit_hold", "eq", True))


@recognised_by(r"over their credit limit|exceeding their credit limit")
async def over_limit_group_top(ctx: Context) -> str:
    group = ctx.question.group_id
    customers, _ = await ctx.query("customers", ("group_id", "eq", group))
    aging = await ctx.call(
        "get_aging",
        party_type="customer",
        legal_entity=ctx.legal_entity,
        group_id=group,
        as_of=ctx.as_of,
        limit=1000,
    )
    balance = {row.get("account"): float(row.get("balance_acct") or 0) for row in aging["rows"]}
    currency = ctx.accounting_currency(ctx.legal_entity)
    over = []
    for c in customers:
        excess = balance.get(c["account"], 0.0) - float(c.get("credit_limit") or 0)
        if excess > 0.005:
            over.append((round(excess, 2), c))
    over.sort(key=lambda x: (-x[0], x[1]["account"]))
    over = over[: ctx.question.n or 10]
    if not over:
        return (
            f"No customer in customer group {group} {where(ctx)} is over its credit limit "
            f"{when(ctx)}."
        )
    head = (
        f"{plural(len(over), 'customer')} in group {group} {where(ctx)} "
        f"{verb(len(over), 'is', 'are')} over the credit limit {when(ctx)}, largest excess "
        "first: "
        + listing([f"{doc_link(c, 'account')} over by {money(x, currency)}" for x, c in over])
        + "."
    )
    rows = [
        [doc_link(c, "account"), c.get("name"), money(c.get("credit_limit")), money(x)]
        for x, c in over
    ]
    return with_table(head, ["Customer", "Name", "Credit limit", "Over by"], rows)
