"""Other: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    Handler,
    long_date,
    money,
    plural,
    recognised_by,
    total,
    window,
)
from harnesses.scripted._shared import (
    vendor_txns,
)

__all__ = ["vendor_credit_notes", "vendor_debit_notes", "vendor_spend_fiscal_year"]


def _vendor_documents(txn_type: str) -> Handler:
    """The vendor's documents of one transaction type (credit or debit notes)."""
    label = txn_type.replace("_", " ")
    shown = col.txn_table(label.capitalize())

    async def solve(ctx: Context) -> str:
        party = await ctx.party("vendor")
        items = await vendor_txns(ctx, party, [txn_type])
        span = f" {window(ctx)}" if ctx.question.start else ""
        if not items:
            return f"There are no {label}s for {party.link}{span} in {party.legal_entity}."
        head = (
            f"{party.link} has **{plural(len(items), label)}**{span}, totalling "
            f"**{money(abs(total(items, 'amount_cur', -1.0)), items[0].get('currency'))}**."
        )
        return shown.answer(head, items)

    return solve


vendor_credit_notes = recognised_by(
    r"credit notes? (?:have been )?received|issue us any credit notes"
)(_vendor_documents("credit_note"))
vendor_debit_notes = recognised_by(r"debit notes?")(_vendor_documents("debit_note"))


@recognised_by(r"spend with|been invoiced by")
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
