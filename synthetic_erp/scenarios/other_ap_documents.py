"""Other (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _amount,
    _count,
    _none,
    _sum,
    between,
    long_date,
    money,
    party_txns,
    registrar,
    window,
)
from synthetic_erp.scenarios._drafting import Chooser
from synthetic_erp.scenarios._keys import ListKey, Total, ledger_answer

template = registrar("Other", "AP")


def _notes_list(kind: str) -> ListKey:
    """Credit or debit notes of a vendor: the same key, worded with the kind of note."""
    return ListKey(
        f"{kind}_notes",
        none=f"There are no {kind} notes for {{who}}{{window}}.",
        found=f"{{n}} {kind} note(s) for {{who}}{{window}}, {{total}} in total",
        total=Total("total", sign=-1, side="debit"),  # notes reduce what we owe
    )


NOTES = {"credit_note": _notes_list("credit"), "debit_note": _notes_list("debit")}


def _vendor_doc_answer(
    ctx: OracleContext, p: Party, params: dict[str, Any], txn_type: str
) -> Answer:
    of_type = s.VendorTransaction.txn_type == txn_type
    if not params.get("start"):
        return ledger_answer(NOTES[txn_type], p, party_txns(ctx, p, of_type), window="")
    start, end = window(params)
    rows = party_txns(ctx, p, of_type, start=start, end=end)
    return ledger_answer(NOTES[txn_type], p, rows, window=f" {between(start, end)}")


def _vendors_with(ctx: OracleContext, txn_type: str) -> list[tuple[str, str]]:
    t = s.VendorTransaction
    query = select(t.legal_entity, t.vendor_account).where(t.txn_type == txn_type).distinct()
    return [tuple(row) for row in ctx.session.execute(query)]


@template(
    party="vendor",
    having=lambda ctx: _vendors_with(ctx, "credit_note"),
    extra=Chooser.period_extra,
    phrasings=(
        "Did {who} issue us any credit notes {period} {where}?",
        "Which credit notes have we received from {who} {where} {period}?",
    ),
)
def vendor_credit_notes(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, p, params, "credit_note")


@template(
    party="vendor",
    phrasings=(
        "List the debit notes we have raised against {who} {where} {asof}.",
        "Have we issued any debit notes to {who} {where} {asof}?",
    ),
)
def vendor_debit_notes(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, p, params, "debit_note")


@template(
    party="vendor",
    phrasings=(
        "How much have we spent with {who} in the current fiscal year {where} {asof}?",
        "What is our net spend with {who} {where} so far this fiscal year?",
    ),
)
def vendor_spend_fiscal_year(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    """Spend = posted invoices net of credit and debit notes, in accounting currency."""
    start, _ = ctx.fiscal_year(p.legal_entity)
    t = s.VendorTransaction
    kinds = ("invoice", "credit_note", "debit_note")
    rows = party_txns(ctx, p, t.txn_type.in_(kinds), start=start)
    invoices = [r for r in rows if r.txn_type == "invoice"]
    window = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.today)})"
    acct = ctx.currency(p.legal_entity)
    total = _sum(r.amount_acct for r in rows)
    facts = [_amount("spend", total, acct), _count("invoices", len(invoices))]
    if not rows:
        facts.insert(0, _none("invoices"))
    return Answer(
        text=f"Net spend with {p.label} in {p.legal_entity} {window} is {money(total, acct)} "
        f"(accounting currency): {len(invoices)} posted invoice(s) less credit and debit notes.",
        facts=facts,
        refs=[p.path],
        records=1 if rows else 0,
    )
