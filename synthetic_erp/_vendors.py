"""Vendors and their AP: purchase orders, receipts, vendor invoices through their life cycle, the AP
ledger with settlements, and payment journals and proposals."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from synthetic_erp._context import Context, PartySpec
from synthetic_erp._ledger import Doc, Settlement, settle
from synthetic_erp._pools import ITEMS, address, email_domain, phone
from synthetic_erp._reference import (
    DISCOUNT_BY_CODE,
    HOLD_REASONS,
    MATCH_FAILURES,
    TERMS_BY_ID,
    USD_VALUE,
    VENDOR_GROUPS,
    VENDOR_METHODS,
    VENDOR_TERMS_WEIGHTS,
)

DAY = dt.timedelta(days=1)
INVOICE_COUNTS = ((1, 32), (2, 33), (3, 19), (4, 9), (5, 5), (6, 2))
TAX_GROUPS = {
    "US": ("EXMPT FOR", "TAXABLE", "USE-TAX"),
    "DE": ("DOM-DE", "EU"),
    "GB": ("UK-STD", "EU"),
}


def payment_run_day(date: dt.date, earliest: dt.date) -> dt.date:
    """Vendor payments go out in the Tuesday and Friday payment runs: the last run day on or before
    ``date``, unless that falls before ``earliest`` (then ``date`` itself)."""
    weekday = date.weekday()
    back = weekday - 1 if 1 <= weekday <= 3 else (weekday - 4) % 7
    run = date - DAY * back
    return run if run >= earliest else date


@dataclass
class PurchaseOrderDraft:
    seq: int
    le: str
    account: str
    currency: str
    order_date: dt.date
    status: str
    buyer: str
    lines: list[list] = field(default_factory=list)
    """[item_id, description, ordered, received, invoiced (hundredths), unit cents, line cents]"""
    receipts: list[tuple[int, dt.date, int]] = field(default_factory=list)
    """(line number, date, quantity hundredths)"""
    po_number: str = ""

    @property
    def total(self) -> int:
        return sum(line[6] for line in self.lines)


@dataclass
class VendorInvoiceDraft:
    seq: int
    le: str
    account: str
    invoice_date: dt.date
    due_date: dt.date
    currency: str
    cents: int
    status: str
    vendor_number: str
    approver: str | None
    po: PurchaseOrderDraft | None
    match_status: str
    match_failure: str | None
    doc: Doc | None
    description: str
    invoice_id: str = ""


@dataclass
class VendorState:
    spec: PartySpec
    row: dict
    role: str
    net_days: int
    discount: tuple[int, int] | None
    hold_since: dt.date | None
    docs: list[Doc] = field(default_factory=list)


@dataclass
class VendorChunk:
    vendors: list[VendorState] = field(default_factory=list)
    docs: list[Doc] = field(default_factory=list)
    settlements: list[Settlement] = field(default_factory=list)
    invoices: list[VendorInvoiceDraft] = field(default_factory=list)
    orders: list[PurchaseOrderDraft] = field(default_factory=list)
    payments: list[tuple[Doc, Doc, str]] = field(default_factory=list)
    """(payment, invoice paid, method of payment) for the posted payment journals."""


class VendorGenerator:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.rng = ctx.rng

    def make_vendor(self, spec: PartySpec) -> VendorState:
        rng, ctx = self.rng, self.ctx
        le = spec.le
        region = le.region
        terms_id = ctx.weighted(VENDOR_TERMS_WEIGHTS)
        terms = TERMS_BY_ID[terms_id]
        discount = None
        if terms[3]:
            code = DISCOUNT_BY_CODE[terms[3]]
            discount = (code[2], code[3])
        role = ctx.weighted((("dormant", 5), ("settled", 7), ("normal", 88)))
        if spec.role:
            role = spec.role
        hold = spec.role == "hold" or (role == "normal" and rng.random() < 0.04)
        if rng.random() < 0.9:
            created = ctx.start - DAY * rng.randint(30, 2900)
        else:
            created = ctx.start + DAY * rng.randint(0, 300)
        name = spec.name or ctx.namer.name(region)
        first = rng.choice(ctx.pools.regions[region].first_names)
        addr = address(rng, ctx.pools, region)
        method = ctx.weighted((("CHECK", 45), ("ELECTRONIC", 45), ("WIRE", 10)))
        assert method in {m[0] for m in VENDOR_METHODS}
        row = {
            "legal_entity": le.code,
            "account": spec.account,
            "name": name,
            "group_id": rng.choice(VENDOR_GROUPS)[0],
            "currency": ctx.weighted(le.party_currencies),
            "payment_terms": terms_id,
            "method_of_payment": method,
            "payment_hold": hold,
            "hold_reason": rng.choice(HOLD_REASONS) if hold else None,
            "contact_name": f"{first} {rng.choice(ctx.pools.regions[region].last_names)}",
            "contact_phone": phone(rng, region),
            "contact_email": f"{first.lower()}@{email_domain(name, region)}",
            "address_street": addr.street,
            "address_city": addr.city,
            "address_state": addr.state,
            "address_zip": addr.zip,
            "address_country": addr.country,
            "sales_tax_group": rng.choice(TAX_GROUPS[region]),
            "created_date": created,
            "derived_fields": "",
        }
        hold_since = ctx.as_of - DAY * rng.randint(20, 120) if hold else None
        return VendorState(spec, row, role, terms[2], discount, hold_since)

    def chunk(self, specs: list[PartySpec]) -> VendorChunk:
        out = VendorChunk()
        for spec in specs:
            vendor = self.make_vendor(spec)
            out.vendors.append(vendor)
            if vendor.role == "dormant":
                continue
            self._posted(vendor, out)
            if vendor.role != "settled":
                self._in_flight(vendor, out)
                self._open_orders(vendor, out)
            out.docs.extend(vendor.docs)
        return out

    # ---------------------------------------------------------------------------------- documents

    def _doc(self, vendor: VendorState, kind: str, date: dt.date, cents: int, **kw) -> Doc:
        doc = Doc(
            self.ctx.next_seq(),
            vendor.spec.le.code,
            vendor.spec.account,
            kind,
            date,
            vendor.row["currency"],
            cents,
            self.ctx.rate(vendor.row["currency"], vendor.spec.le.currency, date),
            **kw,
        )
        vendor.docs.append(doc)
        return doc

    def _purchase_order(
        self, vendor: VendorState, date: dt.date, status: str, latest_receipt: dt.date | None = None
    ) -> PurchaseOrderDraft:
        rng, ctx = self.rng, self.ctx
        le = vendor.spec.le.code
        po = PurchaseOrderDraft(
            ctx.next_seq(), le, vendor.spec.account, vendor.row["currency"], date, status,
            rng.choice(ctx.buyers[le]),
        )  # fmt: skip
        factor = 0.7 / USD_VALUE[vendor.row["currency"]]
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            item_id, description, price = rng.choice(ITEMS)
            unit = max(100, round(price * factor))
            quantity = rng.randint(1, 30) * 100
            po.lines.append([item_id, description, quantity, 0, 0, unit, quantity // 100 * unit])
        if status in ("received", "invoiced"):
            for number, line in enumerate(po.lines, start=1):
                received = date + DAY * rng.randint(2, 15)
                line[3] = line[2]
                po.receipts.append((number, min(received, latest_receipt or ctx.as_of), line[2]))
        if status == "invoiced":
            for line in po.lines:
                line[4] = line[2]
        return po

    def _amount(self, currency: str) -> int:
        usd = math.exp(self.rng.gauss(math.log(2500), 1.0))
        usd = min(max(usd, 40.0), 150000.0)
        return round(usd / USD_VALUE[currency] * 100)

    def _posted(self, vendor: VendorState, out: VendorChunk) -> None:
        rng, ctx = self.rng, self.ctx
        first = max(ctx.start, vendor.row["created_date"])
        span = (ctx.as_of - first).days
        count = ctx.weighted(INVOICE_COUNTS)
        dates = sorted(first + DAY * rng.randint(0, span) for _ in range(count))
        if vendor.spec.role == "discount_expiring":
            vendor.discount = (200, 10)
            vendor.row["payment_terms"] = "2%10Net30"
            vendor.net_days = 30
            dates.append(ctx.as_of - DAY * rng.randint(3, 9))
        for date in dates:
            invoice = self._posted_invoice(vendor, date, out)
            self._pay(vendor, invoice, out)
        if vendor.role == "settled":
            return
        if rng.random() < 0.03:
            date = max(first, ctx.as_of - DAY * rng.randint(1, 150))
            self._doc(vendor, "credit_note", date, -rng.randint(5000, 150000),
                      description="Vendor rebate credit note")  # fmt: skip

    def _posted_invoice(self, vendor: VendorState, date: dt.date, out: VendorChunk) -> Doc:
        rng, ctx = self.rng, self.ctx
        le = vendor.spec.le.code
        po = None
        if rng.random() < 0.65:
            po_date = max(vendor.row["created_date"], date - DAY * rng.randint(16, 40))
            po = self._purchase_order(vendor, po_date, "invoiced", latest_receipt=date)
            out.orders.append(po)
            cents = po.total
        else:
            cents = self._amount(vendor.row["currency"])
        due = date + DAY * vendor.net_days
        doc = self._doc(vendor, "invoice", date, cents, due=due)
        if vendor.discount:
            percent, days = vendor.discount
            doc.cd_date = date + DAY * days
            doc.cd_cents = (cents * percent + 5000) // 10000
        doc.description = "Purchase order invoice" if po else rng.choice(
            ("Professional services", "Utilities", "Facility maintenance", "Freight services",
             "Software subscription")
        )  # fmt: skip
        out.invoices.append(
            VendorInvoiceDraft(
                ctx.next_seq(), le, vendor.spec.account, date, due, vendor.row["currency"], cents,
                "posted", f"INV-{rng.randint(10000, 999999)}", rng.choice(ctx.approvers[le]), po,
                "matched" if po else "not_required", None, doc, doc.description,
            )
        )  # fmt: skip
        return doc

    def _pay(self, vendor: VendorState, invoice: Doc, out: VendorChunk) -> None:
        rng, as_of = self.rng, self.ctx.as_of
        if vendor.role == "settled":
            pay = min(as_of, invoice.due - DAY * rng.randint(0, 3))
            pay = max(pay, invoice.date)
            self._payment(vendor, invoice, pay, invoice.open, 0, out)
            return
        if vendor.hold_since and invoice.due >= vendor.hold_since:
            return
        if vendor.spec.role == "discount_expiring" and invoice.date >= as_of - DAY * 7:
            return
        roll = rng.random()
        if roll < 0.04:
            return  # disputed with the vendor: left open
        if roll < 0.07:
            date = invoice.date + DAY * rng.randint(5, 30)
            if date <= as_of:
                cents = max(100, invoice.cents * rng.randint(5, 30) // 100)
                note = self._doc(vendor, "debit_note", date, -cents, description="Return to vendor")
                if rng.random() < 0.7:
                    settle(out.settlements, invoice, note, date, cents)
        if roll < 0.10:
            pay = invoice.due - DAY * rng.randint(0, 3)
            if pay <= as_of and invoice.open:
                self._payment(vendor, invoice, max(pay, invoice.date), invoice.open // 2, 0, out)
            return
        if invoice.cd_date and rng.random() < 0.8:
            pay = invoice.date + DAY * rng.randint(1, (invoice.cd_date - invoice.date).days)
            if pay <= as_of:
                self._payment(vendor, invoice, pay, invoice.open, invoice.cd_cents or 0, out)
            return
        late = rng.random() < 0.12
        pay = invoice.due + DAY * (rng.randint(1, 30) if late else -rng.randint(0, 3))
        pay = max(pay, invoice.date)
        if pay <= as_of:
            self._payment(vendor, invoice, pay, invoice.open, 0, out)

    def _payment(self, vendor, invoice: Doc, date: dt.date, cents: int, discount: int, out) -> None:
        if cents <= 0:
            return
        date = payment_run_day(date, invoice.date)
        payment = self._doc(vendor, "payment", date, -(cents - discount))
        payment.description = "Vendor payment"
        settle(out.settlements, invoice, payment, date, cents, discount)
        out.payments.append((payment, invoice, vendor.row["method_of_payment"]))

    # ---------------------------------------------------------------------------------- in flight

    def _in_flight(self, vendor: VendorState, out: VendorChunk) -> None:
        """Vendor invoices not posted yet: in the register, pending approval, or approved."""
        rng, ctx = self.rng, self.ctx
        le = vendor.spec.le.code
        count = ctx.weighted(((0, 62), (1, 30), (2, 8)))
        if vendor.spec.role == "failed_match":
            count = max(count, 1)
        first = max(ctx.start, vendor.row["created_date"])
        for index in range(count):
            date = max(first, ctx.as_of - DAY * rng.randint(0, 25))
            status = ctx.weighted((("unposted", 35), ("pending_approval", 40), ("approved", 25)))
            po = None
            match, failure = "not_required", None
            forced = vendor.spec.role == "failed_match" and index == 0
            if forced or rng.random() < 0.7:
                failing = forced or rng.random() < 0.35
                failure = rng.choice(MATCH_FAILURES) if failing else None
                no_receipt = failure == MATCH_FAILURES[2]
                po_date = max(first, date - DAY * rng.randint(16, 40))
                po = self._purchase_order(vendor, po_date, "open" if no_receipt else "received")
                out.orders.append(po)
                cents = po.total
                if failure == MATCH_FAILURES[0]:
                    cents = cents * rng.randint(103, 115) // 100
                elif failure == MATCH_FAILURES[1]:
                    cents = cents + po.lines[0][5] * rng.randint(1, 5)
                match = "failed" if failing else "matched"
                if failing and status == "approved":
                    status = "pending_approval"
            else:
                cents = self._amount(vendor.row["currency"])
            approver = rng.choice(ctx.approvers[le]) if status != "unposted" else None
            out.invoices.append(
                VendorInvoiceDraft(
                    ctx.next_seq(), le, vendor.spec.account, date, date + DAY * vendor.net_days,
                    vendor.row["currency"], cents, status, f"INV-{rng.randint(10000, 999999)}",
                    approver, po, match, failure, None,
                    "Purchase order invoice" if po else "Services invoice",
                )
            )  # fmt: skip

    def _open_orders(self, vendor: VendorState, out: VendorChunk) -> None:
        rng, ctx = self.rng, self.ctx
        first = max(ctx.start, vendor.row["created_date"])
        roll = rng.random()
        if roll < 0.3:
            date = max(first, ctx.as_of - DAY * rng.randint(0, 30))
            out.orders.append(self._purchase_order(vendor, date, "open"))
        elif roll < 0.45:
            date = max(first, ctx.as_of - DAY * rng.randint(5, 40))
            out.orders.append(self._purchase_order(vendor, date, "received"))
        elif roll < 0.5:
            date = first + DAY * rng.randint(0, (ctx.as_of - first).days)
            out.orders.append(self._purchase_order(vendor, date, "canceled"))
