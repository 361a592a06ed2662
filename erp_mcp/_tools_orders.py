"""Document tools: sales and purchase orders, vendor invoices, payment journals, vendor spend."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Literal

from fastmcp.exceptions import ToolError
from pydantic import Field
from sqlalchemy import and_, case, func, select

from erp_mcp._common import (
    PageArgs,
    PageInfo,
    check_range,
    count_by,
    first_where,
    page_of,
    rows_where,
    sum_by_currency,
    text_key,
    to_record,
)
from erp_mcp._records import StrictModel, money, record_model
from erp_mcp._runtime import ErpRuntime
from erp_mcp._summaries import as_money
from erp_mcp._tooling import erp_tool
from synthetic_erp import _schema as s
from synthetic_erp._summaries import PARTY_PERIOD

SO = s.SalesOrder.__table__
SOL = s.SalesOrderLine.__table__
PO = s.PurchaseOrder.__table__
POL = s.PurchaseOrderLine.__table__
PR = s.ProductReceipt.__table__
VI = s.VendorInvoice.__table__
PJ = s.PaymentJournal.__table__
PJL = s.PaymentJournalLine.__table__
VT = s.VendorTransaction.__table__
CT = s.CustomerTransaction.__table__


def _le_party(rt: ErpRuntime, party_type: str, account: str | None, legal_entity: str | None):
    le = rt.check_legal_entity(legal_entity)
    if account:
        return rt.resolve_party(party_type, account, le)
    return le, None


def _find_document(rt, conn, table, key_column: str, key: str, legal_entity: str | None, label):
    t = table.__table__
    le = rt.check_legal_entity(legal_entity)
    # Always constrain legal_entity: the (legal_entity, key) unique index then serves the lookup.
    scope = [le] if le else _all_les(rt)
    rows = rows_where(conn, t, **{key_column: key.strip()}, legal_entity=scope)
    if not rows:
        where = f" in {le}" if le else ""
        similar = conn.execute(
            select(t.c.legal_entity, t.c[key_column])
            .where(t.c[key_column].like(f"%{_like_safe(key.strip()[-4:])}%", escape="\\"))
            .limit(5)
        ).all()
        hint = (
            "similar: " + ", ".join(f"{r[0]}/{r[1]}" for r in similar)
            if similar
            else "list them with the matching list_ tool"
        )
        raise ToolError(f"no {label} {key!r}{where}; {hint}")
    if len(rows) > 1:
        les = ", ".join(r.legal_entity for r in rows)
        raise ToolError(f"{label} {key!r} exists in several legal entities ({les}); pass one")
    return rows[0]


def _all_les(rt: ErpRuntime) -> list[str]:
    return list(rt.legal_entities)


def _like_safe(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --------------------------------------------------------------------------------------------------
# sales orders
# --------------------------------------------------------------------------------------------------


class SalesOrderListArgs(PageArgs):
    account: str | None = None
    """Customer account id or exact name."""
    legal_entity: str | None = None
    status: list[Literal["open", "delivered", "invoiced", "canceled"]] | None = None
    """Only these order statuses."""
    order_type: Literal["sales", "return", "any"] = "any"
    date_from: dt.date | None = None
    """Order date on or after."""
    date_to: dt.date | None = None
    """Order date on or before."""
    min_amount: float | None = Field(None, ge=0)
    """Order total at least this."""


class SalesOrderItem(record_model(s.SalesOrder)):
    customer_name: str | None = None


class SalesOrderPage(PageInfo):
    items: list[SalesOrderItem]
    total_amount: dict[str, float]
    """Sum of order totals per currency over all matching orders."""
    count_by_status: dict[str, int]


@erp_tool("finance", SalesOrderListArgs)
def list_sales_orders(rt: ErpRuntime, args: SalesOrderListArgs) -> SalesOrderPage:
    """Sales and return orders with status, dates and totals."""
    check_range("date_from/date_to", args.date_from, args.date_to)
    le, account = _le_party(rt, "customer", args.account, args.legal_entity)
    clauses = []
    if account:
        clauses.append(SO.c.customer_account == account)
    if le:
        clauses.append(SO.c.legal_entity == le)
    if args.status:
        clauses.append(SO.c.status.in_(args.status))
    if args.order_type != "any":
        clauses.append(SO.c.order_type == args.order_type)
    if args.date_from:
        clauses.append(SO.c.order_date >= args.date_from)
    if args.date_to:
        clauses.append(SO.c.order_date <= args.date_to)
    if args.min_amount is not None:
        clauses.append(SO.c.total_amount >= args.min_amount)
    with rt.engine.connect() as conn:
        statuses = count_by(conn, SO.c.status, clauses)  # their sum is the total: no count
        rows, info = page_of(conn, select(SO).where(*clauses),
                             [SO.c.order_date.desc(), SO.c.sales_id], args,
                             total=sum(statuses.values()))  # fmt: skip
        totals = sum_by_currency(conn, SO.c.currency, SO.c.total_amount, clauses)
    return SalesOrderPage(
        **info.model_dump(),
        items=[
            to_record(
                rt,
                s.SalesOrder,
                r,
                model=SalesOrderItem,
                customer_name=rt.party_name("customer", r.legal_entity, r.customer_account),
            )
            for r in rows
        ],
        total_amount=totals,
        count_by_status=statuses,
    )


class GetSalesOrderArgs(StrictModel):
    sales_id: str = Field(min_length=1, max_length=60)
    """Sales order id."""
    legal_entity: str | None = None


SalesOrderLineRecord = record_model(s.SalesOrderLine)
CustomerTransactionRecord = record_model(s.CustomerTransaction)


class SalesOrderDetails(StrictModel):
    order: SalesOrderItem
    lines: list[SalesOrderLineRecord]
    invoices: list[CustomerTransactionRecord]
    """Customer transactions (invoices) posted from this order."""
    truncated: bool = False
    """True when a list was cut to stay within the result budget (about 100,000 characters);
    the counts and totals still cover every line."""


@erp_tool("finance", GetSalesOrderArgs, lookup=True)
def get_sales_order(rt: ErpRuntime, args: GetSalesOrderArgs) -> SalesOrderDetails:
    """One sales order with its lines and the invoices posted from it."""
    with rt.engine.connect() as conn:
        row = _find_document(rt, conn, s.SalesOrder, "sales_id", args.sales_id, args.legal_entity,
                             "sales order")  # fmt: skip
        le, sales_id = row.legal_entity, row.sales_id
        order_url = rt.url("sales-orders", le, sales_id)
        lines = rows_where(conn, SOL, legal_entity=le, sales_id=sales_id, order=("line_number",))
        invoices = rows_where(conn, CT, legal_entity=le, sales_id=sales_id, order=("txn_date",))
    return SalesOrderDetails(
        order=to_record(
            rt,
            s.SalesOrder,
            row,
            model=SalesOrderItem,
            customer_name=rt.party_name("customer", le, row.customer_account),
        ),
        lines=[
            to_record(rt, s.SalesOrderLine, r, url=f"{order_url}#line-{r.line_number}")
            for r in lines
        ],
        invoices=[to_record(rt, s.CustomerTransaction, r) for r in invoices],
    )


# --------------------------------------------------------------------------------------------------
# purchase orders
# --------------------------------------------------------------------------------------------------


class PurchaseOrderListArgs(PageArgs):
    account: str | None = None
    """Vendor account id or exact name."""
    legal_entity: str | None = None
    status: list[Literal["open", "received", "invoiced", "canceled"]] | None = None
    date_from: dt.date | None = None
    """Order date on or after."""
    date_to: dt.date | None = None
    """Order date on or before."""


class PurchaseOrderItem(record_model(s.PurchaseOrder)):
    vendor_name: str | None = None


class PurchaseOrderPage(PageInfo):
    items: list[PurchaseOrderItem]
    total_amount: dict[str, float]
    """Sum of PO totals per currency over all matching POs."""
    count_by_status: dict[str, int]


@erp_tool("finance", PurchaseOrderListArgs)
def list_purchase_orders(rt: ErpRuntime, args: PurchaseOrderListArgs) -> PurchaseOrderPage:
    """Purchase orders with status, buyer, date and total."""
    check_range("date_from/date_to", args.date_from, args.date_to)
    le, account = _le_party(rt, "vendor", args.account, args.legal_entity)
    clauses = []
    if account:
        clauses.append(PO.c.vendor_account == account)
    if le:
        clauses.append(PO.c.legal_entity == le)
    if args.status:
        clauses.append(PO.c.status.in_(args.status))
    if args.date_from:
        clauses.append(PO.c.order_date >= args.date_from)
    if args.date_to:
        clauses.append(PO.c.order_date <= args.date_to)
    with rt.engine.connect() as conn:
        statuses = count_by(conn, PO.c.status, clauses)  # their sum is the total: no count
        rows, info = page_of(conn, select(PO).where(*clauses),
                             [PO.c.order_date.desc(), PO.c.po_number], args,
                             total=sum(statuses.values()))  # fmt: skip
        totals = sum_by_currency(conn, PO.c.currency, PO.c.total_amount, clauses)
    return PurchaseOrderPage(
        **info.model_dump(),
        items=[
            to_record(
                rt,
                s.PurchaseOrder,
                r,
                model=PurchaseOrderItem,
                vendor_name=rt.party_name("vendor", r.legal_entity, r.vendor_account),
            )
            for r in rows
        ],
        total_amount=totals,
        count_by_status=statuses,
    )


class GetPurchaseOrderArgs(StrictModel):
    po_number: str = Field(min_length=1, max_length=60)
    """Purchase order number."""
    legal_entity: str | None = None


PurchaseOrderLineRecord = record_model(s.PurchaseOrderLine)
ProductReceiptRecord = record_model(s.ProductReceipt)
VendorInvoiceRecord = record_model(s.VendorInvoice)


class PurchaseOrderDetails(StrictModel):
    order: PurchaseOrderItem
    lines: list[PurchaseOrderLineRecord]
    receipts: list[ProductReceiptRecord]
    invoices: list[VendorInvoiceRecord]
    """Vendor invoices that reference this PO."""
    truncated: bool = False
    """True when a list was cut to stay within the result budget (about 100,000 characters);
    the counts and totals still cover every line."""


@erp_tool("finance", GetPurchaseOrderArgs, lookup=True)
def get_purchase_order(rt: ErpRuntime, args: GetPurchaseOrderArgs) -> PurchaseOrderDetails:
    """One purchase order with lines, receipts and invoices."""
    with rt.engine.connect() as conn:
        row = _find_document(rt, conn, s.PurchaseOrder, "po_number", args.po_number,
                             args.legal_entity, "purchase order")  # fmt: skip
        lines, receipts = _po_lines(conn, row.legal_entity, row.po_number)
        invoices = rows_where(conn, VI, legal_entity=row.legal_entity, po_number=row.po_number,
                              order=("invoice_date", "invoice_id"))  # fmt: skip
    po_url = rt.url("purchase-orders", row.legal_entity, row.po_number)
    return PurchaseOrderDetails(
        order=to_record(
            rt,
            s.PurchaseOrder,
            row,
            model=PurchaseOrderItem,
            vendor_name=rt.party_name("vendor", row.legal_entity, row.vendor_account),
        ),
        lines=[
            to_record(rt, s.PurchaseOrderLine, r, url=f"{po_url}#line-{r.line_number}")
            for r in lines
        ],
        receipts=[to_record(rt, s.ProductReceipt, r) for r in receipts],
        invoices=[to_record(rt, s.VendorInvoice, r) for r in invoices],
    )


def _po_lines(conn, le: str, po_number: str) -> tuple[list, list]:
    """A purchase order's lines and product receipts."""
    lines = rows_where(conn, POL, legal_entity=le, po_number=po_number, order=("line_number",))
    receipts = rows_where(conn, PR, legal_entity=le, po_number=po_number,
                          order=("receipt_date", "receipt_id"))  # fmt: skip
    return lines, receipts


