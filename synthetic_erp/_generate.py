"""The deterministic generator: ``generate_erp`` builds a whole synthetic ERP at a database URL."""

from __future__ import annotations

import datetime as dt
import gc
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable

import faker
from pydantic import BaseModel, ConfigDict
from sqlalchemy import Boolean, Connection, Date, Numeric, Table

from synthetic_erp import _schema as s
from synthetic_erp._context import Context, PartySpec
from synthetic_erp._customers import ChunkOut, CustomerGenerator
from synthetic_erp._db import ErpDatabaseError, redact_url
from synthetic_erp._ledger import Doc, dec, dec_rate, ledger_row
from synthetic_erp._pools import build_pools
from synthetic_erp._reference import (
    CASH_DISCOUNTS,
    COLLECTIONS_POOLS,
    CURRENCIES,
    CUSTOMER_GROUPS,
    CUSTOMER_METHODS,
    LEGAL_ENTITIES,
    PAYMENT_TERMS,
    VENDOR_GROUPS,
    VENDOR_METHODS,
    exchange_rate_series,
)
from synthetic_erp._snapshot import hash_connection
from synthetic_erp._summaries import build_summaries
from synthetic_erp._target import create_indexes, open_target
from synthetic_erp._vendors import VendorChunk, VendorGenerator

GENERATOR_VERSION = "1.0.0"
DEFAULT_AS_OF = dt.date(2026, 3, 2)
MAX_SCALE = 100.0
CHUNK = 5000
BATCH = 5000
DAY = dt.timedelta(days=1)

CUSTOMER_NAME_PAIRS = (
    ("Forest Wholesale", "Forest Whole Sale"),
    ("Deer Creek Supply Inc.", "Deere Creek Supply Inc."),
    ("Northwind Traders", "North Wind Traders LLC"),
    ("Lakeshore Retail Group", "Lakeshore Retail Grp"),
)
CUSTOMER_TWINS = (
    ("Contoso Retail Partners", "DEMF"),
    ("Fabrikam Electronics", "GBSI"),
    ("Tailspin Toys", "USPI"),
)
VENDOR_NAME_PAIRS = (
    ("Litware Components", "Litware Components Inc."),
    ("Proseware Logistics", "Prosewear Logistics"),
)
VENDOR_TWINS = (("Wide World Importers", "DEMF"), ("Adatum Supplies", "GBSI"))
CUSTOMER_ROLES = {
    "USMF": (("over_limit", 4), ("discount_expiring", 3), ("unapplied_credit", 3),
             ("no_pool", 3), ("dormant", 3), ("settled", 3)),
    "other": (("over_limit", 1), ("no_pool", 1), ("discount_expiring", 1), ("dormant", 1)),
}  # fmt: skip
VENDOR_ROLES = {
    "USMF": (("hold", 3), ("discount_expiring", 3), ("failed_match", 3), ("dormant", 3),
             ("settled", 2)),
    "other": (("hold", 1), ("failed_match", 1), ("dormant", 1)),
}  # fmt: skip


class GenerationReport(BaseModel):
    """What ``generate_erp`` built."""

    model_config = ConfigDict(extra="forbid")

    db_url: str
    """Target database URL with any password hidden."""
    seed: int
    scale: float
    customers: int
    vendors: int
    as_of: dt.date
    """The ERP's frozen today."""
    row_counts: dict[str, int]
    """Rows written per table."""
    summary_rows: dict[str, int] = {}
    """Rows written per summary table (derived data, outside the snapshot hash)."""
    snapshot_hash: str
    seconds: float
    """Wall time of the generation."""


def generate_erp(
    db_url: str,
    *,
    customers: int = 1000,
    vendors: int = 1000,
    seed: int = 42,
    as_of: dt.date = DEFAULT_AS_OF,
    overwrite: bool = False,
    scale: float | None = None,
    progress: bool = False,
) -> GenerationReport:
    """Build a complete synthetic ERP at ``db_url``, deterministically from ``seed``.

    ``scale`` multiplies the customer and vendor counts (1x = 1,000 each, up to 100x). The write is
    atomic; an existing database is refused unless ``overwrite``. Raises ``ErpDatabaseError`` (a
    ``ValueError``) for bad arguments or an unusable database.
    """
    started = time.perf_counter()
    collecting = gc.isenabled()
    gc.disable()  # millions of small acyclic objects: the cyclic collector only costs time here
    try:
        return _generate(
            db_url, customers, vendors, seed, as_of, overwrite, scale, progress, started
        )
    finally:
        if collecting:
            gc.enable()


