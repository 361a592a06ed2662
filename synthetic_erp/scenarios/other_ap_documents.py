"""Other (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    LIST_LIMIT,
    Answer,
    OracleContext,
    _amount,
    _count,
    _d,
    _listing,
    _none,
    _sum,
    _txn_line,
    _txn_path,
    _vendor_txns,
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
    return Answer(
        text=f"{len(rows)} {label}(s) for {p.label} in {p.legal_entity}{window}, "
        f"{money(total, p.currency)} in total: {_listing(lines, len(rows))}.",
        facts=[_count(f"{txn_type}s", len(rows)), _amount("total", total)],
        refs=[p.path, *(_txn_path("vendor", r) for r in rows[:LIST_LIMIT])],
        records=len(rows),
    )


@template(
    "vendor_credit_notes",
    party="vendor",
    extra=Chooser.window_extra,
    phrasings=(
        "What credit notes have been received from {who} between {start} and {end} {where}?",
        "Did {who} issue us any credit notes from {start} to {end} {where}?",
    ),
)
def vendor_credit_notes(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, params, "credit_note")


@template(
    "vendor_debit_notes",
    party="vendor",
    phrasings=(
        "Are there any debit notes issued to {who} {where} {asof}?",
        "List the debit notes we have raised against {who} {where} {asof}.",
    ),
)
def vendor_debit_notes(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _vendor_doc_answer(ctx, params, "debit_note")


@template(
    "vendor_spend_fiscal_year",
    party="vendor",
    phrasings=(
        "What is the total spend with {who} this fiscal year {where} {asof}?",
        "How much have we been invoiced by {who} in the current fiscal year {where} {asof}?",
    ),
)
def vendor_spend_fiscal_year(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    start, _ = ctx.fiscal_year(p.legal_entity)
    t = s.VendorTransaction
    rows = _vendor_txns(ctx, p, t.txn_type == "invoice", t.txn_date >= start)
    window = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.today)})"
    if not rows:
        return Answer(
            text=f"No invoices from {p.label} were posted in {p.legal_entity} {window}: spend is "
            f"{money(0, p.currency)}.",
            facts=[_none("invoices"), _amount("spend", 0)],
            refs=[p.path],
        )
    total = _sum(r.amount_cur for r in rows)
    return Answer(
        text=f"Spend with {p.label} in {p.legal_entity} {window} is {money(total, p.currency)} "
        f"over {len(rows)} posted invoice(s).",
        facts=[_amount("spend", total), _count("invoices", len(rows))],
        refs=[p.path],
        records=1,
    )
