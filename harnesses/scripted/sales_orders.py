"""Sales Orders: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harnesses.scripted._base import (
    Context,
    doc_link,
    listing,
    long_date,
    money,
    plural,
    when,
    where,
    with_table,
)


def _order_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(o, "sales_id"),
            o.get("customer_account", ""),
            o.get("order_type", ""),
            o.get("status", ""),
            long_date(o.get("order_date")),
            money(o.get("total_amount"), o.get("currency")),
        ]
        for o in items
    ]


ORDER_HEADERS = ["Sales order", "Customer", "Type", "Status", "Order date", "Amount"]


async def _orders(ctx: Context, order_type: str = "sales", **args: Any) -> list[dict[str, Any]]:
    """A "sales order" is an order of type sales; return orders only when asked for by name."""
    items, _ = await ctx.all_items(
        "list_sales_orders", date_to=ctx.as_of, order_type=order_type, **args
    )
    return items


async def open_orders_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _orders(
        ctx, account=party.account, legal_entity=party.legal_entity, status=["open"]
    )
    if not items:
        return (
            f"{party.link} has no open sales orders {where(ctx, party.legal_entity)} {when(ctx)}."
        )
    head = f"{party.link} has **{plural(len(items), 'open sales order')}**: " + listing(
        [doc_link(o, "sales_id") for o in items]
    )
    return with_table(head + ".", ORDER_HEADERS, _order_rows(items))


async def order_count_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _orders(ctx, account=party.account, legal_entity=party.legal_entity)
    if not items:
        return f"{party.link} has no sales orders {where(ctx, party.legal_entity)} {when(ctx)}."
    by_status: dict[str, int] = defaultdict(int)
    for o in items:
        by_status[o.get("status", "?")] += 1
    split = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
    head = f"{party.link} has **{plural(len(items), 'sales order')}** {when(ctx)}: {split}."
    return with_table(head, ORDER_HEADERS, _order_rows(items))


async def do_not_process_orders(ctx: Context) -> str:
    items, _ = await ctx.query(
        "sales-orders",
        ("do_not_process", "eq", True),
        ("order_type", "eq", "sales"),
        ("order_date", "le", ctx.as_of.isoformat()),
    )
    if not items:
        return f"There are no sales orders marked 'Do not process' {where(ctx)} {when(ctx)}."
    head = f"**{plural(len(items), 'sales order')}** {where(ctx)} are marked 'Do not process': "
    head += listing([doc_link(o, "sales_id") for o in items]) + "."
    return with_table(head, ORDER_HEADERS, _order_rows(items))


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


async def largest_orders_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _orders(
        ctx, account=party.account, legal_entity=party.legal_entity, order_type="sales"
    )
    items = [o for o in items if o.get("status") != "canceled"]
    items.sort(key=lambda o: (-float(o.get("total_amount") or 0), o.get("sales_id")))
    items = items[: ctx.question.n or 5]
    if not items:
        return f"{party.link} has no sales orders {where(ctx, party.legal_entity)} {when(ctx)}."
    head = f"The {plural(len(items), 'largest sales order')} of {party.link}: " + "; ".join(
        f"{doc_link(o, 'sales_id')} {money(o.get('total_amount'), o.get('currency'))}"
        for o in items
    )
    return with_table(head + ".", ORDER_HEADERS, _order_rows(items))


async def return_orders_entity(ctx: Context) -> str:
    items = await _orders(ctx, legal_entity=ctx.legal_entity, order_type="return")
    if not items:
        return f"There are no return orders {where(ctx)} {when(ctx)}."
    head = f"There are **{plural(len(items), 'return order')}** {where(ctx)} {when(ctx)}."
    return with_table(head, ORDER_HEADERS, _order_rows(items))


async def orders_by_release_status(ctx: Context) -> str:
    q = ctx.question
    status = "released"
    if q.has(r"partially"):
        status = "partially_released"
    elif q.has(r"release status '?open|status '?not released|'open'"):
        status = "open"
    items, _ = await ctx.query(
        "sales-orders",
        ("release_status", "eq", status),
        ("status", "eq", "open"),
        ("order_type", "eq", "sales"),
        ("order_date", "le", ctx.as_of.isoformat()),
    )
    label = status.replace("_", " ")
    if not items:
        return f"There are no open sales orders with release status {label} {where(ctx)}."
    head = (
        f"**{plural(len(items), 'open sales order')}** {where(ctx)} "
        f"{'has' if len(items) == 1 else 'have'} release status {label}: "
        + listing([doc_link(o, "sales_id") for o in items])
        + "."
    )
    return with_table(head, ORDER_HEADERS, _order_rows(items))
