"""Other: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    _txn_rows,
    long_date,
    money,
    plural,
    window,
    with_table,
)


async def _vendor_documents(ctx: Context, txn_type: str) -> str:
    party = await ctx.party("vendor")
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_vendor_transactions",
        account=party.account,
        legal_entity=party.legal_entity,
        txn_type=[txn_type],
        date_from=q.start,
        date_to=q.end or ctx.as_of,
    )
    label = txn_type.replace("_", " ")
    span = f" {window(ctx)}" if q.start else ""
    if not items:
        return f"There are no {label}s for {party.link}{span} in {party.legal_entity}."
    total = sum(-float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"{party.link} has **{plural(len(items), label)}**{span}, totalling "
        f"**{money(abs(total), items[0].get('currency'))}**."
    )
    return with_table(head, [label.capitalize(), "Date", "Amount"], _txn_rows(items))


async def vendor_credit_notes(ctx: Context) -> str:
    return await _vendor_documents(ctx, "credit_note")


async def vendor_debit_notes(ctx: Context) -> str:
    return await _vendor_documents(ctx, "debit_note")


async def vendor_spend_fiscal_year(ctx: Context) -> str:
    """Net spend (get_vendor_spend): invoices less credit and debit notes, accounting currency."""
    party = await ctx.party("vendor")
    data = await ctx.call(
        "get_vendor_spend", account=party.account, legal_entity=party.legal_entity
    )
    year_start = ctx.fiscal_year_start(party.legal_entity)
    row = next(
        (
            r
            for r in data.get("rows", [])
            if str(r.get("fiscal_year_start")) == year_start.isoformat()
        ),
        {},
    )
    currency = row.get("accounting_currency") or ctx.accounting_currency(party.legal_entity)
    span = f"in the current fiscal year ({long_date(year_start)} to {long_date(ctx.as_of)})"
    count = int(row.get("invoice_count") or 0)
    spend = float(row.get("net_spend_acct") or 0)
    none = "" if count or spend else " There are no invoices or notes from them in that period."
    return (
        f"The net spend with {party.link} {span} is **{money(spend, currency)}** (accounting "
        f"currency): {plural(count, 'posted invoice')} less credit and debit notes.{none}"
    )
