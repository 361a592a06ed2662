"""AP Invoices: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harnesses.scripted._base import (
    AP_HEADERS,
    Context,
    _ap_rows,
    _due_window,
    _open_ap,
    doc_link,
    listing,
    long_date,
    money,
    plural,
    when,
    where,
    with_table,
)


async def ap_due_in_window(ctx: Context) -> str:
    start, end = await _due_window(ctx)
    items = await _open_ap(ctx, due_from=start, due_to=end)
    span = f"between {long_date(start)} and {long_date(end)}"
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"There are no open vendor invoices falling due {span} {where(ctx)}."
    total = sum(float(i.get("open_amount_acct") or 0) for i in items)
    head = (
        f"**{plural(len(items), 'open vendor invoice')}** fall due {span} {where(ctx)}, "
        f"**{money(total, acct)}** in total (accounting currency)."
    )
    return with_table(head, AP_HEADERS, _ap_rows(items))


async def ap_posted_on_date(ctx: Context) -> str:
    day = ctx.question.single_date or ctx.question.as_of or ctx.today
    items, _ = await ctx.all_items(
        "list_vendor_transactions",
        legal_entity=ctx.legal_entity,
        txn_type=["invoice"],
        date_from=day,
        date_to=day,
    )
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"No vendor invoices were posted on {long_date(day)} {where(ctx)}."
    total = sum(float(i.get("amount_acct") or 0) for i in items)
    head = (
        f"**{plural(len(items), 'vendor invoice')}** {'was' if len(items) == 1 else 'were'} posted "
        f"on {long_date(day)} {where(ctx)}, totalling **{money(total, acct)}** (accounting "
        "currency)."
    )
    rows = [
        [
            doc_link(i, "document_number"),
            i.get("vendor_account"),
            money(i.get("amount_cur"), i.get("currency")),
        ]
        for i in items
    ]
    return with_table(head, ["Invoice", "Vendor", "Amount"], rows)


def _vi_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "invoice_id"),
            i.get("vendor_invoice_number", ""),
            i.get("vendor_account", ""),
            long_date(i.get("invoice_date")),
            money(i.get("amount"), i.get("currency")),
            str(i.get("status", "")).replace("_", " "),
            str(i.get("match_status", "")).replace("_", " "),
        ]
        for i in items
    ]


VI_HEADERS = ["Invoice", "Vendor invoice no.", "Vendor", "Date", "Amount", "Status", "Match"]


async def _vendor_invoices(ctx: Context, **args: Any) -> list[dict[str, Any]]:
    items, _ = await ctx.all_items("list_vendor_invoices", date_to=ctx.as_of, **args)
    return items


async def pending_approval_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items = await _vendor_invoices(
        ctx, account=party.account, legal_entity=party.legal_entity, status=["pending_approval"]
    )
    if not items:
        return f"There are no invoices pending approval for {party.link} in {party.legal_entity}."
    total = sum(float(i.get("amount") or 0) for i in items)
    head = (
        f"**{plural(len(items), 'invoice')}** from {party.link} "
        f"{'is' if len(items) == 1 else 'are'} pending approval, "
        f"**{money(total, items[0].get('currency'))}**"
        " in total: " + listing([doc_link(i, "invoice_id") for i in items]) + "."
    )
    return with_table(head, VI_HEADERS, _vi_rows(items))


INVOICE_STATUS_WORDS = (
    (r"pending approval|awaiting approval|waiting for approval", "pending_approval"),
    (r"approved", "approved"),
    (r"unposted|invoice register|not posted", "unposted"),
    (r"\bposted\b", "posted"),
)


async def invoices_by_status_entity(ctx: Context) -> str:
    status = next(s for pattern, s in INVOICE_STATUS_WORDS if ctx.question.has(pattern))
    items = await _vendor_invoices(ctx, legal_entity=ctx.legal_entity, status=[status])
    label = status.replace("_", " ")
    if not items:
        return f"There are no {label} vendor invoices {where(ctx)} {when(ctx)}."
    totals: dict[str, float] = defaultdict(float)
    for i in items:
        totals[i.get("currency", "")] += float(i.get("amount") or 0)
    worth = ", ".join(money(v, c) for c, v in sorted(totals.items()))
    head = (
        f"There are **{plural(len(items), label + ' vendor invoice')}** {where(ctx)} {when(ctx)} "
        f"worth **{worth}**."
    )
    return with_table(head, VI_HEADERS, _vi_rows(items))


async def latest_invoice_match_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items = await _vendor_invoices(ctx, account=party.account, legal_entity=party.legal_entity)
    if not items:
        return f"There are no invoices from {party.link} in {party.legal_entity}."
    latest = max(items, key=lambda i: (str(i.get("invoice_date")), i.get("invoice_id")))
    status = str(latest.get("match_status", "")).replace("_", " ")
    reason = f" ({latest['match_failure_reason']})" if latest.get("match_failure_reason") else ""
    return (
        f"The latest invoice from {party.link} is **{doc_link(latest, 'invoice_id')}** (vendor "
        f"invoice {latest.get('vendor_invoice_number')}, dated "
        f"{long_date(latest.get('invoice_date'))}); its three-way match status is "
        f"**{status}**{reason}."
    )