# --------------------------------------------------------------------------------------------------
# vendor invoices
# --------------------------------------------------------------------------------------------------


class VendorInvoiceListArgs(PageArgs):
    account: str | None = None
    """Vendor account id or exact name."""
    legal_entity: str | None = None
    status: list[Literal["unposted", "pending_approval", "approved", "posted"]] | None = None
    """Life-cycle status."""
    match_status: Literal["matched", "failed", "not_required", "any"] = "any"
    """Three-way match result."""
    date_from: dt.date | None = None
    """Invoice date on or after."""
    date_to: dt.date | None = None
    """Invoice date on or before."""
    due_from: dt.date | None = None
    due_to: dt.date | None = None
    approver: str | None = None
    po_number: str | None = None


class VendorInvoiceItem(record_model(s.VendorInvoice)):
    vendor_name: str | None = None
    voucher_url: str | None = None
    """Link to the posted ledger transaction, once posted."""


class VendorInvoicePage(PageInfo):
    items: list[VendorInvoiceItem]
    total_amount: dict[str, float]
    """Sum of invoice amounts per currency over all matching invoices."""
    count_by_status: dict[str, int]


@erp_tool("finance", VendorInvoiceListArgs)
def list_vendor_invoices(rt: ErpRuntime, args: VendorInvoiceListArgs) -> VendorInvoicePage:
    """Vendor invoice register with approver, PO and three-way match status."""
    check_range("date_from/date_to", args.date_from, args.date_to)
    check_range("due_from/due_to", args.due_from, args.due_to)
    le, account = _le_party(rt, "vendor", args.account, args.legal_entity)
    # legal_entity IN (...) when none is given, so the (legal_entity, ...) indexes still apply.
    clauses = [VI.c.legal_entity.in_([le] if le else _all_les(rt))]
    if account:
        clauses.append(VI.c.vendor_account == account)
    if args.status:
        clauses.append(VI.c.status.in_(args.status))
    if args.match_status != "any":
        clauses.append(VI.c.match_status == args.match_status)
    for column, low, high in (
        (VI.c.invoice_date, args.date_from, args.date_to),
        (VI.c.due_date, args.due_from, args.due_to),
    ):
        if low:
            clauses.append(column >= low)
        if high:
            clauses.append(column <= high)
    if args.approver:
        clauses.append(VI.c.approver == args.approver)
    if args.po_number:
        clauses.append(VI.c.po_number == args.po_number)
    with rt.engine.connect() as conn:
        groups = _invoice_groups(conn, clauses)
        rows, info = page_of(
            conn,
            select(VI).where(*clauses),
            [VI.c.invoice_date.desc(), VI.c.invoice_id],
            args,
            total=sum(g.n for g in groups),
            row_key=VI.c.id,
        )
    totals: dict[str, list[Any]] = {}
    statuses: dict[str, int] = {}
    for g in groups:
        totals.setdefault(g.currency, []).append(g.amount)
        statuses[g.status] = statuses.get(g.status, 0) + int(g.n)
    return VendorInvoicePage(
        **info.model_dump(),
        items=[_vendor_invoice_item(rt, r) for r in rows],
        total_amount={code: money(math.fsum(amounts)) for code, amounts in sorted(totals.items())},
        count_by_status=dict(sorted(statuses.items())),
    )


