"""Outstanding Balance (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import (
    AR_INVOICE_TYPES,
    Answer,
    OracleContext,
    Party,
    _amount,
    _balance_answer,
    _sum,
    _top,
    long_date,
    money,
    party_open_items,
    registrar,
)
from synthetic_erp.scenarios._keys import ListKey, txn_refs

template = registrar("Outstanding Balance", "AR")


UNPAID = ListKey(
    "unpaid_invoices",
    none="{who} has no unpaid invoices as of {today}.",
    found="{who} has {n} unpaid invoice(s) totalling {total} as of {today}, largest first",
    counted=False,
)


@template(
    party="customer",
    phrasings=(
        "Which invoices of {who} {where} are still unpaid {asof}?",
        "Show the open invoices for {who} {where} with what is left to pay on each {asof}.",
        "Has {who} {where} left any invoices unpaid {asof}?",
    ),
)
def unpaid_invoices_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    items = [
        row
        for row in party_open_items(ctx, p)
        if row.txn_type in AR_INVOICE_TYPES and row.open_amount_cur > 0
    ]
    items.sort(key=lambda row: (-row.open_amount_cur, row.voucher))
    total = _sum(row.open_amount_cur for row in items)
    lines = [
        f"{row.document_number} ({long_date(row.txn_date)}) open "
        f"{money(row.open_amount_cur, p.currency)}"
        for row in items
    ]
    largest = [row.document_number for row in items[:3]]
    return UNPAID.answer(
        items,
        lines,
        txn_refs("customer", items),
        party=p,
        facts=[_amount("unpaid_total", total), _top("largest_unpaid", largest)],
        total=money(total, p.currency),
        today=long_date(ctx.today),
    )


@template(
    party="customer",
    phrasings=(
        "How much does {who} owe us {where} {asof}?",
        "Tell me the open AR balance of {who} {where} {asof}.",
        "What's the outstanding receivable from {who} {where} {asof}?",
    ),
)
def customer_balance(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return _balance_answer(ctx, p, party_open_items(ctx, p), "The outstanding balance of")
