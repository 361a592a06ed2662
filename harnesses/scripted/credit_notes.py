"""Credit Notes: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    Table,
    as_date,
    as_link,
    as_money,
    customer_txns,
    links,
    negate,
    plural,
    summed,
    when,
)

__all__ = ["unapplied_credit_notes_customer"]

CREDIT_NOTES = Table(
    {
        "Credit note": as_link("document_number"),
        "Date": as_date("txn_date"),
        "Unapplied": as_money("open_amount_cur", turn=negate),
        "Amount": as_money("amount_cur", turn=negate),
    }
)


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