def _invoice_groups(conn, clauses: list[Any]) -> list[Any]:
    """The matching invoices counted and summed per legal entity, status and currency: one pass
    that the (legal_entity, status, currency, amount) index answers group by group."""
    keys = [VI.c.legal_entity, VI.c.status, VI.c.currency]
    stmt = select(*keys, func.count().label("n"), func.sum(VI.c.amount).label("amount"))
    return conn.execute(stmt.where(*clauses).group_by(*keys)).all()


def _vendor_invoice_item(rt: ErpRuntime, r) -> VendorInvoiceItem:
    return to_record(
        rt,
        s.VendorInvoice,
        r,
        model=VendorInvoiceItem,
        vendor_name=rt.party_name("vendor", r.legal_entity, r.vendor_account),
        voucher_url=rt.url("vendor-transactions", r.legal_entity, r.voucher),
    )


class GetVendorInvoiceArgs(StrictModel):
    invoice_id: str = Field(min_length=1, max_length=60)
    """Invoice id (VI-000001) or the vendor's number."""
    legal_entity: str | None = None


class MatchLine(StrictModel):
    line_number: int
    item_id: str
    description: str
    quantity_ordered: float
    quantity_received: float
    """Sum of product receipts for the line."""
    quantity_invoiced: float
    unit_price: float
    ordered_amount: float
    received_amount: float
    """quantity_received x unit_price."""
    url: str | None


