"""AP Purchase Orders: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    links,
    plural,
    recognised_by,
)

__all__ = ["open_pos_vendor"]

PURCHASE_ORDERS = col.Table(
    {
        "Purchase order": col.link("po_number"),
        "Order date": col.date("order_date"),
        "Amount": col.amount("total_amount", "currency"),
        "Buyer": col.text("buyer"),
    }
)


@recognised_by(r"purchase orders?")
async def open_pos_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items = await ctx.party_items("list_purchase_orders", party, status=["open"], date_to=ctx.as_of)
    if not items:
        return f"There are no open purchase orders for {party.link} in {party.legal_entity}."
    head = f"{party.link} has **{plural(len(items), 'open purchase order')}**: "
    return PURCHASE_ORDERS.answer(head + links(items, "po_number") + ".", items)