def _generate(db_url, customers, vendors, seed, as_of, overwrite, scale, progress, started):
    factor = 1.0 if scale is None else float(scale)
    if not 0 < factor <= MAX_SCALE:
        raise ErpDatabaseError(f"scale must be > 0 and <= {MAX_SCALE:g}, got {factor:g}")
    n_customers = round(customers * factor)
    n_vendors = round(vendors * factor)
    if n_customers < 1 or n_vendors < 1:
        raise ErpDatabaseError("customers and vendors must each be at least 1 after scaling")
    pools = build_pools(seed)
    rates = exchange_rate_series(random.Random(seed ^ 0x5EED), as_of - DAY * 430, as_of)
    ctx = Context(seed, as_of, pools, rates, customers=n_customers)
    customer_specs = _party_specs(ctx, "SYNCUS", n_customers, CUSTOMER_NAME_PAIRS, CUSTOMER_TWINS,
                                  CUSTOMER_ROLES)  # fmt: skip
    vendor_specs = _party_specs(ctx, "SYNVEN", n_vendors, VENDOR_NAME_PAIRS, VENDOR_TWINS,
                                VENDOR_ROLES)  # fmt: skip
    with (
        _Progress(progress, n_customers + n_vendors) as bar,
        open_target(db_url, overwrite=overwrite) as conn,
    ):
        writer = Writer(conn)
        _write_reference(writer, ctx, rates)
        numbering = _Numbering()
        customer_gen = CustomerGenerator(ctx)
        for chunk in _chunks(customer_specs):
            out = customer_gen.chunk(chunk)
            _write_customer_chunk(writer, numbering, out)
            bar.advance(len(chunk))
        vendor_gen = VendorGenerator(ctx)
        for chunk in _chunks(vendor_specs):
            out = vendor_gen.chunk(chunk)
            _write_vendor_chunk(writer, numbering, ctx, out)
            bar.advance(len(chunk))
        meta = {
            "as_of": as_of.isoformat(),
            "seed": str(seed),
            "scale": f"{factor:g}",
            "customers": str(n_customers),
            "vendors": str(n_vendors),
            "generator_version": GENERATOR_VERSION,
            "faker_version": faker.VERSION,
            "source": "generated",
        }
        writer.write(s.ErpMeta, [{"key": k, "value": v} for k, v in meta.items()])
        bar.describe("indexing, summarising and hashing")
        create_indexes(conn)
        summary_rows = build_summaries(conn)
        digest = hash_connection(conn)
        writer.write(s.ErpMeta, [{"key": "snapshot_hash", "value": digest}])
    return GenerationReport(
        db_url=redact_url(db_url),
        seed=seed,
        scale=factor,
        customers=n_customers,
        vendors=n_vendors,
        as_of=as_of,
        row_counts=dict(writer.counts),
        summary_rows=summary_rows,
        snapshot_hash=digest,
        seconds=round(time.perf_counter() - started, 3),
    )


# ------------------------------------------------------------------------------------ parties


def _party_specs(ctx: Context, prefix: str, count: int, pairs, twins, roles) -> list[PartySpec]:
    """Accounts by legal entity (blocks: USMF first), with the forced names and edge-case roles."""
    width = max(4, len(str(count)))
    sizes = {le.code: int(count * le.share) for le in LEGAL_ENTITIES}
    if count >= len(LEGAL_ENTITIES):
        for code in sizes:
            sizes[code] = max(1, sizes[code])
    sizes["USMF"] += count - sum(sizes.values())
    rng = random.Random(ctx.rng.random())
    specs: list[PartySpec] = []
    by_le: dict[str, list[int]] = defaultdict(list)
    for le in LEGAL_ENTITIES:
        for _ in range(sizes[le.code]):
            by_le[le.code].append(len(specs))
            specs.append(PartySpec(le, f"{prefix}-{len(specs) + 1:0{width}d}"))
    names: dict[int, str] = {}
    free = {code: rng.sample(indices, len(indices)) for code, indices in by_le.items()}
    for pair in pairs:
        if len(free.get("USMF", [])) >= 2:
            for name in pair:
                names[free["USMF"].pop()] = name
    for name, code in twins:
        if free.get("USMF") and free.get(code):
            names[free["USMF"].pop()] = name
            names[free[code].pop()] = name
    forced_roles: dict[int, str] = {}
    for code, indices in free.items():
        for role, times in roles["USMF" if code == "USMF" else "other"]:
            for _ in range(times):
                if len(indices) > 1:
                    forced_roles[indices.pop()] = role
    for name in names.values():
        ctx.namer.reserve(name)
    return [
        PartySpec(spec.le, spec.account, names.get(i), forced_roles.get(i))
        for i, spec in enumerate(specs)
    ]