class ThreeWayMatch(StrictModel):
    po_number: str | None
    po_url: str | None
    po_status: str | None
    po_total: float | None
    received_total: float | None
    """Value received on the PO (receipts x unit prices)."""
    invoice_amount: float
    difference_vs_received: float | None
    """invoice amount minus received value (positive: invoiced more than received)."""
    stored_match_status: str
    """matched | failed | not_required as recorded in the ERP."""
    match_failure_reason: str | None
    lines: list[MatchLine]


class VendorInvoiceDetails(StrictModel):
    invoice: VendorInvoiceItem
    match: ThreeWayMatch
    ledger_transaction: record_model(s.VendorTransaction) | None
    """The posted AP transaction, once posted (with its open amount)."""


@erp_tool("finance", GetVendorInvoiceArgs, lookup=True)
def get_vendor_invoice(rt: ErpRuntime, args: GetVendorInvoiceArgs) -> VendorInvoiceDetails:
    """One vendor invoice with approval and three-way match detail."""
    key = args.invoice_id.strip()
    le = rt.check_legal_entity(args.legal_entity)
    with rt.engine.connect() as conn:
        scope = [le] if le else _all_les(rt)
        rows = rows_where(conn, VI, legal_entity=scope, invoice_id=key)
        if not rows:
            rows = rows_where(conn, VI, legal_entity=scope, vendor_invoice_number=key)
        if not rows:
            row = _find_document(rt, conn, s.VendorInvoice, "invoice_id", key, le,
                                 "vendor invoice")  # fmt: skip
        elif len(rows) > 1:
            found = ", ".join(f"{r.legal_entity}/{r.invoice_id}" for r in rows)
            raise ToolError(f"several vendor invoices match {key!r}: {found}; pass invoice_id")
        else:
            row = rows[0]
        match = _three_way(rt, conn, row)
        ledger = None
        if row.voucher:
            found = first_where(conn, VT, legal_entity=row.legal_entity, voucher=row.voucher)
            if found is not None:
                ledger = to_record(rt, s.VendorTransaction, found)
    return VendorInvoiceDetails(
        invoice=_vendor_invoice_item(rt, row), match=match, ledger_transaction=ledger
    )


