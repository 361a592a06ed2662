"""The entity sets of the ERP: URL names, tables and natural keys (the link grammar itself,
parse_record_url and RecordRef, is in ledgerbench_core.record_links; re-exported here).

One place decides how a record is addressed. The MCP server builds citable record URLs from it,
serves record pages by it, and exposes its generic data tools over it; the deterministic judge
resolves the links an agent cited with it. A record URL is
``{base}/erp/{legal_entity}/{entity_set}/{key}``; where no HTTP server serves the records (MCP over
stdio) a record is the MCP resource ``erp://{legal_entity}/{entity_set}/{key}`` instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from sqlmodel import SQLModel

from ledgerbench_core.record_links import RESOURCE_SCHEME as RESOURCE_SCHEME
from ledgerbench_core.record_links import RecordRef as RecordRef
from ledgerbench_core.record_links import is_resource_uri as is_resource_uri
from ledgerbench_core.record_links import parse_record_url as parse_record_url
from synthetic_erp import _schema as s


@dataclass(frozen=True)
class EntitySet:
    """One addressable kind of record."""

    name: str
    """URL segment and generic-tool name, e.g. ``customers``."""
    table: type[SQLModel]
    key_column: str
    """Natural key, unique within a legal entity."""
    title: str
    """Human label for one record, e.g. ``Customer``."""
    description: str


ENTITY_SETS: tuple[EntitySet, ...] = (
    EntitySet("customers", s.Customer, "account", "Customer", "Customer master records."),
    EntitySet("vendors", s.Vendor, "account", "Vendor", "Vendor master records."),
    EntitySet(
        "customer-transactions",
        s.CustomerTransaction,
        "voucher",
        "Customer transaction",
        "AR ledger: invoices, payments, credit notes and adjustments with open amounts.",
    ),
    EntitySet(
        "customer-settlements",
        s.CustomerSettlement,
        "settlement_id",
        "Customer settlement",
        "Payments and credit notes applied to customer invoices.",
    ),
    EntitySet(
        "customer-disputes",
        s.CustomerDispute,
        "dispute_id",
        "Dispute",
        "Disputed invoices and deductions.",
    ),
    EntitySet("sales-orders", s.SalesOrder, "sales_id", "Sales order", "Sales and return orders."),
    EntitySet(
        "collection-letters",
        s.CollectionLetter,
        "letter_id",
        "Collection letter",
        "Collection letters sent to customers, by sequence and level.",
    ),
    EntitySet(
        "collection-cases", s.CollectionCase, "case_id", "Collections case", "Collections cases."
    ),
    EntitySet(
        "collection-activities",
        s.CollectionActivity,
        "activity_id",
        "Collections activity",
        "Collections activities and tasks with owner, purpose, status and due date.",
    ),
    EntitySet(
        "vendor-transactions",
        s.VendorTransaction,
        "voucher",
        "Vendor transaction",
        "AP ledger: posted vendor invoices, payments, credit and debit notes with open amounts.",
    ),
    EntitySet(
        "vendor-settlements",
        s.VendorSettlement,
        "settlement_id",
        "Vendor settlement",
        "Vendor payments and notes applied to vendor invoices.",
    ),
    EntitySet(
        "vendor-invoices",
        s.VendorInvoice,
        "invoice_id",
        "Vendor invoice",
        "Vendor invoices through their life cycle (register, approval, posted) with match status.",
    ),
    EntitySet(
        "purchase-orders", s.PurchaseOrder, "po_number", "Purchase order", "Purchase orders."
    ),
    EntitySet(
        "product-receipts",
        s.ProductReceipt,
        "receipt_id",
        "Product receipt",
        "Goods received against purchase-order lines.",
    ),
    EntitySet(
        "payment-journals",
        s.PaymentJournal,
        "journal_id",
        "Payment journal",
        "Vendor payment journals and payment proposals.",
    ),
    EntitySet("customer-groups", s.CustomerGroup, "group_id", "Customer group", "Customer groups."),
    EntitySet("vendor-groups", s.VendorGroup, "group_id", "Vendor group", "Vendor groups."),
    EntitySet(
        "payment-terms",
        s.PaymentTerms,
        "terms_id",
        "Payment terms",
        "Payment terms with net days and cash-discount codes.",
    ),
    EntitySet("cash-discounts", s.CashDiscount, "code", "Cash discount", "Cash-discount codes."),
    EntitySet(
        "collections-pools",
        s.CollectionsPool,
        "pool_id",
        "Collections pool",
        "Collections pools.",
    ),
    EntitySet(
        "collections-agents",
        s.CollectionsAgent,
        "agent_id",
        "Collections agent",
        "Collections agents and their pools.",
    ),
)

_BY_NAME = {entity_set.name: entity_set for entity_set in ENTITY_SETS}
_BY_TABLE = {entity_set.table: entity_set for entity_set in ENTITY_SETS}


def entity_set(name: str) -> EntitySet:
    """The entity set called ``name``; KeyError names the known sets."""
    try:
        return _BY_NAME[name]
    except KeyError:
        known = ", ".join(sorted(_BY_NAME))
        raise KeyError(f"unknown entity set {name!r}; known: {known}") from None


def entity_set_for(table: type[SQLModel]) -> EntitySet:
    return _BY_TABLE[table]


def record_path(entity_set_name: str, legal_entity: str, key: str) -> str:
    """Path of one record, e.g. ``/erp/USMF/customers/SYNCUS-0001``."""
    return f"/erp/{_segment(legal_entity)}/{entity_set_name}/{_segment(key)}"


_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]+")
"""What ``quote(text, safe="")`` leaves as it is: ids almost always are, and matching costs a
tenth of quoting (every listed row carries a link or three)."""


def _segment(text: str) -> str:
    return text if _UNRESERVED.fullmatch(text) else quote(text, safe="")


def record_url(base_url: str, entity_set_name: str, legal_entity: str, key: str) -> str:
    return base_url.rstrip("/") + record_path(entity_set_name, legal_entity, key)


STABLE_RECORD_BASE = "https://erp.ledgerbench.test"
"""The base of record links in runs the runner serves: one public name for every run, so the same
answer cites the same links whatever port the run's server had (``.test`` is reserved by RFC 2606
and never resolves; the viewer and grading packet carry copies of the records it names)."""


def record_resource_uri(entity_set_name: str, legal_entity: str, key: str) -> str:
    """MCP resource URI of one record, e.g. ``erp://USMF/customers/SYNCUS-0001``."""
    return (
        f"{RESOURCE_SCHEME}{quote(legal_entity, safe='')}/{entity_set_name}/{quote(key, safe='')}"
    )
