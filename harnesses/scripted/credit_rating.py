"""Credit Rating: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import re

from harnesses.scripted._base import (
    Context,
    recognised_by,
)
from harnesses.scripted._shared import (
    customer_list,
    party_record,
)

__all__ = ["credit_rating", "rating_count_group"]


@recognised_by(r"credit rating|rated for credit")
async def credit_rating(ctx: Context) -> str:
    party, data = await party_record(ctx, "customer")
    rating = data["customer"].get("credit_rating")
    return f"The credit rating of {party.link} in {party.legal_entity} is **{rating}**."


@recognised_by(r"group", r"rated|rating")
async def rating_count_group(ctx: Context) -> str:
    rating = re.search(r"\b(excellent|good|fair|poor)\b", ctx.question.lower)
    value = rating.group(1).capitalize() if rating else ""
    group = ctx.question.group_id
    return await customer_list(
        ctx,
        f"in customer group {group} rated {value}",
        ("group_id", "eq", group),
        ("credit_rating", "eq", value),
    )
