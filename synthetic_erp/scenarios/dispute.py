"""Dispute (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    _dispute_answer,
    party,
    registrar,
)

template = registrar("Dispute", "AR")


@template(
    "open_disputes_customer",
    party="customer",
    phrasings=(
        "Show me all transactions {who} has open disputes on {where} {asof}.",
        "Which invoices of {who} are currently disputed {where} {asof}?",
    ),
)
def open_disputes_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    return _dispute_answer(ctx, party(ctx, "customer", params), "dispute")
