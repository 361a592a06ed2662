"""Pieces shared by the tool modules: paging, date checks, totals and record building."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastmcp.exceptions import ToolError
from pydantic import Field
from sqlalchemy import Connection, Select, func, select
from sqlmodel import SQLModel

from erp_mcp._records import StrictModel, money, record_model, row_values
from erp_mcp._runtime import ErpRuntime
from synthetic_erp._catalog import entity_set_for

MAX_PAGE_SIZE = 500


class PageArgs(StrictModel):
    page: int = Field(1, ge=1)
    """1-based page number."""
    page_size: int = Field(50, ge=1, le=MAX_PAGE_SIZE)
    """Rows per page (1-500)."""


class PageInfo(StrictModel):
    total_count: int
    """Rows matching the filters, over all pages."""
    page: int
    page_size: int
    has_more: bool
    """True when later pages hold more rows."""


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
    total = conn.execute(select(func.count()).select_from(stmt.order_by(None).subquery())).scalar()
    rows = conn.execute(
        stmt.order_by(*order_by).limit(args.page_size).offset((args.page - 1) * args.page_size)
    ).all()
    info = PageInfo(
        total_count=int(total or 0),
        page=args.page,
        page_size=args.page_size,
        has_more=args.page * args.page_size < int(total or 0),
    )
    return rows, info


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
