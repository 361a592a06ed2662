"""AP Purchase Orders (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import Answer, OracleContext, Party, long_date, money, registrar
from synthetic_erp.scenarios._keys import ListKey, party_records, record_refs

template = registrar("AP Purchase Orders", "AP")


OPEN_POS = ListKey(
    "purchase_orders",
    none="{who} has no open purchase orders.",
    found="{who} has {n} open purchase order(s)",
    ids=("purchase_orders", "po_number"),
)


@template(
    party="vendor",
    phrasings=(
        "List the open purchase orders with {who} {where} {asof}.",
        "Which purchase orders to {who} {where} are still open {asof}?",
        "Do we have any open POs with {who} {where} {asof}?",
        "What is still on order from {who} {where}: which purchase orders are open {asof}?",
        "Show me the purchase orders for {who} {where} that have not been closed {asof}.",
    ),
)
def open_pos_vendor(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    po = s.PurchaseOrder
    open_now = (po.status == "open", po.order_date <= ctx.today)
    rows = party_records(ctx, po, p, *open_now, order_by=(po.order_date, po.po_number))
    lines = [
        f"{r.po_number} dated {long_date(r.order_date)}, {money(r.total_amount, r.currency)}, "
        f"buyer {r.buyer}"
        for r in rows
    ]
    return OPEN_POS.answer(
        rows,
        lines,
        record_refs("purchase-orders", rows, "po_number"),
        party=p,
    )
