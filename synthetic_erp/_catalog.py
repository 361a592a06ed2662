"""The entity sets of the ERP: URL names, tables and natural keys.

One place decides how a record is addressed. The MCP server builds citable record URLs from it,
serves record pages by it, and exposes its generic data tools over it; the deterministic judge
resolves the links an agent cited with it. A record URL is
``{base}/erp/{legal_entity}/{entity_set}/{key}``; where no HTTP server serves the records (MCP over
stdio) a record is the MCP resource ``erp://{legal_entity}/{entity_set}/{key}`` instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from sqlmodel import SQLModel

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
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.%\-]*$")
"""Keys may hold ``%`` (payment terms such as ``2%10Net30``); never ``/`` or ``..``."""


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


@dataclass(frozen=True)
class RecordRef:
    legal_entity: str
    entity_set: str
    key: str


STABLE_RECORD_BASE = "https://erp.ledgerbench.test"
"""The base of record links in runs the runner serves: one public name for every run, so the same
answer cites the same links whatever port the run's server had (``.test`` is reserved by RFC 2606
and never resolves; the viewer and grading packet carry copies of the records it names)."""

RESOURCE_SCHEME = "erp://"
"""Prefix of a record's MCP resource URI (record links over stdio)."""


def record_resource_uri(entity_set_name: str, legal_entity: str, key: str) -> str:
    """MCP resource URI of one record, e.g. ``erp://USMF/customers/SYNCUS-0001``."""
    return (
        f"{RESOURCE_SCHEME}{quote(legal_entity, safe='')}/{entity_set_name}/{quote(key, safe='')}"
    )


def is_resource_uri(link: str) -> bool:
    """True for ``erp://...`` (the scheme in any case), the resource form of a record link."""
    return link[: len(RESOURCE_SCHEME)].lower() == RESOURCE_SCHEME


def parse_record_url(url: str) -> RecordRef | None:
    """The record a URL (or path) points to, or None when it is not a well-formed record link.

    Accepts any host: only the ``/erp/{LE}/{set}/{key}`` path decides. The MCP resource URI
    ``erp://{LE}/{set}/{key}`` names the same record. Path tricks (``..``, empty or encoded
    separators) and unknown entity sets give None.
    """
    if is_resource_uri(url):
        tail = _without_query(url[len(RESOURCE_SCHEME) :]).rstrip("/").split("/")
        return _record_ref(tail)
    path = urlsplit(url).path if "://" in url else _without_query(url)
    parts = path.rstrip("/").split("/")
    try:
        erp_index = parts.index("erp")
    except ValueError:
        return None
    return _record_ref(parts[erp_index + 1 :])


def _without_query(link: str) -> str:
    return link.split("?", 1)[0].split("#", 1)[0]


def _record_ref(tail: list[str]) -> RecordRef | None:
    """``[LE, set, key]`` (still percent-encoded) as a record, or None when unsafe or unknown."""
    if len(tail) != 3:
        return None
    legal_entity, set_name, key = (unquote(part) for part in tail)
    if set_name not in _BY_NAME:
        return None
    if not (_SAFE_SEGMENT.match(legal_entity) and _SAFE_SEGMENT.match(key)):
        return None
    if ".." in key or "/" in key:
        return None
    return RecordRef(legal_entity=legal_entity, entity_set=set_name, key=key)