def _three_way(rt, conn, invoice) -> ThreeWayMatch:
    if not invoice.po_number:
        return ThreeWayMatch(
            po_number=None,
            po_url=None,
            po_status=None,
            po_total=None,
            received_total=None,
            invoice_amount=money(invoice.amount),
            difference_vs_received=None,
            stored_match_status=invoice.match_status,
            match_failure_reason=invoice.match_failure_reason,
            lines=[],
        )
    le = invoice.legal_entity
    po = first_where(conn, PO, legal_entity=le, po_number=invoice.po_number)
    lines, receipts = _po_lines(conn, le, invoice.po_number)
    received: dict[int, float] = {}
    for r in receipts:
        received[r.line_number] = received.get(r.line_number, 0.0) + float(r.quantity)
    po_url = rt.url("purchase-orders", le, invoice.po_number)
    match_lines = [
        MatchLine(
            line_number=line.line_number,
            item_id=line.item_id,
            description=line.description,
            quantity_ordered=float(line.quantity_ordered),
            quantity_received=round(received.get(line.line_number, 0.0), 2),
            quantity_invoiced=float(line.quantity_invoiced),
            unit_price=money(line.unit_price),
            ordered_amount=money(line.line_amount),
            received_amount=money(received.get(line.line_number, 0.0) * float(line.unit_price)),
            url=f"{po_url}#line-{line.line_number}",
        )
        for line in lines
    ]
    received_total = money(sum(m.received_amount for m in match_lines))
    return ThreeWayMatch(
        po_number=invoice.po_number,
        po_url=po_url,
        po_status=po.status if po is not None else None,
        po_total=money(po.total_amount) if po is not None else None,
        received_total=received_total,
        invoice_amount=money(invoice.amount),
        difference_vs_received=money(float(invoice.amount) - received_total),
        stored_match_status=invoice.match_status,
        match_failure_reason=invoice.match_failure_reason,
        lines=match_lines,
    )