def _chunks(specs: list[PartySpec]) -> Iterable[list[PartySpec]]:
    for start in range(0, len(specs), CHUNK):
        yield specs[start : start + CHUNK]


# ------------------------------------------------------------------------------------ writing


class Writer:
    """Bulk inserts. PostgreSQL goes through SQLAlchemy Core (``Table.insert()`` executemany);
    SQLite gets the same stored values (floats, ISO date text, 0/1) from a plain executemany,
    which is several times faster than Core's per-row parameter processing."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.counts: dict[str, int] = defaultdict(int)
        self._sqlite = conn.dialect.name == "sqlite"

    def write(self, model, rows: list[dict]) -> None:
        table: Table = model.__table__
        self.counts[table.name] += len(rows)
        if not rows:
            return
        if not self._sqlite:
            for start in range(0, len(rows), BATCH):
                self.conn.execute(table.insert(), rows[start : start + BATCH])
            return
        columns = [c for c in table.columns if c.name in rows[0]]
        names = [c.name for c in columns]
        converters = [(i, _sqlite_converter(c.type)) for i, c in enumerate(columns)]
        converters = [(i, f) for i, f in converters if f is not None]
        quoted = ", ".join(f'"{n}"' for n in names)
        sql = f'INSERT INTO "{table.name}" ({quoted}) VALUES ({", ".join("?" * len(names))})'
        data = []
        for row in rows:
            values = [row[name] for name in names]
            for index, convert in converters:
                value = values[index]
                if value is not None:
                    values[index] = convert(value)
            data.append(tuple(values))
        # In batches: one executemany is a single C call that Ctrl-C cannot interrupt.
        for start in range(0, len(data), BATCH):
            self.conn.exec_driver_sql(sql, data[start : start + BATCH])


def _sqlite_converter(kind) -> Callable | None:
    if isinstance(kind, Numeric):
        return float
    if isinstance(kind, Date):
        return dt.date.isoformat
    if isinstance(kind, Boolean):
        return int
    return None


class _Numbering:
    """Global document counters; numbers follow document dates within each chunk."""

    def __init__(self) -> None:
        self._counters: dict[str, int] = defaultdict(int)

    def next(self, prefix: str) -> str:
        self._counters[prefix] += 1
        return f"{prefix}-{self._counters[prefix]:07d}"


class _Progress:
    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = total
        self._progress = None
        self._task = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import Progress

            self._progress = Progress(console=Console(stderr=True), transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task("generating", total=self.total)
        return self

    def advance(self, amount: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, amount)

    def describe(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=text)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)


def _write_reference(writer: Writer, ctx: Context, rates) -> None:
    writer.write(
        s.LegalEntity,
        [
            {"code": le.code, "name": le.name, "accounting_currency": le.currency,
             "country": le.country, "fiscal_year_start_month": le.fiscal_year_start_month}
            for le in LEGAL_ENTITIES
        ],
    )  # fmt: skip
    writer.write(s.Currency, [{"code": code, "name": name} for code, name in CURRENCIES])
    writer.write(
        s.ExchangeRate,
        [
            {"from_currency": src, "to_currency": dst, "rate_date": day, "rate": dec_rate(micro)}
            for (src, dst), series in sorted(rates.items())
            for day, micro in sorted(series.items())
        ],
    )
    per_le: dict[type, list[dict]] = defaultdict(list)
    for le in LEGAL_ENTITIES:
        code = le.code
        for disc, description, percent, days in CASH_DISCOUNTS:
            per_le[s.CashDiscount].append(
                {"legal_entity": code, "code": disc, "description": description,
                 "percent": dec(percent), "days": days}
            )  # fmt: skip
        for terms_id, description, net_days, disc in PAYMENT_TERMS:
            per_le[s.PaymentTerms].append(
                {"legal_entity": code, "terms_id": terms_id, "description": description,
                 "net_days": net_days, "cash_discount_code": disc}
            )  # fmt: skip
        for party_type, methods in (("customer", CUSTOMER_METHODS), ("vendor", VENDOR_METHODS)):
            for method, description, account in methods:
                per_le[s.MethodOfPayment].append(
                    {"legal_entity": code, "party_type": party_type, "code": method,
                     "description": description, "payment_account": account}
                )  # fmt: skip
        for group_id, name in CUSTOMER_GROUPS:
            per_le[s.CustomerGroup].append(
                {"legal_entity": code, "group_id": group_id, "name": name}
            )
        for group_id, name in VENDOR_GROUPS:
            per_le[s.VendorGroup].append({"legal_entity": code, "group_id": group_id, "name": name})
        for pool_id, name, description in COLLECTIONS_POOLS:
            per_le[s.CollectionsPool].append(
                {"legal_entity": code, "pool_id": pool_id, "name": name, "description": description}
            )
        for agent_id, name, email, pool_id in ctx.agents[code]:
            per_le[s.CollectionsAgent].append(
                {"legal_entity": code, "agent_id": agent_id, "name": name, "email": email,
                 "pool_id": pool_id}
            )  # fmt: skip
    for model, rows in per_le.items():
        writer.write(model, rows)


AR_DOC_PREFIX = {
    "sales_invoice": "CIV",
    "free_text_invoice": "FTI",
    "payment": "ARP",
    "credit_note": "CCN",
    "adjustment": "ADJ",
}
AP_DOC_PREFIX = {"payment": "APP", "debit_note": "VDN", "credit_note": "VCN", "adjustment": "VAJ"}


def _number_docs(docs: list[Doc], numbering: _Numbering, voucher_prefix: str, doc_prefix) -> None:
    for doc in sorted(docs, key=lambda d: (d.date, d.seq)):
        doc.voucher = numbering.next(voucher_prefix)
        if not doc.doc_number:
            doc.doc_number = numbering.next(doc_prefix[doc.kind])


def _write_customer_chunk(writer: Writer, numbering: _Numbering, out: ChunkOut) -> None:
    _number_docs(out.docs, numbering, "ARV", AR_DOC_PREFIX)
    orders = sorted(out.orders, key=lambda o: (o.order_date, o.seq))
    for order in orders:
        order.order_id = numbering.next("SO")
    writer.write(s.Customer, [c.row for c in out.customers])
    writer.write(
        s.CustomerTransaction,
        [
            ledger_row(
                doc, "customer_account", {"sales_id": doc.order.order_id if doc.order else None}
            )
            for doc in out.docs
        ],
    )
    settlements = sorted(out.settlements, key=lambda x: (x.date, x.debit.seq, x.credit.seq))
    writer.write(
        s.CustomerSettlement,
        [
            {"legal_entity": x.debit.le, "settlement_id": numbering.next("ARS"),
             "customer_account": x.debit.account, "debit_voucher": x.debit.voucher,
             "credit_voucher": x.credit.voucher, "settled_date": x.date,
             "amount_cur": dec(x.cents), "cash_discount_taken": dec(x.discount)}
            for x in settlements
        ],
    )  # fmt: skip
    disputes = sorted(out.disputes, key=lambda d: (d["opened_date"], d["invoice"].seq, d["kind"]))
    writer.write(
        s.CustomerDispute,
        [
            {"legal_entity": d["invoice"].le, "dispute_id": numbering.next("DSP"),
             "customer_account": d["invoice"].account, "voucher": d["invoice"].voucher,
             "kind": d["kind"], "reason": d["reason"], "amount": dec(d["cents"]),
             "opened_date": d["opened_date"], "status": d["status"],
             "resolved_date": d["resolved_date"]}
            for d in disputes
        ],
    )  # fmt: skip
    writer.write(
        s.SalesOrder,
        [
            {"legal_entity": o.le, "sales_id": o.order_id, "customer_account": o.account,
             "order_type": o.order_type, "status": o.status, "release_status": o.release_status,
             "do_not_process": o.do_not_process, "sales_taker": o.taker,
             "order_date": o.order_date, "requested_ship_date": o.requested_date,
             "currency": o.currency, "total_amount": dec(o.total)}
            for o in orders
        ],
    )  # fmt: skip
    writer.write(
        s.SalesOrderLine,
        [
            {"legal_entity": o.le, "sales_id": o.order_id, "line_number": n, "item_id": item,
             "description": text, "quantity": dec(qty), "unit_price": dec(price),
             "line_amount": dec(amount), "status": status}
            for o in orders
            for n, (item, text, qty, price, amount, status) in enumerate(o.lines, start=1)
        ],
    )  # fmt: skip
    letters = sorted(out.letters, key=lambda x: (x["sent_date"], x["account"], x["level"]))
    writer.write(
        s.CollectionLetter,
        [
            {"legal_entity": x["le"], "letter_id": numbering.next("CL"),
             "customer_account": x["account"], "sequence": x["sequence"], "level": x["level"],
             "sent_date": x["sent_date"], "amount": dec(x["cents"])}
            for x in letters
        ],
    )  # fmt: skip
    for case in sorted(out.cases, key=lambda c: (c["opened_date"], c["seq"])):
        case["case_id"] = numbering.next("CASE")
    writer.write(
        s.CollectionCase,
        [
            {"legal_entity": c["le"], "case_id": c["case_id"], "customer_account": c["account"],
             "status": c["status"], "opened_date": c["opened_date"],
             "closed_date": c["closed_date"], "owner_agent_id": c["owner"],
             "description": c["description"]}
            for c in sorted(out.cases, key=lambda c: c["case_id"])
        ],
    )  # fmt: skip
    activities = sorted(
        out.activities, key=lambda a: (a["created_date"], a["account"], a["due_date"])
    )
    writer.write(
        s.CollectionActivity,
        [
            {"legal_entity": a["le"], "activity_id": numbering.next("ACT"),
             "customer_account": a["account"], "category": a["category"],
             "activity_type": a["type"], "purpose": a["purpose"], "status": a["status"],
             "due_date": a["due_date"], "created_date": a["created_date"],
             "owner_agent_id": a["owner"], "case_id": a["case"]["case_id"] if a["case"] else None}
            for a in activities
        ],
    )  # fmt: skip


def _write_vendor_chunk(writer: Writer, numbering: _Numbering, ctx: Context, out: VendorChunk):
    orders = sorted(out.orders, key=lambda o: (o.order_date, o.seq))
    for order in orders:
        order.po_number = numbering.next("PO")
    invoices = sorted(out.invoices, key=lambda v: (v.invoice_date, v.seq))
    for invoice in invoices:
        invoice.invoice_id = numbering.next("VI")
        if invoice.doc is not None:
            invoice.doc.doc_number = invoice.vendor_number
            invoice.doc.po_number = invoice.po.po_number if invoice.po else None
    _number_docs(out.docs, numbering, "APV", AP_DOC_PREFIX)
    writer.write(s.Vendor, [v.row for v in out.vendors])
    writer.write(
        s.VendorTransaction,
        [ledger_row(doc, "vendor_account", {"po_number": doc.po_number}) for doc in out.docs],
    )
    settlements = sorted(out.settlements, key=lambda x: (x.date, x.debit.seq, x.credit.seq))
    writer.write(
        s.VendorSettlement,
        [
            {"legal_entity": x.debit.le, "settlement_id": numbering.next("APS"),
             "vendor_account": x.debit.account, "debit_voucher": x.debit.voucher,
             "credit_voucher": x.credit.voucher, "settled_date": x.date,
             "amount_cur": dec(x.cents), "cash_discount_taken": dec(x.discount)}
            for x in settlements
        ],
    )  # fmt: skip
    writer.write(
        s.VendorInvoice,
        [
            {"legal_entity": v.le, "invoice_id": v.invoice_id,
             "vendor_invoice_number": v.vendor_number, "vendor_account": v.account,
             "invoice_date": v.invoice_date, "due_date": v.due_date, "currency": v.currency,
             "amount": dec(v.cents), "status": v.status, "approver": v.approver,
             "po_number": v.po.po_number if v.po else None, "match_status": v.match_status,
             "match_failure_reason": v.match_failure,
             "voucher": v.doc.voucher if v.doc else None, "description": v.description}
            for v in invoices
        ],
    )  # fmt: skip
    writer.write(
        s.PurchaseOrder,
        [
            {"legal_entity": o.le, "po_number": o.po_number, "vendor_account": o.account,
             "order_date": o.order_date, "status": o.status, "currency": o.currency,
             "total_amount": dec(o.total), "buyer": o.buyer}
            for o in orders
        ],
    )  # fmt: skip
    writer.write(
        s.PurchaseOrderLine,
        [
            {"legal_entity": o.le, "po_number": o.po_number, "line_number": n, "item_id": line[0],
             "description": line[1], "quantity_ordered": dec(line[2]),
             "quantity_received": dec(line[3]), "quantity_invoiced": dec(line[4]),
             "unit_price": dec(line[5]), "line_amount": dec(line[6])}
            for o in orders
            for n, line in enumerate(o.lines, start=1)
        ],
    )  # fmt: skip
    receipts = sorted(
        ((date, o.seq, number, o, qty) for o in orders for number, date, qty in o.receipts),
        key=lambda r: r[:3],
    )
    writer.write(
        s.ProductReceipt,
        [
            {"legal_entity": o.le, "receipt_id": numbering.next("PR"), "po_number": o.po_number,
             "line_number": number, "receipt_date": date, "quantity": dec(qty)}
            for date, _seq, number, o, qty in receipts
        ],
    )  # fmt: skip
    _write_journals(writer, numbering, ctx, out)


def _write_journals(writer: Writer, numbering: _Numbering, ctx: Context, out: VendorChunk):
    """Posted journals for the payments made, plus open manual journals and payment proposals."""
    groups: dict[tuple, list[tuple[Doc, Doc]]] = defaultdict(list)
    for payment, invoice, method in out.payments:
        groups[(payment.date, payment.le, method, payment.currency)].append((payment, invoice))
    journals: list[dict] = []
    lines: list[dict] = []

    def add(key_date, le, method, currency, status, source, description, items) -> None:
        journal_id = numbering.next("PJ")
        total = 0
        for number, (account, voucher, pay_date, cents) in enumerate(items, start=1):
            total += cents
            lines.append(
                {"legal_entity": le, "journal_id": journal_id, "line_number": number,
                 "vendor_account": account, "invoice_voucher": voucher,
                 "payment_date": pay_date, "currency": currency, "amount": dec(cents)}
            )  # fmt: skip
        journals.append(
            {"legal_entity": le, "journal_id": journal_id, "description": description,
             "created_date": key_date, "status": status, "source": source,
             "method_of_payment": method, "currency": currency, "total_amount": dec(total),
             "line_count": len(items)}
        )  # fmt: skip

    for (date, le, method, currency), pairs in sorted(groups.items()):
        pairs.sort(key=lambda p: p[0].seq)
        items = [(p.account, inv.voucher, p.date, -p.cents) for p, inv in pairs]
        source = "proposal" if len(items) > 2 else "manual"
        add(date - DAY * (1 if source == "proposal" else 0), le, method, currency, "posted",
            source, f"Vendor payments {date.isoformat()} {method}", items)  # fmt: skip
    _open_journals(ctx, out, add)
    writer.write(s.PaymentJournal, journals)
    writer.write(s.PaymentJournalLine, lines)


def _open_journals(ctx: Context, out: VendorChunk, add: Callable) -> None:
    as_of = ctx.as_of
    vendors = {(v.spec.le.code, v.spec.account): v for v in out.vendors}
    proposal: dict[tuple, list] = defaultdict(list)
    manual: dict[tuple, list] = defaultdict(list)
    for doc in sorted(out.docs, key=lambda d: d.voucher):
        if doc.kind != "invoice" or doc.open <= 0:
            continue
        vendor = vendors[(doc.le, doc.account)]
        if vendor.row["payment_hold"]:
            continue
        key = (doc.le, vendor.row["method_of_payment"], doc.currency)
        item = (doc.account, doc.voucher, max(as_of, doc.due), doc.open)
        if doc.due <= as_of + DAY * 7:
            proposal[key].append(item)
        elif len(manual[(doc.le,)]) < 5 and ctx.rng.random() < 0.1:
            manual[(doc.le,)].append((item, vendor.row["method_of_payment"], doc.currency))
    for (le, method, currency), items in sorted(proposal.items()):
        for start in range(0, len(items), 250):
            add(as_of, le, method, currency, "open", "proposal",
                f"Payment proposal: due by {(as_of + DAY * 7).isoformat()}",
                items[start : start + 250])  # fmt: skip
    for (le,), entries in sorted(manual.items()):
        by_kind: dict[tuple, list] = defaultdict(list)
        for item, method, currency in entries:
            by_kind[(method, currency)].append(item)
        for (method, currency), items in sorted(by_kind.items()):
            add(
                as_of - DAY, le, method, currency, "open", "manual", "Manual payment journal", items
            )
