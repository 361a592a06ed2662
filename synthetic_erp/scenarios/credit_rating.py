"""Credit Rating (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import Answer, OracleContext, Party, _fact, registrar
from synthetic_erp.scenarios._drafting import Chooser, Draft
from synthetic_erp.scenarios._keys import ListKey, party_list

template = registrar("Credit Rating", "AR")


def _choose_rating_count_group(c: Chooser) -> Draft:
    le, group = c.view.pick_le(c.rng), c.group()
    rating = c.rng.choice(("Excellent", "Good", "Fair", "Poor"))
    return c.le_draft(
        {"legal_entity": le, "group_id": group, "rating": rating}, group_id=group, rating=rating
    )


@template(
    party="customer",
    phrasings=(
        "Which credit rating do we keep on file for {who} {where} {asof}?",
        "What credit score band is {who} in {where}?",
        "Tell me how {who} {where} is graded for credit {asof}.",
    ),
)
def credit_rating(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return Answer(
        text=f"The credit rating of {p.label} in {p.legal_entity} is {p.row.credit_rating}.",
        facts=[_fact("text", "credit_rating", p.row.credit_rating)],
        refs=[p.path],
        records=1,
    )


RATED = ListKey(
    "customers",
    none="No customer in group {group} in {le} has the credit rating {rating}.",
    found="{n} customer(s) in group {group} in {le} are rated {rating}",
)


@template(
    choose=_choose_rating_count_group,
    phrasings=(
        "How many customers in group {group_id} {where} carry a {rating} credit rating {asof}?",
        "Which members of customer group {group_id} {where} are graded {rating}?",
    ),
)
def rating_count_group(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, rating, group = params["legal_entity"], params["rating"], params["group_id"]
    c = s.Customer
    rated = (c.group_id == group, c.credit_rating == rating)
    return party_list(ctx, RATED, "customer", le, *rated, group=group, rating=rating)