# --------------------------------------------------------------------------------------------------
# payment journals
# --------------------------------------------------------------------------------------------------


class PaymentJournalListArgs(PageArgs):
    legal_entity: str | None = None
    status: Literal["open", "posted", "any"] = "any"
    source: Literal["manual", "proposal", "any"] = "any"
    """proposal: created by a payment proposal."""
    method_of_payment: str | None = None
    account: str | None = None
    """Only journals with a line paying this vendor."""
    date_from: dt.date | None = None
    """Created on or after."""
    date_to: dt.date | None = None
    """Created on or before."""


PaymentJournalRecord = record_model(s.PaymentJournal)


class PaymentJournalPage(PageInfo):
    items: list[PaymentJournalRecord]
    total_amount: dict[str, float]
    """Sum of journal totals per currency over all matching journals."""


@erp_tool("finance", PaymentJournalListArgs)
def list_payment_journals(rt: ErpRuntime, args: PaymentJournalListArgs) -> PaymentJournalPage:
    """Vendor payment journals and proposals: status, source, method of payment, currency, total,
    line count."""
    check_range("date_from/date_to", args.date_from, args.date_to)
    le, account = _le_party(rt, "vendor", args.account, args.legal_entity)
    clauses = []
    if le:
        clauses.append(PJ.c.legal_entity == le)
    if args.status != "any":
        clauses.append(PJ.c.status == args.status)
    if args.source != "any":
        clauses.append(PJ.c.source == args.source)
    if args.method_of_payment:
        clauses.append(PJ.c.method_of_payment == args.method_of_payment.strip().upper())
    if account:
        clauses.append(
            PJ.c.journal_id.in_(
                select(PJL.c.journal_id).where(
                    PJL.c.legal_entity == PJ.c.legal_entity, PJL.c.vendor_account == account
                )
            )
        )
    if args.date_from:
        clauses.append(PJ.c.created_date >= args.date_from)
    if args.date_to:
        clauses.append(PJ.c.created_date <= args.date_to)
    with rt.engine.connect() as conn:
        rows, info = page_of(
            conn, select(PJ).where(*clauses), [PJ.c.created_date.desc(), PJ.c.journal_id], args
        )
        totals = conn.execute(
            select(PJ.c.currency, func.sum(PJ.c.total_amount)).where(*clauses).group_by("currency")
        ).all()
    return PaymentJournalPage(
        **info.model_dump(),
        items=[to_record(rt, s.PaymentJournal, r) for r in rows],
        total_amount={c: money(a) for c, a in totals},
    )


class GetPaymentJournalArgs(StrictModel):
    journal_id: str = Field(min_length=1, max_length=60)
    legal_entity: str | None = None


class PaymentJournalLineItem(record_model(s.PaymentJournalLine)):
    vendor_name: str | None = None
    vendor_url: str | None = None
    invoice_url: str | None = None
    """Link to the vendor transaction being paid."""


class PaymentJournalDetails(StrictModel):
    journal: PaymentJournalRecord
    lines: list[PaymentJournalLineItem]
    line_count: int
    total_by_currency: dict[str, float]
    """Sum of line amounts per currency."""
    vendor_count: int
    truncated: bool = False
    """True when a list was cut to stay within the result budget (about 100,000 characters);
    the counts and totals still cover every line."""


@erp_tool("finance", GetPaymentJournalArgs, lookup=True)
def get_payment_journal(rt: ErpRuntime, args: GetPaymentJournalArgs) -> PaymentJournalDetails:
    """One vendor payment journal or proposal with its lines and totals per currency."""
    with rt.engine.connect() as conn:
        row = _find_document(rt, conn, s.PaymentJournal, "journal_id", args.journal_id,
                             args.legal_entity, "payment journal")  # fmt: skip
        lines = rows_where(conn, PJL, legal_entity=row.legal_entity, journal_id=row.journal_id,
                           order=("line_number",))  # fmt: skip
    journal_url = rt.url("payment-journals", row.legal_entity, row.journal_id)
    totals: dict[str, float] = {}
    for line in lines:
        totals[line.currency] = money(totals.get(line.currency, 0) + float(line.amount))
    return PaymentJournalDetails(
        journal=to_record(rt, s.PaymentJournal, row),
        lines=[
            to_record(
                rt,
                s.PaymentJournalLine,
                line,
                model=PaymentJournalLineItem,
                url=f"{journal_url}#line-{line.line_number}",
                vendor_name=rt.party_name("vendor", line.legal_entity, line.vendor_account),
                vendor_url=rt.url("vendors", line.legal_entity, line.vendor_account),
                invoice_url=rt.url("vendor-transactions", line.legal_entity, line.invoice_voucher),
            )
            for line in lines
        ],
        line_count=len(lines),
        total_by_currency=totals,
        vendor_count=len({line.vendor_account for line in lines}),
    )


