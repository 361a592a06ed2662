"""Outstanding Balance (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _balance_answer,
    _top,
    is_open_invoice,
    long_date,
    money,
    party_open_items,
    registrar,
)
from synthetic_erp.scenarios._keys import ListKey, Total, ledger_answer, s

template = registrar("Outstanding Balance", "AR")


def _open_line(row: s.CustomerTransaction, currency: str) -> str:
    return (
        f"{row.document_number} ({long_date(row.txn_date)}) open "
        f"{money(row.open_amount_cur, currency)}"
    )


UNPAID = ListKey(
    "unpaid_invoices",
    none="{who} has no unpaid invoices as of {today}.",
    found="{who} has {n} unpaid invoice(s) totalling {total} as of {today}, largest first",
    total=Total("unpaid_total", "open_amount_cur", side="debit"),
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
    items = [row for row in party_open_items(ctx, p) if is_open_invoice(row)]
    items.sort(key=lambda row: (-row.open_amount_cur, row.voucher))
    largest = _top(
        "largest_unpaid", [row.document_number for row in items[:3]], complete=len(items) <= 3
    )
    return ledger_answer(UNPAID, p, items, _open_line, facts=[largest], today=long_date(ctx.today))


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
