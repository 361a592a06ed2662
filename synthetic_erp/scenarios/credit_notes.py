"""Credit Notes (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    long_date,
    money,
    party_open_items,
    registrar,
)
from synthetic_erp.scenarios._keys import ListKey, Total, ledger_answer

template = registrar("Credit Notes", "AR")


def _unapplied_line(row: s.CustomerTransaction, currency: str) -> str:
    return (
        f"{row.document_number} ({long_date(row.txn_date)}), unapplied "
        f"{money(-row.open_amount_cur, currency)} of {money(-row.amount_cur, currency)}"
    )


UNAPPLIED = ListKey(
    "credit_notes",
    none="{who} has no unapplied credit notes as of {today}.",
    found="{who} has {n} credit note(s) not fully applied, {total} in total",
    total=Total("unapplied_total", "open_amount_cur", sign=-1, side="credit"),
)


@template(
    party="customer",
    phrasings=(
        "Which credit notes for {who} are still unapplied {where} {asof}?",
        "Does {who} have credit notes that have not been fully applied {where} {asof}?",
        "Are any credit notes of {who} {where} still waiting to be used against invoices {asof}?",
        "List the open credit memos on the account of {who} {where} {asof}.",
        "How much unapplied credit in credit notes does {who} hold with us {where} {asof}?",
    ),
)
def unapplied_credit_notes_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    rows = [row for row in party_open_items(ctx, p) if row.txn_type == "credit_note"]
    return ledger_answer(UNAPPLIED, p, rows, _unapplied_line, today=long_date(ctx.today))
