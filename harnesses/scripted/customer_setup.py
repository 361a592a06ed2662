"""Customer Setup: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from harnesses.scripted._base import (
    Context,
    md_link,
    recognised_by,
    with_table,
)
from harnesses.scripted._shared import (
    customer_list,
    party_record,
    payment_terms,
)

__all__ = [
    "contact_customer",
    "customers_by_currency",
    "customers_in_group",
    "method_of_payment_customer",
    "payment_terms_customer",
]

payment_terms_customer = recognised_by(r"terms")(payment_terms("customer"))


@recognised_by(r"phone|contact")
async def contact_customer(ctx: Context) -> str:
    party, data = await party_record(ctx, "customer")
    c = data["customer"]
    address = ", ".join(
        str(c[k])
        for k in ("address_street", "address_city", "address_state", "address_zip")
        if c.get(k)
    )
    head = (
        f"{party.link} in {party.legal_entity}: phone **{c.get('contact_phone')}**, contact "
        f"{c.get('contact_name')}, email {c.get('contact_email')}."
    )
    rows = [
        ["Contact", c.get("contact_name")],
        ["Phone", c.get("contact_phone")],
        ["Email", c.get("contact_email")],
        ["Address", f"{address}, {c.get('address_country', '')}"],
    ]
    return with_table(head, ["Field", "Value"], rows)


@recognised_by(r"method of payment")
async def method_of_payment_customer(ctx: Context) -> str:
    party, data = await party_record(ctx, "customer")
    method = data["customer"].get("method_of_payment")
    if not method:
        return (
            f"{party.link} in {party.legal_entity} has no method of payment set: no records "
            "were found."
        )
    detail = data.get("method_of_payment") or {}
    description = f" ({detail.get('description')})" if detail.get("description") else ""
    return (
        f"{party.link} in {party.legal_entity} pays by method of payment "
        f"**{md_link(method, detail.get('url'))}**{description}."
    )


@recognised_by(r"customer group|belong to")
async def customers_in_group(ctx: Context) -> str:
    group = ctx.question.group_id
    return await customer_list(ctx, f"in customer group {group}", ("group_id", "eq", group))


@recognised_by(r"customers", r"currency|billed in")
async def customers_by_currency(ctx: Context) -> str:
    currency = ctx.question.currency
    return await customer_list(ctx, f"with currency {currency}", ("currency", "eq", currency))
