"""Cash Discounts: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import datetime as dt

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    doc_link,
    links,
    listing,
    long_date,
    money,
    plural,
    recognised_by,
    summed,
    verb,
    when,
    where,
    window,
)

__all__ = [
    "discounts_expiring_entity",
    "discounts_taken_customer",
    "open_discount_invoices_customer",
]

DISCOUNTS = col.Table(
    {
        "Invoice": col.link("document_number"),
        "Customer": col.text("account"),
        "Discount": col.amount("cash_discount_amount", "currency"),
        "Discount date": col.date("cash_discount_date"),
    }
)


@recognised_by(r"cash discount (?:expiring|runs out)|discount runs out")
async def discounts_expiring_entity(ctx: Context) -> str:
    q = ctx.question
    days = q.days if q.days is not None else ((q.end - ctx.as_of).days if q.end else 7)
    items = await ctx.entity_items(
        "list_cash_discounts",
        party_type="customer",
        as_of=ctx.as_of,
        expiring_within_days=days,
        state="available",
    )
    items = [
        i
        for i in items
        if float(i.get("open_amount_cur") or 0) > 0
        and str(i.get("txn_date", "")) <= ctx.as_of.isoformat()
    ]
    span = f"between {long_date(ctx.as_of)} and {long_date(ctx.as_of + dt.timedelta(days=days))}"
    if not items:
        return (
            f"There are no open customer invoices with a cash discount expiring {span} "
            f"{where(ctx)}."
        )
    head = (
        f"**{plural(len(items), 'open customer invoice')}** {where(ctx)} "
        f"{verb(len(items), 'has', 'have')} a cash discount expiring {span}: "
    )
    return DISCOUNTS.answer(head + links(items, "document_number") + ".", items)


DISCOUNTS_TAKEN = col.Table(
    {
        "Settlement": col.link("settlement_id"),
        "Invoice": col.text("debit_document_number"),
        "Settled": col.date("settled_date"),
        "Discount taken": col.amount("cash_discount_taken"),
    }
)


@recognised_by(r"discount window|take any cash discounts")
async def discounts_taken_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    q = ctx.question
    items = await ctx.party_items(
        "list_settlements", party, party_type="customer", date_from=q.start, date_to=q.end
    )
    taken = [i for i in items if float(i.get("cash_discount_taken") or 0) > 0]
    if not taken:
        return (
            f"No. {party.link} took no cash discounts {window(ctx)}: no payment was made within a "
            "discount window."
        )
    head = (
        f"{party.link} paid within the cash discount window **{plural(len(taken), 'time')}** "
        f"{window(ctx)}, taking **{summed(taken, 'cash_discount_taken')}** in cash discounts."
    )
    return DISCOUNTS_TAKEN.answer(head, taken)


@recognised_by(r"cash discount")
async def open_discount_invoices_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await ctx.party_items(
        "list_cash_discounts", party, party_type="customer", as_of=ctx.as_of, state="available"
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    if not items:
        return (
            f"No. {party.link} has no open invoices with a cash discount still available "
            f"{when(ctx)}."
        )
    offers = [
        f"{doc_link(i, 'document_number')}: "
        f"{money(i.get('cash_discount_amount'), i.get('currency'))}"
        f" if paid by {long_date(i.get('cash_discount_date'))}"
        for i in items
    ]
    head = (
        f"Yes. {party.link} has **{plural(len(items), 'open invoice')}** with a cash discount "
        "still available: " + listing(offers) + "."
    )
    return DISCOUNTS.answer(head, items)
