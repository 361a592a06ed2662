"""Pieces shared by the tool modules: paging, date checks, totals and record building."""

from __future__ import annotations

import datetime as dt
from functools import cache
from typing import Any

from fastmcp.exceptions import ToolError
from sqlalchemy import Connection, Select, and_, bindparam, func, literal, select
from sqlmodel import SQLModel

from erp_mcp._paging import (
    MAX_CURSOR_CHARS as MAX_CURSOR_CHARS,
)
from erp_mcp._paging import MAX_PAGE as MAX_PAGE
from erp_mcp._paging import MAX_PAGE_SIZE as MAX_PAGE_SIZE
from erp_mcp._paging import PageArgs as PageArgs
from erp_mcp._paging import PageInfo as PageInfo
from erp_mcp._paging import cursor_offset as cursor_offset
from erp_mcp._paging import encode_cursor as encode_cursor
from erp_mcp._paging import page_info as page_info
from erp_mcp._records import StrictModel, money, record_model, row_values
from erp_mcp._runtime import ErpRuntime
from synthetic_erp._catalog import entity_set_for


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


def rows_where(conn: Connection, table: Any, *, order: tuple[str, ...] = (), **equal: Any) -> list:
    """The rows of ``table`` (a model or a table) whose columns equal ``equal`` (a list value:
    the column is in it), ordered by the ``order`` columns.

    Lookup tools run these statements on every call, and building a SQLAlchemy statement costs
    more CPU than SQLite takes to run it (0.1-0.2 ms against 0.04 ms): each shape is built once,
    with the call's values as parameters."""
    return conn.execute(_rows_statement(table, tuple(equal), order, _lists(equal)), equal).all()


def first_where(conn: Connection, table: Any, **equal: Any) -> Any:
    """The first of :func:`rows_where`'s rows, or None when no row matches."""
    rows = rows_where(conn, table, **equal)
    return rows[0] if rows else None


def _lists(equal: dict[str, Any]) -> tuple[str, ...]:
    return tuple(name for name, value in equal.items() if isinstance(value, list | tuple))


@cache
def _rows_statement(table: Any, names: tuple, order: tuple, lists: tuple) -> Select:
    t = getattr(table, "__table__", table)
    tests = [
        t.c[name].in_(bindparam(name, expanding=True)) if name in lists
        else t.c[name] == bindparam(name)
        for name in names
    ]  # fmt: skip
    return select(t).where(and_(*tests)).order_by(*(t.c[name] for name in order))


def page_of(
    conn: Connection,
    stmt: Select,
    order_by: list[Any],
    args: PageArgs,
    *,
    total: int | None = None,
    row_key: Any = None,
):
    """``(rows, PageInfo)`` for one page of ``stmt`` (count over all matching rows, unless the
    caller knows it as ``total``).

    With ``row_key`` (the table's primary key) the page's keys are chosen first and only their
    rows are read: an index holding the filter and order columns then finds the page without
    reading every matching row."""
    offset = cursor_offset(args)
    if total is None:
        # Count the matching rows only: the selected columns may hold joins or subqueries.
        counted = stmt.with_only_columns(literal(1), maintain_column_froms=True).order_by(None)
        total = int(
            conn.execute(select(func.count()).select_from(counted.subquery())).scalar() or 0
        )
    page = stmt.order_by(*order_by).limit(args.page_size).offset(offset)
    if row_key is not None:
        keys = page.with_only_columns(row_key, maintain_column_froms=True)
        page = stmt.where(row_key.in_(keys.scalar_subquery())).order_by(*order_by)
    rows = conn.execute(page).all()
    return rows, page_info(args, offset, len(rows), total)


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


def text_key(rt: ErpRuntime, column: Any) -> Any:
    """``column`` for ORDER BY in byte order on every backend (PostgreSQL databases may sort text
    by a locale; SQLite always compares bytes), so both give rows in the same order."""
    return column.collate("C") if rt.engine.dialect.name == "postgresql" else column


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
