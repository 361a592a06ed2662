"""Credit Notes (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    _amount,
    _count,
    _cust_items,
    _party_txn_refs,
    _sum,
    listed,
    long_date,
    money,
    no_records,
    party,
    registrar,
)

template = registrar("Credit Notes", "AR")


@template(
    "unapplied_credit_notes_customer",
    party="customer",
    phrasings=(
        "Which credit notes for {who} are still unapplied {where} {asof}?",
        "Does {who} have credit notes that have not been fully applied {where} {asof}?",
        "Are any credit notes of {who} {where} still waiting to be used against invoices {asof}?",
        "List the open credit memos on the account of {who} {where} {asof}.",
        "How much unapplied credit in credit notes does {who} hold with us {where} {asof}?",
    ),
)
def unapplied_credit_notes_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    rows = [row for row in _cust_items(ctx, p) if row.txn_type == "credit_note"]
    if not rows:
        return no_records(
            f"{p.label} in {p.legal_entity} has no unapplied credit notes as of "
            f"{long_date(ctx.today)}.",
            "credit_notes",
            [p.path],
        )
    total = -_sum(row.open_amount_cur for row in rows)
    lines = [
        f"{r.document_number} ({long_date(r.txn_date)}), unapplied "
        f"{money(-r.open_amount_cur, p.currency)} of {money(-r.amount_cur, p.currency)}"
        for r in rows
    ]
    return listed(
        rows,
        lines,
        f"{p.label} in {p.legal_entity} has {len(rows)} credit note(s) not fully applied, "
        f"{money(total, p.currency)} in total",
        [_count("credit_notes", len(rows)), _amount("unapplied_total", total)],
        _party_txn_refs(p, rows),
    )
