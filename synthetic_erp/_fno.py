"""Import of the published FORCE-Bench FnO files (customers.csv, vendors.csv, ar_journal.xlsx,
ap_journal.xlsx) into the ERP schema.

The files hold only party masters and invoice-like journal lines of one legal entity (USMF, USD).
What they lack is derived and named in each row's ``derived_fields``: vouchers and document numbers
(from the journal line number), due dates (journal date + the party's payment-terms net days), open
amounts (nothing was ever settled, so open = amount), the posted flag (the batch is unposted in the
file; importing posts it), and party created dates (the start of the published year).
"""

from __future__ import annotations

import csv
import datetime as dt
import time
from decimal import Decimal
from pathlib import Path

import faker
from openpyxl import load_workbook

from synthetic_erp import _schema as s
from synthetic_erp._db import ErpDatabaseError, redact_url
from synthetic_erp._generate import (
    DEFAULT_AS_OF,
    GENERATOR_VERSION,
    GenerationReport,
    Writer,
)
from synthetic_erp._reference import (
    CURRENCIES,
    CUSTOMER_GROUPS,
    LE_BY_CODE,
    PAYMENT_TERMS,
    VENDOR_GROUPS,
)
from synthetic_erp._snapshot import hash_connection
from synthetic_erp._summaries import build_summaries
from synthetic_erp._target import create_indexes, open_target

FILES = ("customers.csv", "vendors.csv", "ar_journal.xlsx", "ap_journal.xlsx")
LEGAL_ENTITY = "USMF"
NET_DAYS = {terms_id: net for terms_id, _d, net, _c in PAYMENT_TERMS}
PARTY_DERIVED = "created_date"
LINE_DERIVED = "voucher,document_number,due_date,open_amount_cur,open_amount_acct,posted"


def import_fno(
    directory: Path | str, db_url: str, *, overwrite: bool = False, as_of: dt.date = DEFAULT_AS_OF
) -> GenerationReport:
    """Load the four FnO files in ``directory`` into a new ERP at ``db_url`` (atomic)."""
    started = time.perf_counter()
    directory = Path(directory)
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing:
        raise ErpDatabaseError(
            f"{directory} lacks {', '.join(missing)}; point import-fno at the folder holding "
            f"{', '.join(FILES)}"
        )
    created = as_of - dt.timedelta(days=365)
    customers = [_customer(row, created) for row in _read_csv(directory / "customers.csv")]
    vendors = [_vendor(row, created) for row in _read_csv(directory / "vendors.csv")]
    terms = {c["account"]: c["payment_terms"] for c in customers}
    vendor_terms = {v["account"]: v["payment_terms"] for v in vendors}
    ar = [_ar_line(line, terms) for line in _journal_lines(directory / "ar_journal.xlsx")]
    ap = [_ap_line(line, vendor_terms) for line in _journal_lines(directory / "ap_journal.xlsx")]
    with open_target(db_url, overwrite=overwrite) as conn:
        writer = Writer(conn)
        _write_reference(writer, customers, vendors)
        writer.write(s.Customer, customers)
        writer.write(s.Vendor, vendors)
        writer.write(s.CustomerTransaction, ar)
        writer.write(s.VendorTransaction, ap)
        meta = {
            "as_of": as_of.isoformat(),
            "seed": "",
            "scale": "1",
            "customers": str(len(customers)),
            "vendors": str(len(vendors)),
            "generator_version": GENERATOR_VERSION,
            "faker_version": faker.VERSION,
            "source": "fno-import",
        }
        writer.write(s.ErpMeta, [{"key": k, "value": v} for k, v in meta.items()])
        create_indexes(conn)
        summary_rows = build_summaries(conn)
        digest = hash_connection(conn)
        writer.write(s.ErpMeta, [{"key": "snapshot_hash", "value": digest}])
    return GenerationReport(
        db_url=redact_url(db_url),
        seed=0,
        scale=1.0,
        customers=len(customers),
        vendors=len(vendors),
        as_of=as_of,
        row_counts=dict(writer.counts),
        summary_rows=summary_rows,
        snapshot_hash=digest,
        seconds=round(time.perf_counter() - started, 3),
    )


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def _journal_lines(path: Path) -> list[dict]:
    """The journal lines below the ``Date | Company | ...`` header row of the first sheet."""
    workbook = load_workbook(path, read_only=True, data_only=True)
    try:
        sheet = workbook.worksheets[0]
        header: list[str] | None = None
        lines = []
        for values in sheet.iter_rows(values_only=True):
            if header is None:
                if values and values[0] == "Date":
                    header = [str(v) for v in values]
                continue
            if values[0] is None:
                continue
            lines.append(dict(zip(header, values, strict=False)))
        if header is None:
            raise ErpDatabaseError(f"{path} has no journal header row starting with 'Date'")
        return lines
    finally:
        workbook.close()


def _date(value) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.datetime.strptime(str(value), "%m/%d/%Y").date()


def _money(value) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"))


