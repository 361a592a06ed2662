"""Sales Orders (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _amount,
    _count,
    _le_filter,
    _names,
    _none,
    _only,
    _top,
    _where,
    long_date,
    money,
    no_records,
    party_conditions,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft
from synthetic_erp.scenarios._keys import ListKey, record_refs

template = registrar("Sales Orders", "AR")


def _choose_orders_by_release_status(c: Chooser) -> Draft:
    # Released orders are delivered or invoiced, so open orders are open or partly released.
    status = c.rng.choice(("open", "partially_released"))
    return c.le_draft(
        {"legal_entity": c.view.pick_le(c.rng), "release_status": status},
        release_label=status.replace("_", " "),
    )


def _orders(ctx: OracleContext, *conditions, order_type: str = "sales") -> list[s.SalesOrder]:
    """Orders of one type: a "sales order" is an order of type sales, never a return order."""
    o = s.SalesOrder
    query = select(o).where(o.order_date <= ctx.today, o.order_type == order_type, *conditions)
    return list(ctx.session.scalars(query.order_by(o.legal_entity, o.sales_id)))


def _order_line(order: s.SalesOrder, name: str | None = None) -> str:
    who = f" for {name} ({order.customer_account})" if name else ""
    return (
        f"{order.sales_id}{who}, {order.order_type} order, status {order.status}, "
        f"{money(order.total_amount, order.currency)}, ordered {long_date(order.order_date)}"
    )


def _order_refs(orders: list[s.SalesOrder]) -> list[str]:
    return record_refs("sales-orders", orders, "sales_id")


def _status_split(orders: list[s.SalesOrder]) -> tuple[dict[str, int], str]:
    """Orders per status (in status order) and that split in words ("2 delivered, 1 open")."""
    by_status = dict(sorted(Counter(order.status for order in orders).items()))
    return by_status, ", ".join(f"{count} {status}" for status, count in by_status.items())


OPEN_ORDERS = ListKey(
    "open_orders",
    none="{who} has no open sales orders as of {today}.",
    found="{who} has {n} open sales order(s)",
    ids=("orders", "sales_id"),
)


@template(
    party="customer",
    phrasings=(
        "List the sales orders of {who} that are still open {where} {asof}.",
        "Which sales orders from {who} {where} are still waiting to be delivered {asof}?",
    ),
)
def open_orders_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    o = s.SalesOrder
    rows = _orders(ctx, *party_conditions(o, p), o.status == "open")
    return OPEN_ORDERS.answer(
        rows,
        [_order_line(row) for row in rows],
        _order_refs(rows),
        party=p,
        today=long_date(ctx.today),
    )


@template(
    party="customer",
    phrasings=(
        "Give me a count of the sales orders of {who} by status {where} {asof}.",
        "How many sales orders has {who} placed with us {where} {asof}?",
    ),
)
def order_count_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    rows = _orders(ctx, *party_conditions(s.SalesOrder, p))
    if not rows:
        return no_records(f"{p.label} in {p.legal_entity} has no sales orders.", "orders", [p.path])
    by_status, split = _status_split(rows)
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} sales order(s) as of "
        f"{long_date(ctx.today)}: {split}.",
        facts=[_count("orders", len(rows))]
        + [_count(f"orders_{status}", count) for status, count in by_status.items()],
        refs=[p.path],
        records=len(by_status),
    )


DO_NOT_PROCESS = ListKey(
    "orders",
    none="No sales orders are marked 'Do not process' {where}.",
    found="{n} sales order(s) are marked 'Do not process' {where}",
    ids=("orders", "sales_id"),
)


@template(
    choose=Chooser.entity_or_all,
    phrasings=(
        "Are there any sales orders flagged do-not-process {where} {asof}?",
        "Which orders {where} carry the do-not-process flag {asof}?",
    ),
)
def do_not_process_orders(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params.get("legal_entity")
    o = s.SalesOrder
    rows = _orders(ctx, o.do_not_process.is_(True), *_le_filter(o, le))
    lines = [_order_line(row) + f" ({row.customer_account}, {row.legal_entity})" for row in rows]
    return DO_NOT_PROCESS.answer(rows, lines, _order_refs(rows), where=_where(le))


@template(
    choose=Chooser.entity_only,
    phrasings=(
        "Who has the largest number of open sales orders {where} {asof}?",
        "Which customer {where} is waiting on the most open sales orders {asof}?",
    ),
)
def most_open_orders_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    o = s.SalesOrder
    counts: dict[str, int] = defaultdict(int)
    for row in _orders(ctx, o.legal_entity == le, o.status == "open"):
        counts[row.customer_account] += 1
    if not counts:
        return Answer(text=f"There are no open sales orders in {le}.", facts=[_none("orders")])
    best = max(counts.values())
    leaders = sorted(a for a, n in counts.items() if n == best)
    names = _names(ctx, "customer", le, leaders)
    who = ", ".join(f"{names[a]} ({a})" for a in leaders)
    return Answer(
        text=f"The customer(s) with the most open sales orders in {le} as of "
        f"{long_date(ctx.today)}: {who}, with {best} open order(s)"
        + (" each." if len(leaders) > 1 else "."),
        facts=[
            _count("open_orders", best),
            _top("customers", leaders, ordered=False, complete=True),
        ],
        refs=[record_path("customers", le, a) for a in leaders],
        records=len(leaders),
    )


@template(
    party="customer",
    extra=Chooser.top_n_extra,
    phrasings=(
        "List the top {n} sales orders of {who} by amount {where} {asof}.",
        "Show me the {n} biggest sales orders {who} {where} has placed {asof}.",
    ),
)
def largest_orders_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    o = s.SalesOrder
    rows = _orders(
        ctx,
        o.legal_entity == p.legal_entity,
        o.customer_account == p.account,
        o.status != "canceled",
    )
    rows.sort(key=lambda row: (-row.total_amount, row.sales_id))
    found = len(rows)
    rows = rows[: params["n"]]
    if not rows:
        return no_records(
            f"{p.label} in {p.legal_entity} has no sales orders (canceled ones excluded).",
            "orders",
            [p.path],
            counted=False,
        )
    lines = [_order_line(row) for row in rows]
    return Answer(
        text=f"The {len(rows)} largest sales order(s) of {p.label} in {p.legal_entity}, "
        f"canceled orders excluded{_only(params['n'], found, 'such orders')}: "
        + "; ".join(lines)
        + ".",
        facts=[
            _top("orders", [row.sales_id for row in rows], complete=found <= params["n"]),
            _amount("largest_amount", rows[0].total_amount, rows[0].currency),
        ],
        refs=[p.path, *_order_refs(rows)],
        records=len(rows),
    )


@template(
    choose=Chooser.entity_only,
    phrasings=(
        "Count the return orders on the books {where} {asof}.",
        "What goods have customers sent back {where}: list the return orders {asof}.",
    ),
)
def return_orders_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    o = s.SalesOrder
    rows = _orders(ctx, o.legal_entity == le, order_type="return")
    if not rows:
        return Answer(text=f"There are no return orders in {le}.", facts=[_none("orders")])
    _, split = _status_split(rows)
    return Answer(
        text=f"There are {len(rows)} return order(s) in {le} as of {long_date(ctx.today)} "
        f"({split}).",
        facts=[_count("return_orders", len(rows))],
        refs=_order_refs(rows),
        records=len(rows),
    )


BY_RELEASE_STATUS = ListKey(
    "orders",
    none="No open sales orders in {le} have release status '{status}'.",
    found="{n} open sales order(s) in {le} have release status '{status}'",
)


@template(
    choose=_choose_orders_by_release_status,
    phrasings=(
        "How many open sales orders have the release status {release_label} {where} {asof}?",
        "Which open sales orders {where} show release status '{release_label}' {asof}?",
    ),
)
def orders_by_release_status(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, status = params["legal_entity"], params["release_status"]
    o = s.SalesOrder
    rows = _orders(ctx, o.legal_entity == le, o.release_status == status, o.status == "open")
    lines = [_order_line(row) + f" ({row.customer_account})" for row in rows]
    return BY_RELEASE_STATUS.answer(
        rows, lines, _order_refs(rows), le=le, status=status.replace("_", " ")
    )
