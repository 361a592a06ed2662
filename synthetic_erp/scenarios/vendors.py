"""Vendors (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from ledgerbench_core.dataset._records import ExpectedFact
from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _count,
    _fact,
    _num,
    _terms_answer,
    long_date,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft
from synthetic_erp.scenarios._keys import ListKey, party_list

template = registrar("Vendors", "AP")


def _choose_vendors_created_in_month(c: Chooser) -> Draft:
    year, month = c.today.year, c.today.month
    back = c.rng.randrange(0, 12)
    month -= back
    while month < 1:
        month += 12
        year -= 1
    label = {0: "this month", 1: "last month"}.get(back) if c.rng.random() < 0.6 else None
    label = label or f"in {dt.date(year, month, 1):%B} {year}"
    return c.le_draft(
        {"legal_entity": c.view.pick_le(c.rng), "year": year, "month": month}, month=label
    )


def _choose_vendors_terms_longer_than(c: Chooser) -> Draft:
    return c.days_threshold((30, 45, 60))


@template(
    party="vendor",
    phrasings=(
        "Which terms of payment do we have with {who} {where} {asof}?",
        "On what payment terms do we buy from {who} {where}?",
    ),
)
def payment_terms_vendor(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return _terms_answer(ctx, p)


@template(
    party="vendor",
    phrasings=(
        "Can we get a cash discount from {who} {where} for paying early?",
        "Does {who} {where} give us a discount for early payment, and how much is it?",
    ),
)
def vendor_cash_discount(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    pt, cd = s.PaymentTerms, s.CashDiscount
    terms = ctx.session.scalars(
        select(pt).where(pt.legal_entity == p.legal_entity, pt.terms_id == p.row.payment_terms)
    ).first()
    code = terms.cash_discount_code if terms else None
    discount = (
        ctx.session.scalars(
            select(cd).where(cd.legal_entity == p.legal_entity, cd.code == code)
        ).first()
        if code
        else None
    )
    if discount is None:
        return Answer(
            text=f"No. {p.label} in {p.legal_entity} is on payment terms {p.row.payment_terms}, "
            "which carry no early-payment (cash) discount.",
            facts=[_fact("boolean", "offers_discount", False)],
            refs=[p.path],
            records=1,
        )
    return Answer(
        text=f"Yes. {p.label} in {p.legal_entity} is on payment terms {p.row.payment_terms} with "
        f"cash discount {discount.code}: {Decimal(discount.percent):g}% if paid within "
        f"{discount.days} days ({discount.description}).",
        facts=[
            _fact("boolean", "offers_discount", True),
            ExpectedFact(kind="percent", field="discount_percent", value=_num(discount.percent)),
            _count("discount_days", discount.days),
        ],
        refs=[p.path, record_path("cash-discounts", p.legal_entity, discount.code)],
        records=1,
    )


ON_HOLD = ListKey(
    "vendors_on_hold",
    none="No vendors are on payment hold {where}.",
    found="{n} vendor(s) are on payment hold {where} as of {today}",
    counted=False,
    none_noun="vendors",
    ids=("vendors", "account"),
)


@template(
    choose=Chooser.entity_or_all,
    phrasings=(
        "List the vendors that are currently blocked for payment {where} {asof}.",
        "Which suppliers {where} have a payment hold on them {asof}?",
    ),
)
def vendors_on_hold(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params.get("legal_entity")
    on_hold = s.Vendor.payment_hold.is_(True)
    return party_list(ctx, ON_HOLD, "vendor", le, on_hold, line=_held_line)


def _held_line(row: s.Vendor) -> str:
    return f"{row.name} ({row.account}, {row.legal_entity}): {row.hold_reason or 'no reason'}"


CREATED_IN_MONTH = ListKey(
    "vendors",
    none="No vendors were created in {le} in {month}.",
    found="{n} vendor(s) were created in {le} in {month}",
)


@template(
    choose=_choose_vendors_created_in_month,
    phrasings=(
        "Which vendors were set up {month} {where}?",
        "Did we add any new vendors {where} {month}?",
    ),
)
def vendors_created_in_month(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, year, month = params["legal_entity"], params["year"], params["month"]
    start = dt.date(year, month, 1)
    end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    v = s.Vendor
    return party_list(
        ctx,
        CREATED_IN_MONTH,
        "vendor",
        le,
        v.created_date >= start,
        v.created_date <= end,
        line=lambda r: f"{r.name} ({r.account}) on {long_date(r.created_date)}",
        order_by=(v.created_date, v.account),
        month=f"{start:%B} {start.year}",
    )


LONG_TERMS = ListKey(
    "vendors",
    none="No vendors in {le} have payment terms longer than {days} days net.",
    found="{n} vendor(s) in {le} have payment terms longer than {days} days net",
)


@template(
    choose=_choose_vendors_terms_longer_than,
    phrasings=(
        "Do we have vendors {where} on terms beyond {days} days net?",
        "Which suppliers {where} give us more than {days} days to pay?",
    ),
)
def vendors_terms_longer_than(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    v, pt = s.Vendor, s.PaymentTerms
    long_terms = select(pt.terms_id).where(pt.legal_entity == le, pt.net_days > days)
    on_long_terms = v.payment_terms.in_(set(ctx.session.scalars(long_terms)))
    line = "{0.name} ({0.account}) {0.payment_terms}".format
    return party_list(ctx, LONG_TERMS, "vendor", le, on_long_terms, line=line, days=days)