def _customer(row: dict[str, str], created: dt.date) -> dict:
    return {
        "legal_entity": LEGAL_ENTITY,
        "account": row["CustomerAccount"],
        "name": row["OrganizationName"],
        "group_id": row["CustomerGroupId"],
        "currency": row["CurrencyCode"],
        "payment_terms": row["PaymentTermsId"],
        "method_of_payment": None,
        "credit_limit": _money(row["CreditMax"] or 0),
        "credit_rating": row["CreditRating"],
        "credit_hold": row["CustomerHoldStatus"].strip().lower() not in ("open", "no", ""),
        "contact_name": row["PrimaryContactPersonFirstName"],
        "contact_phone": row["PrimaryContactPhone"],
        "contact_email": row["PrimaryContactEmail"],
        "address_street": row["AddressStreet"],
        "address_city": row["AddressCity"],
        "address_state": row["AddressState"],
        "address_zip": row["AddressZipCode"],
        "address_country": row["AddressCountryRegionId"],
        "sales_tax_group": row["SalesTaxGroup"],
        "created_date": created,
        "collections_pool_id": None,
        "collections_agent_id": None,
        "derived_fields": PARTY_DERIVED,
    }


def _vendor(row: dict[str, str], created: dt.date) -> dict:
    hold = row["VendorHoldStatus"].strip().lower() not in ("no", "")
    return {
        "legal_entity": LEGAL_ENTITY,
        "account": row["VendorAccountNumber"],
        "name": row["VendorOrganizationName"],
        "group_id": row["VendorGroupId"],
        "currency": row["CurrencyCode"],
        "payment_terms": row["PaymentTermsId"],
        "method_of_payment": row["PaymentMethodName"],
        "payment_hold": hold,
        "hold_reason": row["VendorHoldStatus"] if hold else None,
        "contact_name": row["PrimaryContactPersonFirstName"],
        "contact_phone": row["PrimaryContactPhone"],
        "contact_email": row["PrimaryContactEmail"],
        "address_street": row["AddressStreet"],
        "address_city": row["AddressCity"],
        "address_state": row["AddressState"],
        "address_zip": row["AddressZipCode"],
        "address_country": row["AddressCountryRegionId"],
        "sales_tax_group": row["SalesTaxGroup"],
        "created_date": created,
        "derived_fields": PARTY_DERIVED,
    }


def _ledger_line(line: dict, party: str, terms: dict[str, str], prefix: str) -> dict:
    debit, credit = line.get("Debit"), line.get("Credit")
    amount = _money(debit) if debit not in (None, "") else -_money(credit)
    date = _date(line["Date"])
    number = int(line["Line number"])
    net = NET_DAYS.get(terms.get(party, ""), 30)
    return {
        "legal_entity": line["Company"],
        "voucher": f"FNO-{prefix}-{number:06d}",
        "txn_date": date,
        "due_date": date + dt.timedelta(days=net) if amount > 0 else None,
        "currency": line["Currency"],
        "amount_cur": amount,
        "exchange_rate": Decimal("1.000000"),
        "amount_acct": amount,
        "open_amount_cur": amount,
        "open_amount_acct": amount,
        "cash_discount_date": None,
        "cash_discount_amount": None,
        "posted": True,
        "closed_date": None,
        "description": str(line.get("Description") or ""),
        "derived_fields": LINE_DERIVED,
    }


def _ar_line(line: dict, terms: dict[str, str]) -> dict:
    party = line["Non-ledger account"]
    row = _ledger_line(line, party, terms, "AR")
    row["customer_account"] = party
    row["txn_type"] = "free_text_invoice" if row["amount_cur"] > 0 else "credit_note"
    row["document_number"] = f"FNO-FTI-{int(line['Line number']):06d}"
    row["sales_id"] = None
    return row


def _ap_line(line: dict, terms: dict[str, str]) -> dict:
    party = line["Offset Non-ledger account"]
    row = _ledger_line(line, party, terms, "AP")
    row["vendor_account"] = party
    row["txn_type"] = "invoice" if row["amount_cur"] > 0 else "credit_note"
    row["document_number"] = f"FNO-VI-{int(line['Line number']):06d}"
    row["po_number"] = None
    return row


def _write_reference(writer: Writer, customers: list[dict], vendors: list[dict]) -> None:
    le = LE_BY_CODE[LEGAL_ENTITY]
    writer.write(
        s.LegalEntity,
        [{"code": le.code, "name": le.name, "accounting_currency": le.currency,
          "country": le.country, "fiscal_year_start_month": le.fiscal_year_start_month}],
    )  # fmt: skip
    writer.write(s.Currency, [{"code": code, "name": name} for code, name in CURRENCIES])
    used_terms = {p["payment_terms"] for p in customers + vendors}
    writer.write(
        s.PaymentTerms,
        [
            {"legal_entity": LEGAL_ENTITY, "terms_id": t, "description": d, "net_days": n,
             "cash_discount_code": c}
            for t, d, n, c in PAYMENT_TERMS if t in used_terms
        ],
    )  # fmt: skip
    methods = sorted({v["method_of_payment"] for v in vendors})
    writer.write(
        s.MethodOfPayment,
        [
            {"legal_entity": LEGAL_ENTITY, "party_type": "vendor", "code": m, "description": m,
             "payment_account": ""}
            for m in methods
        ],
    )  # fmt: skip
    for model, parties, names in (
        (s.CustomerGroup, customers, dict(CUSTOMER_GROUPS)),
        (s.VendorGroup, vendors, dict(VENDOR_GROUPS)),
    ):
        groups = sorted({p["group_id"] for p in parties})
        writer.write(
            model,
            [
                {"legal_entity": LEGAL_ENTITY, "group_id": g, "name": names.get(g, f"Group {g}")}
                for g in groups
            ],
        )
