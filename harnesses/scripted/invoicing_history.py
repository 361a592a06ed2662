"""Invoicing History: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    AR_INVOICE_TYPES,
    Context,
    doc_link,
    long_date,
    md_link,
    money,
    plural,
    recognised_by,
    summed,
    when,
    where,
    window,
    with_table,
)
from harnesses.scripted._shared import (
    customer_txns,
    documents_in_window,
)

__all__ = [
    "invoice_count_customer",
    "invoices_in_range_customer",
    "largest_invoice_entity",
    "top_invoiced_customer_entity",
]

INVOICES = col.txn_table("Invoice")


invoices_in_range_customer = recognised_by(r"invoices", r"between|from .* to")(
    documents_in_window(
        "customer",
        AR_INVOICE_TYPES,
        "invoice",
        1.0,
        "No invoices were issued to {who} {window}.",
        "**{count}** were issued to {who} {window}, totalling **{total}**.",
    )
)


@recognised_by(r"number of invoices|how many invoices|invoices (?:generated|issued) (?:for|to)")
async def invoice_count_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await customer_txns(ctx, party, AR_INVOICE_TYPES, date_to=ctx.as_of)
    if not items:
        return f"{party.link} has no invoices {where(ctx, party.legal_entity)} {when(ctx)}."
    head = (
        f"{party.link} has **{plural(len(items), 'posted invoice')}** {when(ctx)}, totalling "
        f"**{summed(items, 'amount_cur')}**."
    )
    return INVOICES.answer(head, items)


async def _entity_invoices(ctx: Context) -> list[dict[str, Any]]:
    q = ctx.question
    return await ctx.entity_items(
        "list_customer_transactions",
        txn_type=AR_INVOICE_TYPES,
        date_from=q.start,
        date_to=q.end or ctx.as_of,
    )


@recognised_by(r"largest amount|biggest customer invoice|largest invoice")
async def largest_invoice_entity(ctx: Context) -> str:
    items = await _entity_invoices(ctx)
    if not items:
        return f"No invoices were posted {where(ctx)} {window(ctx)}."
    top = sorted(
        items,
        key=lambda i: (-float(i.get("amount_acct") or 0), i.get("txn_date"), i.get("voucher")),
    )[0]
    acct = ctx.accounting_currency(ctx.legal_entity)
    extra = ""
    if top.get("currency") != acct:
        extra = f" ({money(top.get('amount_acct'), acct)} in accounting currency)"
    return (
        f"The largest customer invoice {where(ctx)} {window(ctx)} is "
        f"**{doc_link(top, 'document_number')}** to customer "
        f"{ctx.link('customers', top.get('legal_entity'), top.get('customer_account', ''))} on "
        f"{long_date(top.get('txn_date'))}: **{money(top.get('amount_cur'), top.get('currency'))}**"
        f"{extra}."
    )


@recognised_by(r"highest total invoiced|top customer by invoiced")
async def top_invoiced_customer_entity(ctx: Context) -> str:
    items = await _entity_invoices(ctx)
    if not items:
        return f"No invoices were posted {where(ctx)} {window(ctx)}."
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for i in items:
        totals[i["customer_account"]][0] += float(i.get("amount_acct") or 0)
        totals[i["customer_account"]][1] += 1
    ranked = sorted(totals.items(), key=lambda kv: (-round(kv[1][0], 2), kv[0]))
    account, (invoiced, count) = ranked[0]
    acct = ctx.accounting_currency(ctx.legal_entity)
    customer = await ctx.call("get_customer", account=account, legal_entity=ctx.legal_entity)
    record = customer.get("customer", {})
    link = md_link(f"{record.get('name', account)} ({account})", record.get("url"))
    head = (
        f"{link} has the highest total invoiced amount {where(ctx)} {window(ctx)}: "
        f"**{money(invoiced, acct)}** (accounting currency) over {plural(int(count), 'invoice')}."
    )
    rows = [[a, money(v[0], acct), int(v[1])] for a, v in ranked[:5]]
    return with_table(head, ["Customer", "Invoiced", "Invoices"], rows)
