"""Cash Collections: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    long_date,
    plural,
    recognised_by,
    summed,
)
from harnesses.scripted._shared import (
    customer_txns,
)

__all__ = ["collected_fiscal_year"]


@recognised_by(r"collected")
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
    return col.txn_table("Payment").answer(head, items)
