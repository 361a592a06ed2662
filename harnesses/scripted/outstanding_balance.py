"""Outstanding Balance: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    AR_INVOICE_TYPES,
    Context,
    _party_balance,
    doc_link,
    listing,
    long_date,
    money,
    plural,
    when,
    where,
    with_table,
)


async def customer_balance(ctx: Context) -> str:
    return await _party_balance(
        ctx,
        "customer",
        "{who} has no open transactions {where} {when}: the outstanding balance is {zero}.",
        "The outstanding balance of {who} {where} {when} is",
    )


async def unpaid_invoices_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_customer_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        status="open",
        txn_type=AR_INVOICE_TYPES,
        date_to=ctx.as_of,
    )
    items = [i for i in items if float(i.get("open_amount_cur") or 0) > 0]
    items.sort(key=lambda i: (-float(i["open_amount_cur"]), i.get("voucher", "")))
    if not items:
        return f"{party.link} has no unpaid invoices {where(ctx, party.legal_entity)} {when(ctx)}."
    currency = items[0].get("currency")
    total = sum(float(i["open_amount_cur"]) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), 'unpaid invoice')}** totalling "
        f"**{money(total, currency)}** {when(ctx)}, largest first: "
        + listing([doc_link(i, "document_number") for i in items])
        + "."
    )
    rows = [
        [
            doc_link(i, "document_number"),
            long_date(i.get("txn_date")),
            long_date(i.get("due_date")),
            money(i.get("amount_cur")),
            money(i.get("open_amount_cur")),
        ]
        for i in items
    ]
    return with_table(head, ["Invoice", "Date", "Due", "Amount", "Open"], rows)
