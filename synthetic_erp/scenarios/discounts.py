"""Discounts (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import Answer, OracleContext, Party, registrar
from synthetic_erp.scenarios._keys import dispute_answer

template = registrar("Discounts", "AR")


@template(
    party="customer",
    phrasings=(
        "List the open deductions taken by {who} {where} {asof}.",
        "Has {who} {where} short-paid us with deductions that are still open {asof}?",
        "Which unresolved deductions does {who} have {where} {asof}?",
        "How much in open deductions is outstanding for {who} {where} {asof}?",
        "Show me the deductions of {who} {where} that nobody has cleared yet {asof}.",
    ),
)
def open_deductions_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return dispute_answer(ctx, p, "deduction")
