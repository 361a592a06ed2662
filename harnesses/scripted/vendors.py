"""Vendors: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import datetime as dt
from typing import Any

from harnesses.scripted._base import (
    MONTH_YEAR,
    Context,
    _month_number,
    _party_list,
    _vendor,
    doc_link,
    long_date,
    md_link,
    payment_terms,
    where,
)


async def payment_terms_vendor(ctx: Context) -> str:
    return await payment_terms(ctx, "vendor")


async def vendor_cash_discount(ctx: Context) -> str:
    party, data = await _vendor(ctx)
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


def _vendor_row(item: dict[str, Any]) -> list[Any]:
    return [
        doc_link(item, "account"),
        item.get("name"),
        item.get("payment_terms"),
        item.get("hold_reason") or "",
        long_date(item.get("created_date")),
    ]


async def _vendor_list(ctx: Context, label: str, *filters: tuple[str, str, Any]) -> str:
    headers = ["Vendor", "Name", "Terms", "Hold reason", "Created"]
    return await _party_list(ctx, "vendor", f"{label} {where(ctx)}", filters, headers, _vendor_row)


async def vendors_on_hold(ctx: Context) -> str:
    return await _vendor_list(ctx, "on payment hold", ("payment_hold", "eq", True))


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
