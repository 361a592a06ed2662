"""Dispute (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import Answer, OracleContext, Party, registrar
from synthetic_erp.scenarios._keys import dispute_answer

template = registrar("Dispute", "AR")


@template(
    party="customer",
    phrasings=(
        "Which invoices of {who} are currently disputed {where} {asof}?",
        "Is {who} {where} disputing any transactions {asof}?",
        "List the open disputes raised by {who} {where} {asof}.",
        "What is {who} contesting with us {where} {asof}?",
        "Show the unresolved disputes on the account of {who} {where} {asof}.",
    ),
)
def open_disputes_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return dispute_answer(ctx, p, "dispute")
