"""AP Invoices: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    doc_link,
    links,
    long_date,
    money,
    plural,
    recognised_by,
    total,
    verb,
    when,
    where,
)
from harnesses.scripted._shared import (
    OPEN_AP,
    due_window,
    open_ap,
)

__all__ = [
    "ap_due_in_window",
    "ap_posted_on_date",
    "invoices_by_status_entity",
    "latest_invoice_match_vendor",
    "pending_approval_vendor",
]


@recognised_by(r"vendor invoices", r"due")
async def ap_due_in_window(ctx: Context) -> str:
    start, end = due_window(ctx)
    items = await open_ap(ctx, due_from=start, due_to=end)
    span = f"between {long_date(start)} and {long_date(end)}"
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"There are no open vendor invoices falling due {span} {where(ctx)}."
    head = (
        f"**{plural(len(items), 'open vendor invoice')}** fall due {span} {where(ctx)}, "
        f"**{money(total(items, 'open_amount_acct'), acct)}** in total (accounting currency)."
    )
    return OPEN_AP.answer(head, items)


POSTED = col.Table(
    {
        "Invoice": col.link("document_number"),
        "Vendor": col.text("vendor_account", None),
        "Amount": col.amount("amount_cur", "currency"),
    }
)


@recognised_by(r"posted on")
async def ap_posted_on_date(ctx: Context) -> str:
    day = ctx.question.single_date or ctx.question.as_of or ctx.today
    items = await ctx.entity_items(
        "list_vendor_transactions", txn_type=["invoice"], date_from=day, date_to=day
    )
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"No vendor invoices were posted on {long_date(day)} {where(ctx)}."
    head = (
        f"**{plural(len(items), 'vendor invoice')}** {verb(len(items), 'was', 'were')} posted "
        f"on {long_date(day)} {where(ctx)}, totalling "
        f"**{money(total(items, 'amount_acct'), acct)}** (accounting currency)."
    )
    return POSTED.answer(head, items)


VENDOR_INVOICES = col.Table(
    {
        "Invoice": col.link("invoice_id"),
        "Vendor invoice no.": col.text("vendor_invoice_number"),
        "Vendor": col.text("vendor_account"),
        "Date": col.date("invoice_date"),
        "Amount": col.amount("amount", "currency"),
        "Status": col.words("status"),
        "Match": col.words("match_status"),
    }
)


async def _vendor_invoices(ctx: Context, **args: Any) -> list[dict[str, Any]]:
    return await ctx.all_items("list_vendor_invoices", date_to=ctx.as_of, **args)


@recognised_by(
    r"pending approval|waiting for approval",
    r"invoices (?:are )?pending approval for|from|invoices from",
    unless=(r"how many vendor invoices", r"total value"),
)
async def pending_approval_vendor(ctx: Context) -> str:
    party = await ctx.party("vendor")
    items = await _vendor_invoices(
        ctx, account=party.account, legal_entity=party.legal_entity, status=["pending_approval"]
    )
    if not items:
        return f"There are no invoices pending approval for {party.link} in {party.legal_entity}."
    head = (
        f"**{plural(len(items), 'invoice')}** from {party.link} "
        f"{verb(len(items), 'is', 'are')} pending approval, "
        f"**{money(total(items, 'amount'), items[0].get('currency'))}**"
        " in total: " + links(items, "invoice_id") + "."
    )
    return VENDOR_INVOICES.answer(head, items)


INVOICE_STATUS_WORDS = (
    (r"pending approval|awaiting approval|waiting for approval", "pending_approval"),
    (r"approved", "approved"),
    (r"unposted|invoice register|not posted", "unposted"),
    (r"\bposted\b", "posted"),
)


@recognised_by(
    r"vendor invoices",
    r"how many|total value",
    r"pending approval|approved|unposted|posted|register",
    unless=(r"posted on",),
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
    return VENDOR_INVOICES.answer(head, items)


@recognised_by(r"three-way|3-way|match")
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
