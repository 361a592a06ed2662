"""Cash Collections: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import Context, customer_txns, long_date, plural, summed, txn_table

__all__ = ["collected_fiscal_year"]


async def collected_fiscal_year(ctx: Context) -> str:
    party = await ctx.party("customer")
    start = ctx.fiscal_year_start(party.legal_entity)
    items = await customer_txns(ctx, party, ["payment"], date_from=start, date_to=ctx.as_of)
    span = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.as_of)})"
    if not items:
        return f"Nothing was collected from {party.link} {span}: no payments (0.00)."
    head = (
        f"**{summed(items, 'amount_cur', -1.0)}** was collected from {party.link} {span}, in "
        f"{plural(len(items), 'payment')}."
    )
    return txn_table("Payment").answer(head, items)
