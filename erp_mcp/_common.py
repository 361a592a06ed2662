"""Pieces shared by the tool modules: paging, date checks, totals and record building."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from typing import Any

from fastmcp.exceptions import ToolError
from pydantic import Field
from sqlalchemy import Connection, Select, func, select
from sqlmodel import SQLModel

from erp_mcp._records import StrictModel, money, record_model, row_values
from erp_mcp._runtime import ErpRuntime
from synthetic_erp._catalog import entity_set_for

MAX_PAGE_SIZE = 500
MAX_PAGE = 100_000
"""Far beyond the last page at 100x scale; keeps offsets inside 64-bit SQL integers."""
MAX_CURSOR_CHARS = 200
_PAGING_FIELDS = frozenset({"page", "page_size", "cursor", "top", "skip"})


class PageArgs(StrictModel):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    """1-based page number (ignored when cursor is given)."""
    page_size: int = Field(50, ge=1, le=MAX_PAGE_SIZE)
    """Rows per page (1-500). A page that would exceed the result budget is cut short: then
    truncated is true and next_cursor continues exactly after the last row returned."""
    cursor: str | None = Field(None, max_length=MAX_CURSOR_CHARS)
    """next_cursor from the previous result of the same call: continues where it stopped. Pass
    the same filters; page is ignored."""


class PageInfo(StrictModel):
    total_count: int
    """Rows matching the filters, over all pages."""
    page: int
    """Page number of the first row returned (page_size rows per page)."""
    page_size: int
    """Rows per page asked for."""
    offset: int = 0
    """Rows before the first one returned."""
    has_more: bool
    """True when later rows exist (follow next_cursor)."""
    truncated: bool = False
    """True when fewer than page_size rows were returned to stay within the result budget
    (about 100,000 characters); next_cursor continues after the last row returned."""
    next_cursor: str | None = None
    """Opaque cursor for the next rows (pass it as cursor with the same filters); null on the
    last page."""


def _query_fingerprint(args: StrictModel) -> str:
    """Short hash of the filters of a paged call, so a cursor only continues the same query."""
    filters = args.model_dump(mode="json", exclude=set(_PAGING_FIELDS))
    blob = json.dumps([type(args).__name__, filters], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def encode_cursor(args: StrictModel, offset: int) -> str:
    payload = json.dumps({"o": offset, "q": _query_fingerprint(args)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def cursor_offset(args: PageArgs, *, fingerprint_of: StrictModel | None = None) -> int:
    """Rows to skip: from ``cursor`` when given (checked against the filters of
    ``fingerprint_of``, default ``args``), else from page."""
    if args.cursor is None:
        return (args.page - 1) * args.page_size
    try:
        raw = base64.urlsafe_b64decode(args.cursor + "=" * (-len(args.cursor) % 4))
        payload = json.loads(raw)
        offset, fingerprint = int(payload["o"]), str(payload["q"])
    except (ValueError, KeyError, TypeError):
        raise ToolError(
            "cursor: not a cursor this server issued; pass next_cursor unchanged"
        ) from None
    if fingerprint != _query_fingerprint(fingerprint_of or args):
        raise ToolError(
            "cursor: it continues a call with different filters; repeat the filters of the call "
            "that returned it, or drop cursor to start again"
        )
    if not 0 <= offset <= MAX_PAGE * MAX_PAGE_SIZE:
        raise ToolError("cursor: offset out of range; pass next_cursor unchanged")
    return offset


class CurrencyTotal(StrictModel):
    currency: str
    count: int
    amount: float
    """Sum of amounts in this currency."""
    open_amount: float | None = None
    """Sum of open amounts in this currency (ledger lists only)."""


def check_range(name: str, low: Any, high: Any) -> None:
    if low is not None and high is not None and low > high:
        raise ToolError(f"{name}: the start ({low}) is after the end ({high})")


def page_of(conn: Connection, stmt: Select, order_by: list[Any], args: PageArgs):
    """``(rows, PageInfo)`` for one page of ``stmt`` (count over all matching rows)."""
    offset = cursor_offset(args)
    total = int(
        conn.execute(select(func.count()).select_from(stmt.order_by(None).subquery())).scalar() or 0
    )
    rows = conn.execute(stmt.order_by(*order_by).limit(args.page_size).offset(offset)).all()
    return rows, page_info(args, offset, len(rows), total)


def page_info(args: PageArgs, offset: int, returned: int, total: int) -> PageInfo:
    """Paging facts of ``returned`` rows starting at ``offset`` out of ``total``."""
    has_more = offset + returned < total
    return PageInfo(
        total_count=total,
        page=offset // args.page_size + 1,
        page_size=args.page_size,
        offset=offset,
        has_more=has_more,
        next_cursor=encode_cursor(args, offset + returned) if has_more else None,
    )


def count_by(conn: Connection, column: Any, clauses: list[Any]) -> dict[str, int]:
    """Rows matching ``clauses`` counted per value of ``column`` (e.g. ``count_by_status``)."""
    stmt = select(column, func.count()).where(*clauses).group_by(column)
    return {value: int(n) for value, n in conn.execute(stmt)}


def sum_by_currency(
    conn: Connection, currency: Any, amount: Any, clauses: list[Any]
) -> dict[str, float]:
    """``amount`` summed per currency over the rows matching ``clauses``, rounded to cents."""
    stmt = select(currency, func.sum(amount)).where(*clauses).group_by(currency)
    return {code: money(total) for code, total in conn.execute(stmt)}


def to_record(
    rt: ErpRuntime, table: type[SQLModel], row: Any, *, model: type | None = None, **extra: Any
):
    """The record model of ``table`` (or ``model``) for a row, with its citable ``url``."""
    values = row_values(table, row)
    try:
        es = entity_set_for(table)
        url = rt.url(es.name, values["legal_entity"], values[es.key_column])
    except KeyError:
        url = None
    values["url"] = url
    values.update(extra)
    return (model or record_model(table))(**values)


def as_of_or_today(rt: ErpRuntime, as_of: dt.date | None) -> dt.date:
    return as_of or rt.today


def currency_totals(rows: Any) -> list[CurrencyTotal]:
    """Totals from rows of ``(currency, count, amount, open_amount)``."""
    out = []
    for row in rows:
        open_amount = money(row[3]) if len(row) > 3 and row[3] is not None else None
        out.append(
            CurrencyTotal(
                currency=row[0], count=int(row[1]), amount=money(row[2]), open_amount=open_amount
            )
        )
    return out
