"""Outstanding Balance: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    AR_INVOICE_TYPES,
    Context,
    _aging_row,
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
    party = await ctx.party("customer")
    row = await _aging_row(ctx, party)
    currency = row.get("currency")
    count = int(row.get("open_transaction_count", 0) or 0)
    if not count:
        return (
            f"{party.link} has no open transactions {where(ctx, party.legal_entity)} "
            f"{when(ctx)}: the outstanding balance is {money(0, currency)}."
        )
    text = (
        f"The outstanding balance of {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{money(row.get('balance_cur'), currency)}**"
    )
    acct = ctx.accounting_currency(party.legal_entity)
    if acct and acct != currency:
        text += f" ({money(row.get('balance_acct'), acct)} in accounting currency)"
    return text + f", over {plural(count, 'open transaction')}."


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
