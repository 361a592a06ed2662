"""Paging of tool results: the arguments, the facts returned and the signed cursors (no SQL here,
so the research world's server shares them without loading the ERP's database layer)."""

from __future__ import annotations

from pydantic import Field

from erp_mcp import _cursors
from erp_mcp._records import StrictModel

MAX_PAGE_SIZE = 500
MAX_PAGE = 100_000
"""Far beyond the last page at 100x scale; keeps offsets inside 64-bit SQL integers."""
MAX_CURSOR_CHARS = 200


class PageArgs(StrictModel):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    """1-based."""
    page_size: int = Field(50, ge=1, le=MAX_PAGE_SIZE)
    """At most 500."""
    cursor: str | None = Field(None, max_length=MAX_CURSOR_CHARS)
    """next_cursor of the last result."""


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


def encode_cursor(args: StrictModel, offset: int) -> str:
    """The signed cursor continuing the call ``args`` at row ``offset`` (see _cursors)."""
    return _cursors.encode_cursor(args, offset)


def cursor_offset(args: PageArgs, *, fingerprint_of: StrictModel | None = None) -> int:
    """Rows to skip: from ``cursor`` when given (checked against the tool and the filters of
    ``fingerprint_of``, default ``args``), else from page."""
    if args.cursor is None:
        return (args.page - 1) * args.page_size
    return _cursors.decode_cursor(args.cursor, fingerprint_of or args)


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
