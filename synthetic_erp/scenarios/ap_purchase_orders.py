"""AP Purchase Orders (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    _count,
    _top,
    listed,
    long_date,
    money,
    no_records,
    party,
    registrar,
)

template = registrar("AP Purchase Orders", "AP")


@template(
    "open_pos_vendor",
    party="vendor",
    phrasings=(
        "List the open purchase orders with {who} {where} {asof}.",
        "Which purchase orders to {who} {where} are still open {asof}?",
        "Do we have any open POs with {who} {where} {asof}?",
        "What is still on order from {who} {where}: which purchase orders are open {asof}?",
        "Show me the purchase orders for {who} {where} that have not been closed {asof}.",
    ),
)
def open_pos_vendor(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    po = s.PurchaseOrder
    rows = ctx.rows(
        select(po)
        .where(
            po.legal_entity == p.legal_entity,
            po.vendor_account == p.account,
            po.status == "open",
            po.order_date <= ctx.today,
        )
        .order_by(po.order_date, po.po_number)
    )
    if not rows:
        return no_records(
            f"{p.label} in {p.legal_entity} has no open purchase orders.",
            "purchase_orders",
            [p.path],
        )
    lines = [
        f"{r.po_number} dated {long_date(r.order_date)}, {money(r.total_amount, r.currency)}, "
        f"buyer {r.buyer}"
        for r in rows
    ]
    return listed(
        rows,
        lines,
        f"{p.label} in {p.legal_entity} has {len(rows)} open purchase order(s)",
        [
            _count("purchase_orders", len(rows)),
            _top("purchase_orders", [r.po_number for r in rows], ordered=False),
        ],
        [p.path] + [record_path("purchase-orders", p.legal_entity, r.po_number) for r in rows[:10]],
    )
