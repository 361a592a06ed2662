"""Other (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    _amount,
    _count,
    _d,
    _none,
    _party_txn_refs,
    _sum,
    _txn_line,
    _vendor_txns,
    listed,
    long_date,
    money,
    party,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser

template = registrar("Other", "AP")


def _vendor_doc_answer(ctx: OracleContext, params: dict[str, Any], txn_type: str) -> Answer:
    p = party(ctx, "vendor", params)
    t = s.VendorTransaction
    conditions = [t.txn_type == txn_type]
    window = ""
    if params.get("start"):
        start, end = _d(params["start"]), _d(params["end"])
        conditions += [t.txn_date >= start, t.txn_date <= end]
        window = f" between {long_date(start)} and {long_date(end)}"
    rows = _vendor_txns(ctx, p, *conditions)
    label = txn_type.replace("_", " ")
    if not rows:
        return Answer(
            text=f"There are no {label}s for {p.label} in {p.legal_entity}{window}.",
            facts=[_none(f"{txn_type}s"), _count(f"{txn_type}s", 0)],
            refs=[p.path],
        )
    total = -_sum(r.amount_cur for r in rows)
    lines = [_txn_line(r, p.currency) for r in rows]
    return listed(
        rows,
        lines,
        f"{len(rows)} {label}(s) for {p.label} in {p.legal_entity}{window}, "
        f"{money(total, p.currency)} in total",
        [_count(f"{txn_type}s", len(rows)), _amount("total", total)],
        _party_txn_refs(p, rows),
    )


def _vendors_with(ctx: OracleContext, txn_type: str) -> list[tuple[str, str]]:
    t = s.VendorTransaction
    query = select(t.legal_entity, t.vendor_account).where(t.txn_type == txn_type).distinct()
    return [tuple(row) for row in ctx.session.execute(query)]


@template(
    "vendor_credit_notes",
    party="vendor",
    having=lambda ctx: _vendors_with(ctx, "credit_note"),
    extra=Chooser.period_extra,
    phrasings=(
        "Did {who} issue us any credit notes {period} {where}?",
        "Which credit notes have we received from {who} {where} {period}?",
    ),
)
def vendor_credit_notes(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, params, "credit_note")


@template(
    "vendor_debit_notes",
    party="vendor",
    phrasings=(
        "List the debit notes we have raised against {who} {where} {asof}.",
        "Have we issued any debit notes to {who} {where} {asof}?",
    ),
)
def vendor_debit_notes(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, params, "debit_note")


@template(
    "vendor_spend_fiscal_year",
    party="vendor",
    phrasings=(
        "How much have we spent with {who} in the current fiscal year {where} {asof}?",
        "What is our net spend with {who} {where} so far this fiscal year?",
    ),
)
def vendor_spend_fiscal_year(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    """Spend = posted invoices net of credit and debit notes, in accounting currency."""
    p = party(ctx, "vendor", params)
    start, _ = ctx.fiscal_year(p.legal_entity)
    t = s.VendorTransaction
    kinds = ("invoice", "credit_note", "debit_note")
    rows = _vendor_txns(ctx, p, t.txn_type.in_(kinds), t.txn_date >= start)
    invoices = [r for r in rows if r.txn_type == "invoice"]
    window = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.today)})"
    acct = ctx.currency(p.legal_entity)
    total = _sum(r.amount_acct for r in rows)
    facts = [_amount("spend", total), _count("invoices", len(invoices))]
    if not rows:
        facts.insert(0, _none("invoices"))
    return Answer(
        text=f"Net spend with {p.label} in {p.legal_entity} {window} is {money(total, acct)} "
        f"(accounting currency): {len(invoices)} posted invoice(s) less credit and debit notes.",
        facts=facts,
        refs=[p.path],
        records=1 if rows else 0,
    )
