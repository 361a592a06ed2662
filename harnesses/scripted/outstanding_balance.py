"""Outstanding Balance: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    AR_INVOICE_TYPES,
    Context,
    links,
    plural,
    recognised_by,
    summed,
    when,
    where,
)
from harnesses.scripted._shared import (
    party_balance,
)

__all__ = ["customer_balance", "unpaid_invoices_customer"]

customer_balance = recognised_by(
    r"unpaid customer (?:balance|receivables)|outstanding receivables balance|owe us|"
    r"outstanding balance|total balance"
)(
    party_balance(
        "customer",
        "{who} has no open transactions {where} {when}: the outstanding balance is {zero}.",
        "The outstanding balance of {who} {where} {when} is",
    )
)

UNPAID = col.Table(
    {
        "Invoice": col.link("document_number"),
        "Date": col.date("txn_date"),
        "Due": col.date("due_date"),
        "Amount": col.amount("amount_cur"),
        "Open": col.amount("open_amount_cur"),
    }
)


@recognised_by(r"unpaid invoices|open invoices")
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
