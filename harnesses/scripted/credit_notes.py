"""Credit Notes: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    links,
    plural,
    recognised_by,
    summed,
    when,
)
from harnesses.scripted._shared import (
    customer_txns,
)

__all__ = ["unapplied_credit_notes_customer"]

CREDIT_NOTES = col.Table(
    {
        "Credit note": col.link("document_number"),
        "Date": col.date("txn_date"),
        "Unapplied": col.amount("open_amount_cur", turn=col.negate),
        "Amount": col.amount("amount_cur", turn=col.negate),
    }
)


@recognised_by(r"credit notes?")
async def unapplied_credit_notes_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await customer_txns(ctx, party, ["credit_note"], status="open")
    if not items:
        return f"{party.link} has no unapplied credit notes {when(ctx)}."
    head = (
        f"{party.link} has **{plural(len(items), 'unapplied credit note')}**, "
        f"**{summed(items, 'open_amount_cur', -1.0)}** in total: "
        + links(items, "document_number")
        + "."
    )
    return CREDIT_NOTES.answer(head, items)
