"""The record-link grammar of the ERP: which URL (or MCP resource URI) names which record.

Below every stage because a dataset item's ``record_refs`` are checked with it when a dataset is
loaded, as well as by the ERP, its server and the judge. The ERP binds each entity set named here
to its table (``synthetic_erp._catalog.ENTITY_SETS``; a test keeps the two lists equal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

ERP_ENTITY_SET_NAMES: tuple[str, ...] = (
    "customers",
    "vendors",
    "customer-transactions",
    "customer-settlements",
    "customer-disputes",
    "sales-orders",
    "collection-letters",
    "collection-cases",
    "collection-activities",
    "vendor-transactions",
    "vendor-settlements",
    "vendor-invoices",
    "purchase-orders",
    "product-receipts",
    "payment-journals",
    "customer-groups",
    "vendor-groups",
    "payment-terms",
    "cash-discounts",
    "collections-pools",
    "collections-agents",
)
"""The addressable kinds of ERP record, by URL segment (``/erp/{LE}/{set}/{key}``)."""

_KNOWN_SETS = frozenset(ERP_ENTITY_SET_NAMES)
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.%\-]*$")
"""Keys may hold ``%`` (payment terms such as ``2%10Net30``); never ``/`` or ``..``."""


@dataclass(frozen=True)
class RecordRef:
    legal_entity: str
    entity_set: str
    key: str


RESOURCE_SCHEME = "erp://"
"""Prefix of a record's MCP resource URI (record links over stdio)."""


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
    if set_name not in _KNOWN_SETS:
        return None
    if not (_SAFE_SEGMENT.match(legal_entity) and _SAFE_SEGMENT.match(key)):
        return None
    if ".." in key or "/" in key:
        return None
    return RecordRef(legal_entity=legal_entity, entity_set=set_name, key=key)


__all__ = [
    "ERP_ENTITY_SET_NAMES",
    "RESOURCE_SCHEME",
    "RecordRef",
    "is_resource_uri",
    "parse_record_url",
]
