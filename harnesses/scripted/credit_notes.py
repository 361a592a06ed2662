"""Credit Notes: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    _customer_txns,
    doc_link,
    listing,
    long_date,
    money,
    plural,
    when,
    with_table,
)


async def unapplied_credit_notes_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _customer_txns(ctx, party, ["credit_note"], status="open")
    if not items:
        return f"{party.link} has no unapplied credit notes {when(ctx)}."
    total = sum(-float(i.get("open_amount_cur") or 0) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), 'unapplied credit note')}**, "
        f"**{money(total, items[0].get('currency'))}** in total: "
        + listing([doc_link(i, "document_number") for i in items])
        + "."
    )
    rows = [
        [
            doc_link(i, "document_number"),
            long_date(i.get("txn_date")),
            money(-float(i.get("open_amount_cur") or 0)),
            money(-float(i.get("amount_cur") or 0)),
        ]
        for i in items
    ]
    return with_table(head, ["Credit note", "Date", "Unapplied", "Amount"], rows)
