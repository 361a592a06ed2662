"""Vendors: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import datetime as dt
from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    MONTH_YEAR,
    Context,
    _month_number,
    md_link,
    recognised_by,
    where,
)
from harnesses.scripted._shared import (
    party_list,
    party_record,
    payment_terms,
)

__all__ = [
    "payment_terms_vendor",
    "vendor_cash_discount",
    "vendors_created_in_month",
    "vendors_on_hold",
    "vendors_terms_longer_than",
]


payment_terms_vendor = recognised_by(
    r"terms", r"vendor account|payment terms for|terms of payment do we have with"
)(payment_terms("vendor"))


@recognised_by(r"early payment discount|cash discount from|discount percentage|for paying early")
async def vendor_cash_discount(ctx: Context) -> str:
    party, data = await party_record(ctx, "vendor")
    terms = data["vendor"].get("payment_terms")
    discount = data.get("cash_discount")
    if not discount:
        return (
            f"No. {party.link} in {party.legal_entity} has payment terms **{terms}**, which carry "
            "no early-payment (cash) discount."
        )
    percent = float(discount.get("percent") or 0)
    return (
        f"Yes. {party.link} in {party.legal_entity} has payment terms **{terms}** with cash "
        f"discount {md_link(discount.get('code'), discount.get('url'))}: **{percent:g}%** if paid "
        f"within {discount.get('days')} days ({discount.get('description')})."
    )


VENDORS = col.Table(
    {
        "Vendor": col.link("account"),
        "Name": col.text("name", None),
        "Terms": col.text("payment_terms", None),
        "Hold reason": lambda item: item.get("hold_reason") or "",
        "Created": col.date("created_date"),
    }
)


async def _vendor_list(ctx: Context, label: str, *filters: tuple[str, str, Any]) -> str:
    return await party_list(ctx, "vendor", f"{label} {where(ctx)}", filters, VENDORS)


@recognised_by(r"vendors", r"payment hold|blocked for payment")
async def vendors_on_hold(ctx: Context) -> str:
    return await _vendor_list(ctx, "on payment hold", ("payment_hold", "eq", True))


@recognised_by(r"vendors", r"created|set up")
async def vendors_created_in_month(ctx: Context) -> str:
    match = MONTH_YEAR.search(ctx.question.text)
    if match:
        start = dt.date(int(match.group(2)), _month_number(match.group(1)), 1)
    else:
        start = ctx.as_of.replace(day=1)
    end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    return await _vendor_list(
        ctx,
        f"created in {start:%B} {start.year}",
        ("created_date", "ge", start.isoformat()),
        ("created_date", "le", end.isoformat()),
    )


@recognised_by(r"vendors", r"longer than|beyond")
async def vendors_terms_longer_than(ctx: Context) -> str:
    days = ctx.question.days or 60
    data = await ctx.call(
        "list_reference_data", kind="payment_terms", legal_entity=ctx.legal_entity
    )
    long_terms = sorted(
        {t["terms_id"] for t in data.get("items", []) if int(t.get("net_days") or 0) > days}
    )
    if not long_terms:
        return f"There are no vendors with payment terms longer than net {days} days {where(ctx)}."
    return await _vendor_list(
        ctx, f"on payment terms longer than net {days} days", ("payment_terms", "in", long_terms)
    )
