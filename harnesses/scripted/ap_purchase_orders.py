"""AP Purchase Orders: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    doc_link,
    listing,
    long_date,
    money,
    plural,
    with_table,
)


async def open_pos_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items, _ = await ctx.all_items(
        "list_purchase_orders",
        account=party.account,
        legal_entity=party.legal_entity,
        status=["open"],
        date_to=ctx.as_of,
    )
    if not items:
        return f"There are no open purchase orders for {party.link} in {party.legal_entity}."
    head = f"{party.link} has **{plural(len(items), 'open purchase order')}**: " + listing(
        [doc_link(p, "po_number") for p in items]
    )
    rows = [
        [
            doc_link(p, "po_number"),
            long_date(p.get("order_date")),
            money(p.get("total_amount"), p.get("currency")),
            p.get("buyer", ""),
        ]
        for p in items
    ]
    return with_table(head + ".", ["Purchase order", "Order date", "Amount", "Buyer"], rows)
