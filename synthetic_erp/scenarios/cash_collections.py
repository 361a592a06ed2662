"""Cash Collections (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _amount,
    _count,
    _none,
    _party_txn_refs,
    _payments,
    _sum,
    long_date,
    money,
    registrar,
)

template = registrar("Cash Collections", "AR")


@template(
    party="customer",
    phrasings=(
        "How much cash have we collected from {who} so far this fiscal year {where} {asof}?",
        "What have we received from {who} {where} since the start of the current fiscal year?",
        "Fiscal year to date, how much has {who} paid us {where}?",
        "Total the collections from {who} {where} in this fiscal year {asof}.",
        "How much money came in from {who} {where} during the current fiscal year?",
    ),
)
def collected_fiscal_year(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    start, _ = ctx.fiscal_year(p.legal_entity)
    rows = _payments(ctx, p, start, ctx.today)
    window = f"in the current fiscal year ({long_date(start)} to {long_date(ctx.today)})"
    if not rows:
        return Answer(
            text=f"Nothing was collected from {p.label} in {p.legal_entity} {window}: no payments.",
            facts=[_none("payments"), _amount("total_collected", 0, p.currency, "credit")],
            refs=[p.path],
        )
    total = -_sum(row.amount_cur for row in rows)
    return Answer(
        text=f"{money(total, p.currency)} was collected from {p.label} in {p.legal_entity} "
        f"{window}, in {len(rows)} payment(s).",
        facts=[
            _amount("total_collected", total, p.currency, "credit"),
            _count("payments", len(rows)),
        ],
        refs=_party_txn_refs(p, rows),
        records=1,
    )
