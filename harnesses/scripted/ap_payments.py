"""AP Payments: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import datetime as dt
import re

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    ToolFailure,
    doc_link,
    long_date,
    md_link,
    money,
    plural,
    recognised_by,
    spread,
    total,
    where,
    with_table,
)
from harnesses.scripted._shared import (
    OPEN_AP,
    documents_in_window,
    open_ap,
)

PAYMENTS = col.txn_table("Payment")

__all__ = [
    "ap_obligation_next_days",
    "payment_accounts_methods",
    "payment_journal_total",
    "proposal_vendors_on_date",
    "vendor_payments_range",
]


@recognised_by(r"payment obligation|falls due|vendor invoices falls")
async def ap_obligation_next_days(ctx: Context) -> str:
    """Everything open that must be paid by the horizon's last day, overdue invoices included."""
    end = ctx.question.end or ctx.as_of + dt.timedelta(days=ctx.question.days or 7)
    items = await open_ap(ctx, due_to=end)
    acct = ctx.accounting_currency(ctx.legal_entity)
    if not items:
        return f"No open vendor invoices are due by {long_date(end)} {where(ctx)}: nothing to pay."
    overdue = [i for i in items if str(i.get("due_date") or "") < ctx.as_of.isoformat()]
    head = (
        f"The AP payment obligation due by {long_date(end)} {where(ctx)} is "
        f"**{money(total(items, 'open_amount_acct'), acct)}** (accounting currency; "
        f"{money(total(overdue, 'open_amount_acct'), acct)} of it already overdue) across "
        f"{spread(items, 'open vendor invoice', 'vendor')}."
    )
    return OPEN_AP.answer(head, items)


@recognised_by(r"methods? of payment|payment methods", r"payment accounts|ledger accounts|post to")
async def payment_accounts_methods(ctx: Context) -> str:
    data = await ctx.call(
        "list_reference_data",
        kind="methods_of_payment",
        legal_entity=ctx.legal_entity,
        party_type="vendor",
    )
    methods = {m.get("code", "").upper(): m for m in data.get("items", [])}
    codes = [
        c
        for c in re.findall(r"\b[A-Z][A-Z0-9_]{1,15}\b", ctx.question.text)
        if c not in {"USMF", "USPI", "DEMF", "GBSI", "AP", "AR", "ERP"}
        and c not in (ctx.legal_entity,)
    ]
    if not codes:
        codes = sorted(methods)
    rows, lines = [], []
    for code in codes:
        m = methods.get(code.upper())
        if m is None:
            lines.append(f"{code}: no such vendor method of payment {where(ctx)}")
            rows.append([code, "no such method", "-"])
        else:
            link = md_link(code, m.get("url"))
            lines.append(
                f"{link} ({m.get('description')}) posts to payment account "
                f"**{m.get('payment_account')}**"
            )
            rows.append([link, m.get("description"), m.get("payment_account")])
    return with_table("; ".join(lines) + ".", ["Method", "Description", "Payment account"], rows)


@recognised_by(r"payment proposal")
async def proposal_vendors_on_date(ctx: Context) -> str:
    day = ctx.question.single_date or ctx.question.as_of or ctx.today
    journals = await ctx.entity_items(
        "list_payment_journals", source="proposal", date_from=day, date_to=day
    )
    if not journals:
        return f"No payment proposal was created on {long_date(day)} {where(ctx)}: no vendors."
    vendors: set[str] = set()
    for journal in journals:
        data = await ctx.call(
            "get_payment_journal",
            journal_id=journal["journal_id"],
            legal_entity=journal["legal_entity"],
        )
        vendors |= {line.get("vendor_account") for line in data.get("lines", [])}
    ordered = sorted(v for v in vendors if v)
    links = ", ".join(doc_link(j, "journal_id") for j in journals)
    return (
        f"The payment proposal(s) of {long_date(day)} {where(ctx)} ({links}) include "
        f"**{plural(len(ordered), 'vendor')}**: "
        f"{', '.join(ctx.link('vendors', journals[0].get('legal_entity'), v) for v in ordered)}."
    )


vendor_payments_range = recognised_by(r"payment history|how much did we pay")(
    documents_in_window(
        "vendor",
        ["payment"],
        "payment",
        -1.0,
        "No payments were made to {who} {window}.",
        "We made **{count}** to {who} {window}, totalling **{total}**.",
    )
)


@recognised_by(r"journal \S*\d")
async def payment_journal_total(ctx: Context) -> str:
    match = re.search(r"journal\s+#?([A-Za-z0-9-]+)", ctx.question.text)
    journal_id = match.group(1) if match else ""
    try:
        data = await ctx.call(
            "get_payment_journal", journal_id=journal_id, legal_entity=ctx.legal_entity
        )
    except ToolFailure:
        return f"There is no payment journal {journal_id} {where(ctx)}: no such record was found."
    journal = data.get("journal", {})
    return (
        f"Payment journal **{doc_link(journal, 'journal_id')}** {where(ctx)} (status "
        f"{journal.get('status')}, created {long_date(journal.get('created_date'))}) totals "
        f"**{money(journal.get('total_amount'), journal.get('currency'))}** over "
        f"**{plural(int(data.get('line_count') or journal.get('line_count') or 0), 'line')}**."
    )
