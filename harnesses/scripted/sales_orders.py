"""Sales Orders: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    Party,
    doc_link,
    links,
    money,
    plural,
    recognised_by,
    verb,
    when,
    where,
)

__all__ = [
    "do_not_process_orders",
    "largest_orders_customer",
    "most_open_orders_entity",
    "open_orders_customer",
    "order_count_customer",
    "orders_by_release_status",
    "return_orders_entity",
]

ORDERS = col.Table(
    {
        "Sales order": col.link("sales_id"),
        "Customer": col.text("customer_account"),
        "Type": col.text("order_type"),
        "Status": col.text("status"),
        "Order date": col.date("order_date"),
        "Amount": col.amount("total_amount", "currency"),
    }
)


async def _orders(ctx: Context, order_type: str = "sales", **args: Any) -> list[dict[str, Any]]:
    """A "sales order" is an order of type sales; return orders only when asked for by name."""
    return await ctx.all_items(
        "list_sales_orders", date_to=ctx.as_of, order_type=order_type, **args
    )


async def _party_orders(ctx: Context, party: Party, **args: Any) -> list[dict[str, Any]]:
    return await _orders(ctx, account=party.account, legal_entity=party.legal_entity, **args)


def _no_orders(ctx: Context, party: Party, which: str = "") -> str:
    return f"{party.link} has no {which}sales orders {where(ctx, party.legal_entity)} {when(ctx)}."


@recognised_by(r"sales orders?", r"open")
async def open_orders_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _party_orders(ctx, party, status=["open"])
    if not items:
        return _no_orders(ctx, party, "open ")
    head = f"{party.link} has **{plural(len(items), 'open sales order')}**: "
    return ORDERS.answer(head + links(items, "sales_id") + ".", items)


@recognised_by(r"sales orders?")
async def order_count_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _party_orders(ctx, party)
    if not items:
        return _no_orders(ctx, party)
    by_status: dict[str, int] = defaultdict(int)
    for o in items:
        by_status[o.get("status", "?")] += 1
    split = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
    head = f"{party.link} has **{plural(len(items), 'sales order')}** {when(ctx)}: {split}."
    return ORDERS.answer(head, items)


async def _flagged_orders(ctx: Context, *filters: tuple[str, str, Any]) -> list[dict[str, Any]]:
    """Sales orders (not returns) up to the as-of date that match ``query_entity_set`` filters."""
    items, _ = await ctx.query(
        "sales-orders",
        *filters,
        ("order_type", "eq", "sales"),
        ("order_date", "le", ctx.as_of.isoformat()),
    )
    return items


@recognised_by(r"do.not.process")
async def do_not_process_orders(ctx: Context) -> str:
    items = await _flagged_orders(ctx, ("do_not_process", "eq", True))
    if not items:
        return f"There are no sales orders marked 'Do not process' {where(ctx)} {when(ctx)}."
    head = f"**{plural(len(items), 'sales order')}** {where(ctx)} are marked 'Do not process': "
    return ORDERS.answer(head + links(items, "sales_id") + ".", items)


@recognised_by(r"most open sales orders|largest number of open sales orders")
async def most_open_orders_entity(ctx: Context) -> str:
    items = await _orders(ctx, legal_entity=ctx.legal_entity, status=["open"])
    counts: dict[str, int] = defaultdict(int)
    for o in items:
        counts[o["customer_account"]] += 1
    if not counts:
        return f"There are no open sales orders {where(ctx)} {when(ctx)}."
    best = max(counts.values())
    leaders = sorted(a for a, n in counts.items() if n == best)
    return (
        f"The customer(s) with the most open sales orders {where(ctx)} {when(ctx)}: "
        f"**{', '.join(ctx.link('customers', ctx.legal_entity, a) for a in leaders)}**, with "
        f"{plural(best, 'open order')} each."
    )


@recognised_by(r"sales orders?", r"largest|top \d|top (?:three|five|ten)|by amount")
async def largest_orders_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _party_orders(ctx, party, order_type="sales")
    items = [o for o in items if o.get("status") != "canceled"]
    items.sort(key=lambda o: (-float(o.get("total_amount") or 0), o.get("sales_id")))
    items = items[: ctx.question.n or 5]
    if not items:
        return _no_orders(ctx, party)
    head = f"The {plural(len(items), 'largest sales order')} of {party.link}: " + "; ".join(
        f"{doc_link(o, 'sales_id')} {money(o.get('total_amount'), o.get('currency'))}"
        for o in items
    )
    return ORDERS.answer(head + ".", items)


@recognised_by(r"return orders|returned")
async def return_orders_entity(ctx: Context) -> str:
    items = await _orders(ctx, legal_entity=ctx.legal_entity, order_type="return")
    if not items:
        return f"There are no return orders {where(ctx)} {when(ctx)}."
    head = f"There are **{plural(len(items), 'return order')}** {where(ctx)} {when(ctx)}."
    return ORDERS.answer(head, items)


@recognised_by(r"release status|[\"']released[\"'] status")
async def orders_by_release_status(ctx: Context) -> str:
    q = ctx.question
    status = "released"
    if q.has(r"partially"):
        status = "partially_released"
    elif q.has(r"release status '?open|status '?not released|'open'"):
        status = "open"
    items = await _flagged_orders(ctx, ("release_status", "eq", status), ("status", "eq", "open"))
    label = status.replace("_", " ")
    if not items:
        return f"There are no open sales orders with release status {label} {where(ctx)}."
    head = (
        f"**{plural(len(items), 'open sales order')}** {where(ctx)} "
        f"{verb(len(items), 'has', 'have')} release status {label}: "
    )
    return ORDERS.answer(head + links(items, "sales_id") + ".", items)
