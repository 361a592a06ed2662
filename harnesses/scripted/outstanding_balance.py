"""Outstanding Balance: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    AR_INVOICE_TYPES,
    Context,
    Table,
    as_date,
    as_link,
    as_money,
    links,
    party_balance,
    plural,
    summed,
    when,
    where,
)

__all__ = ["customer_balance", "unpaid_invoices_customer"]

customer_balance = party_balance(
    "customer",
    "{who} has no open transactions {where} {when}: the outstanding balance is {zero}.",
    "The outstanding balance of {who} {where} {when} is",
)

UNPAID = Table(
    {
        "Invoice": as_link("document_number"),
        "Date": as_date("txn_date"),
        "Due": as_date("due_date"),
        "Amount": as_money("amount_cur"),
        "Open": as_money("open_amount_cur"),
    }
)


async def unpaid_invoices_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await ctx.party_items(
        "list_customer_transactions",
        party,
        status="open",
        txn_type=AR_INVOICE_TYPES,
        date_to=ctx.as_of,
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    items.sort(key=lambda i: (-float(i["open_amount_cur"]), i.get("voucher", "")))
    if not items:
        return f"{party.link} has no unpaid invoices {where(ctx, party.legal_entity)} {when(ctx)}."
    head = (
        f"{party.link} has **{plural(len(items), 'unpaid invoice')}** totalling "
        f"**{summed(items, 'open_amount_cur')}** {when(ctx)}, largest first: "
        + links(items, "document_number")
        + "."
    )
    return UNPAID.answer(head, items)