# --------------------------------------------------------------------------------------------------
# vendor spend
# --------------------------------------------------------------------------------------------------


class VendorSpendArgs(StrictModel):
    legal_entity: str | None = None
    """Company code; omit for all."""
    account: str | None = None
    """One vendor; omit for the top vendors."""
    fiscal_year: int | None = Field(None, ge=1990, le=2100)
    """Fiscal year (the year it starts in); default: all for one vendor, the current one for the
    top list."""
    top_n: int = Field(10, ge=1, le=100)
    """How many vendors in the top list."""


class VendorSpendRow(StrictModel):
    legal_entity: str
    account: str
    name: str | None
    fiscal_year: int
    fiscal_year_start: dt.date
    fiscal_year_end: dt.date
    accounting_currency: str
    invoiced_acct: float
    """Posted vendor invoices in the fiscal year (accounting currency)."""
    credits_acct: float
    """Credit and debit notes in the fiscal year (negative)."""
    net_spend_acct: float
    """invoiced_acct + credits_acct."""
    invoice_count: int
    url: str | None


class VendorSpend(StrictModel):
    rows: list[VendorSpendRow]
    """Largest net spend first within a fiscal year."""
    basis: str
    """How spend is measured."""
    truncated: bool = False
    """True when a list was cut to stay within the result budget (about 100,000 characters):
    narrow the call (account, legal_entity, a smaller limit) for the rest."""


def fiscal_year_bounds(start_month: int, year: int) -> tuple[dt.date, dt.date]:
    start = dt.date(year, start_month, 1)
    end_year, end_month = (year + 1, start_month) if start_month > 1 else (year + 1, 1)
    return start, dt.date(end_year, end_month, 1) - dt.timedelta(days=1)


def fiscal_year_of(start_month: int, day: dt.date) -> int:
    return day.year if day.month >= start_month else day.year - 1


@erp_tool("finance", VendorSpendArgs)
def get_vendor_spend(rt: ErpRuntime, args: VendorSpendArgs) -> VendorSpend:
    """Vendor spend per fiscal year (accounting currency): one vendor, or the top N of a year.
    Fiscal years are named by the year they start in."""
    le, account = _le_party(rt, "vendor", args.account, args.legal_entity)
    les = [le] if le else list(rt.legal_entities)
    rows: list[VendorSpendRow] = []
    with rt.engine.connect() as conn:
        for code in les:
            facts = rt.legal_entities[code]
            years = (
                [args.fiscal_year]
                if args.fiscal_year
                else _fiscal_years(conn, code, account, facts.fiscal_year_start_month)
                if account
                else [fiscal_year_of(facts.fiscal_year_start_month, rt.today)]
            )
            for year in years:
                rows += _spend_rows(rt, conn, code, account, year, args.top_n)
    rows.sort(key=lambda r: (r.fiscal_year, r.legal_entity, -r.net_spend_acct, r.account))
    return VendorSpend(
        rows=rows,
        basis="sum of amount_acct of posted vendor transactions of type invoice, credit_note and "
        "debit_note dated in the fiscal year",
    )


def _fiscal_years(conn, le: str, account: str, start_month: int) -> list[int]:
    bounds = conn.execute(
        select(func.min(VT.c.txn_date), func.max(VT.c.txn_date)).where(
            VT.c.legal_entity == le, VT.c.vendor_account == account
        )
    ).first()
    if bounds is None or bounds[0] is None:
        return []
    first, last = (
        b if isinstance(b, dt.date) else dt.date.fromisoformat(str(b)[:10]) for b in bounds
    )
    return list(range(fiscal_year_of(start_month, first), fiscal_year_of(start_month, last) + 1))


