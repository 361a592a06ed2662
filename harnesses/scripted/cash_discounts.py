"""Cash Discounts: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import datetime as dt
from typing import Any

from harnesses.scripted._base import (
    Context,
    doc_link,
    listing,
    long_date,
    money,
    plural,
    when,
    where,
    window,
    with_table,
)


def _discount_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "document_number"),
            i.get("account", ""),
            money(i.get("cash_discount_amount"), i.get("currency")),
            long_date(i.get("cash_discount_date")),
        ]
        for i in items
    ]


DISCOUNT_HEADERS = ["Invoice", "Customer", "Discount", "Discount date"]


async def discounts_expiring_entity(ctx: Context) -> str:
    q = ctx.question
    days = q.days if q.days is not None else ((q.end - ctx.as_of).days if q.end else 7)
    items, _ = await ctx.all_items(
        "list_cash_discounts",
        party_type="customer",
        legal_entity=ctx.legal_entity,
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
    end = ctx.as_of + dt.timedelta(days=days)
    span = f"between {long_date(ctx.as_of)} and {long_date(end)}"
    if not items:
        return (
            f"There are no open customer invoices with a cash discount expiring {span} "
            f"{where(ctx)}."
        )
    head = (
        f"**{plural(len(items), 'open customer invoice')}** {where(ctx)} "
        f"{'has' if len(items) == 1 else 'have'} a cash discount expiring {span}: "
        + listing([doc_link(i, "document_number") for i in items])
        + "."
    )
    return with_table(head, DISCOUNT_HEADERS, _discount_rows(items))


async def discounts_taken_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_settlements",
        party_type="customer",
        account=party.account,
        legal_entity=party.legal_entity,
        date_from=q.start,
        date_to=q.end,
    )
    taken = [i for i in items if float(i.get("cash_discount_taken") or 0) > 0]
    if not taken:
        return (
            f"No. {party.link} took no cash discounts {window(ctx)}: no payment was made within a "
            "discount window."
        )
    total = sum(float(i["cash_discount_taken"]) for i in taken)
    head = (
        f"{party.link} paid within the cash discount window **{plural(len(taken), 'time')}** "
        f"{window(ctx)}, taking **{money(total, taken[0].get('currency'))}** in cash discounts."
    )
    rows = [
        [
            doc_link(i, "settlement_id"),
            i.get("debit_document_number", ""),
            long_date(i.get("settled_date")),
            money(i.get("cash_discount_taken")),
        ]
        for i in taken
    ]
    return with_table(head, ["Settlement", "Invoice", "Settled", "Discount taken"], rows)


async def open_discount_invoices_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_cash_discounts",
        party_type="customer",
        account=party.account,
        legal_entity=party.legal_entity,
        as_of=ctx.as_of,
        state="available",
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    if not items:
        return (
            f"No. {party.link} has no open invoices with a cash discount still available "
            f"{when(ctx)}."
        )
    head = (
        f"Yes. {party.link} has **{plural(len(items), 'open invoice')}** with a cash discount "
        "still available: "
        + listing(
            [
                f"{doc_link(i, 'document_number')}: "
                f"{money(i.get('cash_discount_amount'), i.get('currency'))}"
                f" if paid by {long_date(i.get('cash_discount_date'))}"
                for i in items
            ]
        )
        + "."
    )
    return with_table(head, DISCOUNT_HEADERS, _discount_rows(items))
