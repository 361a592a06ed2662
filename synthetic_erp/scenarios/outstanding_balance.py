"""Outstanding Balance (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import (
    AR_INVOICE_TYPES,
    Answer,
    OracleContext,
    _amount,
    _balance_answer,
    _count,
    _cust_items,
    _listing,
    _party_txn_refs,
    _sum,
    _top,
    long_date,
    money,
    no_records,
    party,
    registrar,
)

template = registrar("Outstanding Balance", "AR")


@template(
    "unpaid_invoices_customer",
    party="customer",
    phrasings=(
        "Which invoices of {who} {where} are still unpaid {asof}?",
        "Show the open invoices for {who} {where} with what is left to pay on each {asof}.",
        "Has {who} {where} left any invoices unpaid {asof}?",
    ),
)
def unpaid_invoices_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    items = [
        row
        for row in _cust_items(ctx, p)
        if row.txn_type in AR_INVOICE_TYPES and row.open_amount_cur > 0
    ]
    items.sort(key=lambda row: (-row.open_amount_cur, row.voucher))
    if not items:
        return no_records(
            f"{p.label} in {p.legal_entity} has no unpaid invoices as of {long_date(ctx.today)}.",
            "unpaid_invoices",
            [p.path],
            counted=False,
        )
    total = _sum(row.open_amount_cur for row in items)
    lines = [
        f"{row.document_number} ({long_date(row.txn_date)}) open "
        f"{money(row.open_amount_cur, p.currency)}"
        for row in items
    ]
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(items)} unpaid invoice(s) totalling "
        f"{money(total, p.currency)} as of {long_date(ctx.today)}, largest first: "
        f"{_listing(lines, len(items))}.",
        facts=[
            _count("unpaid_invoices", len(items)),
            _amount("unpaid_total", total),
            _top("largest_unpaid", [row.document_number for row in items[:3]]),
        ],
        refs=_party_txn_refs(p, items),
        records=len(items),
    )


@template(
    "customer_balance",
    party="customer",
    phrasings=(
        "How much does {who} owe us {where} {asof}?",
        "Tell me the open AR balance of {who} {where} {asof}.",
        "What's the outstanding receivable from {who} {where} {asof}?",
    ),
)
def customer_balance(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    return _balance_answer(ctx, p, _cust_items(ctx, p), "The outstanding balance of")