def _spend_rows(rt, conn, le: str, account: str | None, year: int, top_n: int):
    facts = rt.legal_entities[le]
    start, end = fiscal_year_bounds(facts.fiscal_year_start_month, year)
    if not account and rt.summaries and rt.summaries.has_period([le], start, end):
        per_vendor = _summary_spend(rt, conn, le, start, end, top_n)
        return _spend_output(rt, le, year, start, end, per_vendor)
    clauses = [
        VT.c.legal_entity == le,
        VT.c.posted.is_(True),
        VT.c.txn_type.in_(("invoice", "credit_note", "debit_note")),
        VT.c.txn_date >= start,
        VT.c.txn_date <= end,
    ]
    vendor = VT.c.vendor_account
    if account:
        clauses.append(vendor == account)
    else:  # as an expression the vendor key keeps SQLite on the covering by-type index
        vendor = func.coalesce(vendor, vendor)
    is_invoice = VT.c.txn_type == "invoice"
    invoiced = func.sum(case((is_invoice, VT.c.amount_acct), else_=0))
    credits = func.sum(case((is_invoice, 0), else_=VT.c.amount_acct))
    stmt = (
        select(
            vendor.label("vendor"),
            invoiced.label("invoiced"),
            credits.label("credits"),
            func.sum(case((is_invoice, 1), else_=0)).label("invoices"),
        )
        .where(and_(*clauses))
        .group_by(vendor)
    )
    if not account:  # rank and cut in the database: 100x has ~25k vendors a year
        net = func.sum(VT.c.amount_acct)
        stmt = stmt.order_by(func.round(net, 2).desc(), text_key(rt, vendor)).limit(top_n)
    per_vendor = {
        r.vendor: {"invoiced": float(r.invoiced or 0), "credits": float(r.credits or 0),
                   "count": int(r.invoices or 0)}
        for r in conn.execute(stmt)
    }  # fmt: skip
    if account and not per_vendor:
        per_vendor[account] = {"invoiced": 0.0, "credits": 0.0, "count": 0}
    return _spend_output(rt, le, year, start, end, per_vendor)


def _summary_spend(rt, conn, le: str, start: dt.date, end: dt.date, top_n: int) -> dict:
    """The top_n vendors of a summarised fiscal year, read in the order of the amount index."""
    pp = PARTY_PERIOD
    stmt = (
        select(
            pp.c.account,
            as_money(pp.c.invoiced).label("invoiced"),
            as_money(pp.c.credits).label("credits"),
            pp.c.n,
        )
        .where(
            pp.c.party_type == "vendor",
            pp.c.legal_entity == le,
            pp.c.measure == "spend",
            pp.c.period_start == start,
            pp.c.period_end == end,
        )
        .order_by(pp.c.amount.desc(), text_key(rt, pp.c.account))
        .limit(top_n)
    )
    return {
        r.account: {"invoiced": float(r.invoiced or 0), "credits": float(r.credits or 0),
                    "count": int(r.n or 0)}
        for r in conn.execute(stmt)
    }  # fmt: skip


def _spend_output(rt, le: str, year: int, start, end, per_vendor: dict) -> list:
    facts = rt.legal_entities[le]
    ranked = sorted(
        per_vendor.items(),
        key=lambda item: (-money(item[1]["invoiced"] + item[1]["credits"]), item[0]),
    )
    return [
        VendorSpendRow(
            legal_entity=le,
            account=vendor,
            name=rt.party_name("vendor", le, vendor),
            fiscal_year=year,
            fiscal_year_start=start,
            fiscal_year_end=end,
            accounting_currency=facts.accounting_currency,
            invoiced_acct=money(entry["invoiced"]),
            credits_acct=money(entry["credits"]),
            net_spend_acct=money(entry["invoiced"] + entry["credits"]),
            invoice_count=int(entry["count"]),
            url=rt.url("vendors", le, vendor),
        )
        for vendor, entry in ranked
    ]
