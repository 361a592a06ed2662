"""Customer Setup (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _fact,
    _terms_answer,
    no_records,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft
from synthetic_erp.scenarios._keys import ListKey, party_list

template = registrar("Customer Setup", "AR")


def _choose_customers_in_group(c: Chooser) -> Draft:
    le, group = c.view.pick_le(c.rng), c.group()
    return c.le_draft({"legal_entity": le, "group_id": group}, group_id=group)


def _choose_customers_by_currency(c: Chooser) -> Draft:
    le, currency = c.view.pick_le(c.rng), c.rng.choice(("USD", "EUR", "GBP", "CAD"))
    return c.le_draft({"legal_entity": le, "currency": currency}, currency=currency)


@template(
    party="customer",
    phrasings=(
        "On what payment terms does {who} buy from us {where}?",
        "Which terms of payment does {who} have {where}?",
    ),
)
def payment_terms_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return _terms_answer(ctx, p)


@template(
    party="customer",
    phrasings=(
        "How can I reach {who} {where}? I need the contact name, phone and email.",
        "Who is our contact at {who} {where}, and what is their phone number?",
    ),
)
def contact_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    r = p.row
    return Answer(
        text=f"{p.label} in {p.legal_entity}: contact {r.contact_name}, phone {r.contact_phone}, "
        f"email {r.contact_email}, address {r.address_street}, {r.address_city}, "
        f"{r.address_state} {r.address_zip}, {r.address_country}.",
        facts=[
            _fact("text", "phone", r.contact_phone),
            _fact("text", "email", r.contact_email),
            _fact("name", "contact_name", r.contact_name),
        ],
        refs=[p.path],
        records=1,
    )


IN_GROUP = ListKey(
    "customers",
    none="No customers are in customer group {group} in {le}.",
    found="{n} customer(s) are in customer group {group} in {le}; by account",
)


@template(
    choose=_choose_customers_in_group,
    phrasings=(
        "How many customers belong to customer group {group_id} {where}?",
        "List the members of customer group {group_id} {where} {asof}.",
    ),
)
def customers_in_group(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, group = params["legal_entity"], params["group_id"]
    in_group = s.Customer.group_id == group
    return party_list(ctx, IN_GROUP, "customer", le, in_group, group=group)


BY_CURRENCY = ListKey(
    "customers",
    none="No customers in {le} use {billed_in} as their currency.",
    found="{n} customer(s) in {le} use {billed_in}",
)


@template(
    choose=_choose_customers_by_currency,
    phrasings=(
        "How many customers {where} are billed in {currency}?",
        "Which of our customers {where} trade with us in {currency} {asof}?",
    ),
)
def customers_by_currency(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, currency = params["legal_entity"], params["currency"]
    billed_in = s.Customer.currency == currency
    return party_list(ctx, BY_CURRENCY, "customer", le, billed_in, billed_in=currency)


@template(
    party="customer",
    phrasings=(
        "What method of payment is set up for {who} {where}?",
        "How does {who} pay us {where}: which method of payment is on the account?",
    ),
)
def method_of_payment_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    method = p.row.method_of_payment
    if not method:
        return no_records(
            f"{p.label} in {p.legal_entity} has no method of payment set.",
            "method_of_payment",
            [p.path],
            counted=False,
        )
    return Answer(
        text=f"{p.label} in {p.legal_entity} pays by method of payment {method}.",
        facts=[_fact("id", "method_of_payment", method)],
        refs=[p.path],
        records=1,
    )
