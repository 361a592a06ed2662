"""Record pages: ``GET /erp/{LE}/{entity_set}/{key}`` as HTML for people and JSON for programs.

A page shows the record, its lines and children (order lines, settlements, activities...) and links
to related records. Unknown records and malformed paths give 404; with a token, 401 without it.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ledgerbench_core.record_links import parse_record_url

if TYPE_CHECKING:
    from erp_mcp._runtime import ErpRuntime, RuntimeHolder

# The ERP's schema, SQLAlchemy and runtime load when a record page is read, not at import: the
# research world's server uses this module's page guards and never reads an ERP record.

_COMMON_LINKS = {
    "customer_account": "customers",
    "vendor_account": "vendors",
    "sales_id": "sales-orders",
    "po_number": "purchase-orders",
    "case_id": "collection-cases",
    "owner_agent_id": "collections-agents",
    "collections_agent_id": "collections-agents",
    "collections_pool_id": "collections-pools",
    "pool_id": "collections-pools",
    "payment_terms": "payment-terms",
    "journal_id": "payment-journals",
    "cash_discount_code": "cash-discounts",
    "invoice_voucher": "vendor-transactions",
}
_SET_LINKS = {
    "customers": {"group_id": "customer-groups"},
    "vendors": {"group_id": "vendor-groups"},
    "customer-settlements": {
        "debit_voucher": "customer-transactions",
        "credit_voucher": "customer-transactions",
    },
    "vendor-settlements": {
        "debit_voucher": "vendor-transactions",
        "credit_voucher": "vendor-transactions",
    },
    "customer-disputes": {"voucher": "customer-transactions"},
    "vendor-invoices": {"voucher": "vendor-transactions"},
}


def _children(set_name: str) -> list[tuple[str, type, dict[str, str], Any]]:
    from synthetic_erp import _schema as s

    """(label, table, {child column: parent column}, extra condition builder) per entity set."""
    return {
        "customers": [
            ("open transactions", s.CustomerTransaction, {"customer_account": "account"},
             lambda t: t.c.open_amount_cur != 0),
            ("open activities", s.CollectionActivity, {"customer_account": "account"},
             lambda t: t.c.status.in_(("open", "in_progress"))),
            ("disputes", s.CustomerDispute, {"customer_account": "account"}, None),
        ],
        "vendors": [
            ("open transactions", s.VendorTransaction, {"vendor_account": "account"},
             lambda t: t.c.open_amount_cur != 0),
            ("unposted invoices", s.VendorInvoice, {"vendor_account": "account"},
             lambda t: t.c.status != "posted"),
        ],
        "customer-transactions": [
            ("settlements", s.CustomerSettlement, None, None),
            ("disputes", s.CustomerDispute, {"voucher": "voucher"}, None),
        ],
        "vendor-transactions": [("settlements", s.VendorSettlement, None, None)],
        "sales-orders": [
            ("lines", s.SalesOrderLine, {"sales_id": "sales_id"}, None),
            ("invoices", s.CustomerTransaction, {"sales_id": "sales_id"}, None),
        ],
        "purchase-orders": [
            ("lines", s.PurchaseOrderLine, {"po_number": "po_number"}, None),
            ("receipts", s.ProductReceipt, {"po_number": "po_number"}, None),
            ("invoices", s.VendorInvoice, {"po_number": "po_number"}, None),
        ],
        "payment-journals": [("lines", s.PaymentJournalLine, {"journal_id": "journal_id"}, None)],
        "collection-cases": [
            ("activities", s.CollectionActivity, {"case_id": "case_id"}, None),
        ],
        "collections-agents": [],
        "customer-groups": [],
    }.get(set_name, [])  # fmt: skip


CHILD_LIMIT = 200


def record_page(rt: ErpRuntime, le: str, set_name: str, key: str) -> dict | None:
    """The JSON page of a record, or None when there is no such record."""
    from sqlalchemy import or_, select

    from erp_mcp._common import to_record
    from synthetic_erp._catalog import entity_set

    es = entity_set(set_name)
    table = es.table.__table__
    with rt.engine.connect() as conn:
        row = conn.execute(
            select(table).where(table.c.legal_entity == le, table.c[es.key_column] == key)
        ).first()
        if row is None:
            return None
        record = to_record(rt, es.table, row).model_dump(mode="json")
        children: dict[str, list[dict]] = {}
        for label, child, mapping, extra in _children(set_name):
            ct = child.__table__
            clauses = [ct.c.legal_entity == le]
            if mapping is None:  # settlements on either side of a voucher
                clauses.append(
                    or_(ct.c.debit_voucher == row.voucher, ct.c.credit_voucher == row.voucher)
                )
            else:
                clauses += [ct.c[c] == row._mapping[p] for c, p in mapping.items()]
            if extra is not None:
                clauses.append(extra(ct))
            order = [ct.c.line_number] if "line_number" in ct.c else [ct.c.id]
            rows = conn.execute(select(ct).where(*clauses).order_by(*order).limit(CHILD_LIMIT))
            parent_url = record["url"]
            items = []
            for r in rows:
                item = to_record(rt, child, r).model_dump(mode="json")
                if item["url"] is None and "line_number" in item:
                    item["url"] = f"{parent_url}#line-{item['line_number']}"
                items.append(item)
            children[label] = items
    return {
        "entity_set": es.name,
        "title": es.title,
        "legal_entity": le,
        "key": key,
        "url": record["url"],
        "record": record,
        "children": children,
        "related": _related(rt, es.name, le, record),
    }


def read_record_pages(
    db_url: str, paths: Iterable[str], public_url: str | None = None
) -> tuple[str | None, dict[str, dict]]:
    """The pages of the record ``paths`` (``/erp/LE/set/key``) read straight from the database,
    as the server would serve them (links based on ``public_url``): copies that outlive the
    server. Returns the database's snapshot hash and {path: page}; unknown records are left
    out. Raises ``ErpDatabaseError`` (or SQLAlchemy's errors) when the database cannot be read.
    """
    from erp_mcp._runtime import ErpRuntime

    runtime = ErpRuntime.open(db_url, public_url)
    pages: dict[str, dict] = {}
    try:
        for path in paths:
            ref = parse_record_url(path)
            if ref is None or ref.legal_entity not in runtime.legal_entities:
                continue
            page = record_page(runtime, ref.legal_entity, ref.entity_set, ref.key)
            if page is not None:
                pages[path] = page
        return runtime.meta.get("snapshot_hash"), pages
    finally:
        runtime.close()


def _related(rt: ErpRuntime, set_name: str, le: str, record: dict) -> list[dict]:
    from synthetic_erp._catalog import entity_set

    links = {**_COMMON_LINKS, **_SET_LINKS.get(set_name, {})}
    key_column = entity_set(set_name).key_column
    out = []
    for column, target in links.items():
        value = record.get(column)
        if value in (None, "") or column == key_column:
            continue
        out.append({"field": column, "entity_set": target, "url": rt.url(target, le, value)})
    return out


MAX_LINK_TTL_S = 86_400
"""Longest life of a signed record link (one day)."""


def link_signature(token: str, path: str, expires: int) -> str:
    """HMAC of a record path and its expiry time under the server token (never the token)."""
    message = f"{path}\n{expires}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()[:32]


def signed_link(url: str, token: str, ttl_s: int, *, now: float | None = None) -> str:
    """``url`` with ``expires`` and ``signature`` query parameters: a person can open it in a
    browser for ``ttl_s`` seconds without the token (and it opens that one record only)."""
    if not 1 <= ttl_s <= MAX_LINK_TTL_S:
        raise ValueError(f"the lifetime must be 1-{MAX_LINK_TTL_S} seconds, got {ttl_s}")
    parts = urlsplit(url)
    # Rounded up: the link works for at least ttl_s seconds (rounding down could make a one-second
    # link expire as soon as it is printed).
    expires = math.ceil((now if now is not None else time.time()) + ttl_s)
    signature = link_signature(token, parts.path, expires)
    return parts._replace(query=f"expires={expires}&signature={signature}", fragment="").geturl()


def _signed(request: Request, token: str, raw_path: str) -> bool:
    expires_text = request.query_params.get("expires", "")
    signature = request.query_params.get("signature", "")
    if not (expires_text.isascii() and expires_text.isdigit() and len(expires_text) <= 12):
        return False
    expires, now = int(expires_text), time.time()
    if not signature or not now <= expires <= now + MAX_LINK_TTL_S + 1:
        return False
    return same_secret(signature, link_signature(token, raw_path, expires))


def same_secret(supplied: str, expected: str) -> bool:
    """Constant-time comparison of a supplied secret (any text, e.g. a non-ASCII header) with the
    expected one; ``hmac.compare_digest`` refuses non-ASCII ``str``, so both are compared as
    UTF-8 bytes."""
    return hmac.compare_digest(
        supplied.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def authorized(request: Request, token: str | None) -> bool:
    if not token:
        return True
    header = request.headers.get("authorization", "")
    # As /mcp reads it: "Bearer", one space, the token as sent (no other spacing accepted).
    if header[:7].lower() == "bearer " and same_secret(header[7:], token):
        return True
    return _signed(request, token, raw_path(request))


SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""Record pages render data, never scripts: nothing may load, frame or sniff them."""


def guarded_page(
    token: str | None, handler: Callable[[Request], Awaitable[Response]], link_command: str
) -> Callable[[Request], Awaitable[Response]]:
    """A page endpoint that refuses requests without the bearer token or a signed link (401,
    naming ``link_command`` that prints one) and sends :data:`SECURITY_HEADERS` on every reply."""

    async def page(request: Request) -> Response:
        if not authorized(request, token):
            response: Response = JSONResponse(
                {
                    "error": "unauthorized: send Authorization: Bearer <token>, or open a signed "
                    f"link from: {link_command} URL"
                },
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        else:
            response = await handler(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    return page


def raw_path(request: Request) -> str:
    """The undecoded request path: keys may contain escaped characters (terms "2%10Net30")."""
    return request.scope.get("raw_path", b"").decode("latin-1") or request.url.path


def make_page_endpoint(holder: RuntimeHolder, token: str | None):
    async def record(request: Request) -> Response:
        raw = raw_path(request)
        ref = parse_record_url(raw)
        if ref is None or "%2f" in raw.lower() or ".." in raw or "%2e%2e" in raw.lower():
            return not_found_page(request, "not a record link")
        runtime = await anyio.to_thread.run_sync(holder.get)
        if ref.legal_entity not in runtime.legal_entities:
            return not_found_page(request, f"unknown legal entity {ref.legal_entity}")
        data = await anyio.to_thread.run_sync(
            record_page, runtime, ref.legal_entity, ref.entity_set, ref.key
        )
        if data is None:
            return not_found_page(
                request, f"no {ref.entity_set} record {ref.key} in {ref.legal_entity}"
            )
        if wants_json(request):
            return JSONResponse(data)
        return HTMLResponse(render_html(data))

    return guarded_page(token, record, "python -m erp_mcp link")


def wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept or request.query_params.get("format") == "json"


def not_found_page(request: Request, message: str) -> Response:
    if wants_json(request):
        return JSONResponse({"error": f"not found: {message}"}, status_code=404)
    return HTMLResponse(
        f"<!doctype html><title>Not found</title><h1>Not found</h1><p>{html.escape(message)}</p>",
        status_code=404,
    )


def _cell(value: Any) -> str:
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return f'<a href="{html.escape(value)}">{html.escape(value)}</a>'
    return html.escape("" if value is None else str(value))


def _table(rows: list[dict]) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    columns = list(rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(data: dict) -> str:
    title = f"{data['title']} {data['key']} ({data['legal_entity']})"
    record_rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{_cell(v)}</td></tr>" for k, v in data["record"].items()
    )
    related = "".join(
        f'<li>{html.escape(link["field"])}: <a href="{html.escape(link["url"])}">'
        f"{html.escape(link['url'])}</a></li>"
        for link in data["related"]
    )
    sections = "".join(
        f"<h2>{html.escape(label)} ({len(rows)})</h2>{_table(rows)}"
        for label, rows in data["children"].items()
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}"
        "</style></head><body>"
        f"<h1>{html.escape(title)}</h1><table>{record_rows}</table>"
        f"<h2>Related records</h2><ul>{related or '<li>none</li>'}</ul>{sections}"
        "</body></html>"
    )
