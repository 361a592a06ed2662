"""Cash Collections: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    _customer_txns,
    _txn_rows,
    long_date,
    money,
    plural,
    with_table,
)


async def collected_fiscal_year(ctx: Context) -> str:
    party = await ctx.party("customer")
    start = ctx.fiscal_year_start(party.legal_entity)
    items = await _customer_txns(ctx, party, ["payment"], date_from=start, date_to=ctx.as_of)
    span = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.as_of)})"
    if not items:
        return f"Nothing was collected from {party.link} {span}: no payments (0.00)."
    total = sum(-float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"**{money(total, items[0].get('currency'))}** was collected from {party.link} {span}, in "
        f"{plural(len(items), 'payment')}."
    )
    return with_table(head, ["Payment", "Date", "Amount"], _txn_rows(items))
