"""Generic data tools in the style of Dynamics' data tools: list, describe and query entity sets.

Queries are built from validated structured filters over the catalogue's tables: field names are
checked against the table's columns and values are bound parameters, so there is no SQL text
anywhere.
"""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le, MaxLen
from fastmcp.exceptions import ToolError
from pydantic import AfterValidator, AllowInfNan, Field
from sqlalchemy import func, select

from erp_mcp._common import PageArgs, cursor_offset, encode_cursor, to_record
from erp_mcp._records import (
    StrictModel,
    column_description,
    plain_value,
    python_type,
    visible_columns,
)
from erp_mcp._runtime import ErpRuntime
from erp_mcp._summaries import amount_sum, as_money, ledger_range
from erp_mcp._tooling import MAX_DATE, MAX_NUMBER, MIN_DATE, _no_nul, erp_tool
from synthetic_erp import _summaries as st
from synthetic_erp._catalog import ENTITY_SETS, EntitySet

MAX_TOP = 500
MAX_SKIP = 50_000_000
FilterScalar = (
    Annotated[str, MaxLen(200), AfterValidator(_no_nul)]
    | Annotated[float, AllowInfNan(False), Ge(-MAX_NUMBER), Le(MAX_NUMBER)]
    | Annotated[int, Ge(-MAX_NUMBER), Le(MAX_NUMBER)]
    | bool
)
ENTITY_SET_NAMES = [es.name for es in ENTITY_SETS]
EntitySetName = Annotated[
    str, Field(min_length=1, max_length=60, json_schema_extra={"enum": ENTITY_SET_NAMES})
]
MAX_IN_VALUES = 500
AggregateOp = Literal["count", "sum", "min", "max"]
FilterOp = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "contains", "startswith"]


def _entity_set(name: str) -> EntitySet:
    for es in ENTITY_SETS:
        if es.name == name:
            return es
    names = [es.name for es in ENTITY_SETS]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise ToolError(f"unknown entity_set {name!r}; {hint}known: {', '.join(names)}")


class ListEntitySetsArgs(StrictModel):
    pass


class EntitySetInfo(StrictModel):
    name: str
    title: str
    description: str
    key_field: str
    """Natural key, unique within a legal entity; record URLs end with it."""


class EntitySetList(StrictModel):
    entity_sets: list[EntitySetInfo]


@erp_tool("generic", ListEntitySetsArgs, lookup=True)
def list_entity_sets(rt: ErpRuntime, args: ListEntitySetsArgs) -> EntitySetList:
    """The ERP's entity sets with what each holds and its key. Then describe_entity_set and
    query_entity_set."""
    return EntitySetList(
        entity_sets=[
            EntitySetInfo(
                name=es.name, title=es.title, description=es.description, key_field=es.key_column
            )
            for es in ENTITY_SETS
        ]
    )


class DescribeArgs(StrictModel):
    entity_set: EntitySetName
    """Entity set name, e.g. customer-transactions."""


class FieldInfo(StrictModel):
    name: str
    type: Literal["string", "number", "integer", "boolean", "date"]
    nullable: bool
    description: str | None


class EntitySetDescription(StrictModel):
    name: str
    title: str
    description: str
    key_field: str
    fields: list[FieldInfo]
    filter_ops: list[str]
    """Operators query_entity_set accepts in filters."""
    row_count: int
    """Rows over all legal entities."""
    example_url: str


_TYPE_NAMES = {str: "string", float: "number", int: "integer", bool: "boolean", dt.date: "date"}


@erp_tool("generic", DescribeArgs, lookup=True)
def describe_entity_set(rt: ErpRuntime, args: DescribeArgs) -> EntitySetDescription:
    """One entity set's fields (type, meaning), key, row count and filter operators."""
    es = _entity_set(args.entity_set)
    count = rt.row_count(es.table.__table__)
    return EntitySetDescription(
        name=es.name,
        title=es.title,
        description=es.description,
        key_field=es.key_column,
        fields=[
            FieldInfo(
                name=c.name,
                type=_TYPE_NAMES[python_type(c)],
                nullable=bool(c.nullable),
                description=column_description(es.table, c.name),
            )
            for c in visible_columns(es.table)
        ],
        filter_ops=list(FilterOp.__args__),
        row_count=int(count or 0),
        example_url=rt.url_pattern.replace("{entity_set}", es.name).replace(
            "{key}", "{" + es.key_column + "}"
        ),
    )


class QueryFilter(StrictModel):
    field: str = Field(min_length=1, max_length=60)
    """A field of the entity set (describe_entity_set lists them)."""
    op: FilterOp = "eq"
    """eq, ne, lt, le, gt, ge, in (value is a list), contains, startswith (strings)."""
    value: FilterScalar | Annotated[list[FilterScalar], MaxLen(MAX_IN_VALUES)] | None
    """Compared with the field; dates as YYYY-MM-DD; a list (up to 500 values) only with in;
    null only with eq / ne; text up to 200 characters."""


class OrderBy(StrictModel):
    field: str = Field(min_length=1, max_length=60)
    """A field of the entity set, or with aggregates a group_by field or an aggregate's name
    (count, sum_amount_acct, ...)."""
    descending: bool = False
    """Largest / latest first."""


class Aggregate(StrictModel):
    op: AggregateOp
    """count (rows; field optional: counts non-null values), sum, min or max."""
    field: str | None = Field(None, min_length=1, max_length=60)
    """The field to aggregate (numbers for sum; numbers, dates or text for min/max)."""


class QueryArgs(StrictModel):
    entity_set: EntitySetName
    """Entity set name, e.g. customer-transactions."""
    legal_entity: str | None = None
    """Company code; omit for all."""
    filters: list[QueryFilter] = Field(default_factory=list, max_length=20)
    """All must hold (AND)."""
    select: list[Annotated[str, MaxLen(60)]] | None = Field(None, max_length=60)
    """Fields to return (default all)."""
    group_by: list[Annotated[str, MaxLen(60)]] | None = Field(None, max_length=3)
    """1-3 fields to group by."""
    aggregates: list[Aggregate] | None = Field(None, max_length=10)
    """Aggregates per group (or over all rows)."""
    order_by: list[OrderBy] = Field(default_factory=list, max_length=5)
    """Sort keys, in order."""
    top: int = Field(50, ge=1, le=MAX_TOP)
    """Most rows or groups, at most 500."""
    skip: int = Field(0, ge=0, le=MAX_SKIP)
    """Rows or groups to skip."""
    cursor: str | None = Field(None, max_length=200)
    """next_cursor of the previous result (same query)."""
    count_only: bool = False
    """Return only total_count."""


class QueryResult(StrictModel):
    entity_set: str
    total_count: int
    """Rows (or groups, with group_by) matching the filters."""
    returned: int
    """Rows (or groups) in items."""
    offset: int = 0
    """Rows (or groups) before the first one returned."""
    has_more: bool
    """True when more rows follow (use next_cursor)."""
    truncated: bool = False
    """True when fewer than top rows came back to stay within the result budget."""
    next_cursor: str | None = None
    """Pass as cursor (same query) for the next rows; null on the last page."""
    items: list[dict[str, Any]]
    """Rows with the selected fields and their url; with aggregates, one item per group: the
    group fields and the aggregates."""


def _column(table, es: EntitySet, name: str):
    if name in table.c and name != "id":
        return table.c[name]
    names = [c.name for c in visible_columns(es.table)]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise ToolError(f"unknown field {name!r} in {es.name}; {hint}fields: {', '.join(names)}")


def _coerce(column, value: Any, field: str):
    kind = python_type(column)
    if value is None:
        return None
    try:
        if kind is dt.date:
            if isinstance(value, dt.date):
                return value
            parsed = dt.date.fromisoformat(str(value))
            if not MIN_DATE <= parsed <= MAX_DATE:
                raise ValueError(value)
            return parsed
        if kind is bool:
            if isinstance(value, str):
                if value.lower() not in ("true", "false"):
                    raise ValueError(value)
                return value.lower() == "true"
            return bool(value)
        if kind in (float, int):
            number = kind(value)
            if not -MAX_NUMBER <= number <= MAX_NUMBER:
                raise ValueError(value)
            return number
        return str(value)
    except (TypeError, ValueError, OverflowError):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise ToolError(
            f"filter on {field!r}: {shown} is not a valid {_TYPE_NAMES[kind]}"
            + (f" from {MIN_DATE} to {MAX_DATE}" if kind is dt.date else "")
        ) from None


def _condition(column, flt: QueryFilter):
    op = flt.op
    if op == "in":
        if not isinstance(flt.value, list) or not flt.value:
            raise ToolError(f"filter on {flt.field!r}: op 'in' needs a non-empty list value")
        return column.in_([_coerce(column, v, flt.field) for v in flt.value])
    if isinstance(flt.value, list):
        raise ToolError(f"filter on {flt.field!r}: a list value needs op 'in'")
    value = _coerce(column, flt.value, flt.field)
    if value is None:
        if op == "eq":
            return column.is_(None)
        if op == "ne":
            return column.is_not(None)
        raise ToolError(f"filter on {flt.field!r}: null works only with eq or ne")
    if isinstance(value, bool):
        if op not in ("eq", "ne"):
            raise ToolError(f"filter on {flt.field!r}: true/false works only with eq or ne")
        return column.is_(value) if op == "eq" else column.is_not(value)
    if op in ("contains", "startswith"):
        if python_type(column) is not str:
            raise ToolError(f"filter on {flt.field!r}: {op} works on text fields only")
        pattern = str(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{pattern}%" if op == "contains" else f"{pattern}%"
        return func.lower(column).like(pattern.lower(), escape="\\")
    return {
        "eq": column == value,
        "ne": column != value,
        "lt": column < value,
        "le": column <= value,
        "gt": column > value,
        "ge": column >= value,
    }[op]


def _query_offset(args: QueryArgs) -> int:
    if args.cursor is None:
        return args.skip
    paging = PageArgs(page_size=args.top, cursor=args.cursor)
    return cursor_offset(paging, fingerprint_of=args)


@erp_tool("generic", QueryArgs)
def query_entity_set(rt: ErpRuntime, args: QueryArgs) -> QueryResult:
    """Read or aggregate rows of one entity set: filters [{field, op, value}] (AND), select,
    order_by, top, skip or cursor; group_by with aggregates [{op, field}] (count, sum, min,
    max), results named op_field, e.g. sum_amount_acct. Fields as describe_entity_set lists
    them; no SQL."""
    es = _entity_set(args.entity_set)
    table = es.table.__table__
    le = rt.check_legal_entity(args.legal_entity)
    conditions = [table.c.legal_entity == le] if le and "legal_entity" in table.c else []
    conditions += [_condition(_column(table, es, f.field), f) for f in args.filters]
    offset = _query_offset(args)
    if args.group_by or args.aggregates:
        return _aggregate(rt, es, table, conditions, args, offset)
    order = [
        _column(table, es, o.field).desc() if o.descending else _column(table, es, o.field)
        for o in args.order_by
    ]
    tie_break = [table.c.legal_entity, table.c[es.key_column]]
    if args.filters:
        # With filters, sort the (usually small) filtered set rather than walking the key index:
        # an expression cannot use that index, so SQLite picks the index that serves the filters.
        tie_break = [func.coalesce(c, c) for c in tie_break]
    order += tie_break
    selected = None
    if args.select:
        selected = [_column(table, es, name).name for name in args.select]
    with rt.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(table).where(*conditions)).scalar()
        rows = (
            []
            if args.count_only
            else conn.execute(
                select(table).where(*conditions).order_by(*order).limit(args.top).offset(offset)
            ).all()
        )
    items = []
    for row in rows:
        record = to_record(rt, es.table, row).model_dump(mode="json")
        if selected:
            record = {k: record[k] for k in [*selected, "url"]}
        items.append(record)
    return _result(es, args, offset, items, int(total or 0))


def _result(
    es: EntitySet, args: QueryArgs, offset: int, items: list[dict], total: int
) -> QueryResult:
    has_more = not args.count_only and offset + len(items) < total
    return QueryResult(
        entity_set=es.name,
        total_count=total,
        returned=len(items),
        offset=offset,
        has_more=has_more,
        next_cursor=encode_cursor(args, offset + len(items)) if has_more else None,
        items=items,
    )


_GROUPS = "_groups"
"""Label of the number of groups read with an aggregate page (no field starts with _)."""


def _aggregate(rt, es: EntitySet, table, conditions, args: QueryArgs, offset: int) -> QueryResult:
    keys = [_column(table, es, name) for name in args.group_by or []]
    measures = []
    for agg in args.aggregates or [Aggregate(op="count")]:
        if agg.field is None:
            if agg.op != "count":
                raise ToolError(f"aggregates: {agg.op} needs a field")
            measures.append(func.count().label("count"))
            continue
        column = _column(table, es, agg.field)
        if agg.op == "sum" and python_type(column) not in (float, int):
            raise ToolError(f"aggregates: sum of {agg.field!r} needs a number field")
        expression = {"count": func.count, "sum": func.sum, "min": func.min, "max": func.max}
        measures.append(expression[agg.op](column).label(f"{agg.op}_{agg.field}"))
    names = [k.name for k in keys] + [m.name for m in measures]
    if len(set(names)) != len(names):
        raise ToolError("aggregates: each aggregate and group field may appear only once")
    grouped = select(*keys, *measures).where(*conditions)
    if keys:
        grouped = grouped.group_by(*keys)
    sub = grouped.subquery()
    order = []
    for o in args.order_by:
        if o.field not in sub.c:
            raise ToolError(
                f"order_by: {o.field!r} is neither a group_by field nor an aggregate; "
                f"use one of {', '.join(names)}"
            )
        order.append(sub.c[o.field].desc() if o.descending else sub.c[o.field])
    order += [sub.c[k.name] for k in keys]
    summary = _summary_plan(rt, es, table, args, keys, measures)
    if summary is not None:
        return _summary_aggregate(rt, es, args, offset, summary, measures)
    with rt.engine.connect() as conn:
        rows = []
        if not args.count_only:
            # The number of groups comes with the page (one pass over the rows, not two).
            page = select(sub, func.count().over().label(_GROUPS)).order_by(*order)
            rows = conn.execute(page.limit(args.top).offset(offset)).all()
        if rows:
            total = rows[0]._mapping[_GROUPS]
        else:  # count_only, or an offset past the last group
            total = conn.execute(select(func.count()).select_from(sub)).scalar() if keys else 1
    return _result(es, args, offset, _aggregate_items(rows, measures), int(total or 0))


def _aggregate_items(rows, measures) -> list[dict]:
    money_columns = {
        m.name for m in measures if m.name != "count" and not m.name.startswith("count_")
    }
    items = []
    for row in rows:
        item = {}
        for name, value in row._mapping.items():
            if name == _GROUPS:
                continue
            value = plain_value(value)
            if name in money_columns and isinstance(value, float):
                value = round(value, 6)
            item[name] = value.isoformat() if isinstance(value, dt.date) else value
        items.append(item)
    return items


# -- the ledger summaries --------------------------------------------------------------------------

_SUMMARY_LEVELS = {"customer-transactions": "customer", "vendor-transactions": "vendor"}
"""The entity sets with ledger summaries, and their party type."""
_SUMMED = ("amount_cur", "amount_acct", "open_amount_cur", "open_amount_acct")
"""Money columns the ledger summaries sum (in cents)."""


@dataclass(frozen=True)
class _SummaryPlan:
    table: Any
    """The summary table whose key covers every field the query names."""
    where: list
    keys: list
    """The group fields, as summary columns labelled with their field names."""
    columns: dict
    """Field name -> summary column."""
    one_row_per_group: bool
    """Each summary row is one group (the key is the group fields and fixed filters)."""


def _summary_plan(rt, es: EntitySet, table, args: QueryArgs, keys, measures):
    """How to answer an aggregate of a ledger from its summary tables, or None when they do not
    hold the answer exactly: every filter and group field must be a key column of a summary
    (legal_entity, txn_type, posted, currency; or legal_entity, txn_type and the party; or
    legal_entity, txn_type, posted, currency and txn_date or due_date, the per-day sums), every
    aggregate a row count or a sum of an amount, or a min / max of a key column. The first
    summary that keys every field is read; a date range alone is summed per series from the
    running sums (:func:`ledger_range`)."""
    party_type = _SUMMARY_LEVELS.get(es.name)
    if rt.summaries is None or party_type is None:
        return None
    account = f"{party_type}_account"
    by_type = {
        "legal_entity": "legal_entity",
        "txn_type": "txn_type",
        "posted": "posted",
        "currency": "currency",
    }
    levels = [
        (st.LEDGER_TYPE, by_type),
        (
            st.LEDGER_PARTY,
            {"legal_entity": "legal_entity", "txn_type": "txn_type", account: "account"},
        ),
    ]
    if rt.summaries.ledger_days:
        levels += [(table, {**by_type, day: day}) for day, table in st.LEDGER_DAY_TABLES.items()]
    named = {f.field for f in args.filters} | {k.name for k in keys}
    for agg in args.aggregates or []:
        if agg.op == "sum" and agg.field not in _SUMMED:
            return None
        if agg.op == "count" and agg.field is not None and table.c[agg.field].nullable:
            return None
        if agg.op in ("min", "max"):
            named.add(agg.field)
    found = next(((t, c) for t, c in levels if named <= set(c)), None)
    if found is None:
        return None
    summary, columns = found
    dates = None
    extremes = {a.field for a in args.aggregates or [] if a.op in ("min", "max")}
    per_day = {k.name for k in keys} | extremes
    day = next((d for d, t in st.LEDGER_DAY_TABLES.items() if t is summary), None)
    if day is not None and day not in per_day:
        dates = _date_range(args.filters, summary.c[day])
    if dates is not None:  # sums of a date range: per series of summary_ledger_type
        summary, columns = st.LEDGER_TYPE, by_type
    where = [summary.c.party_type == party_type]
    fixed = set()
    if args.legal_entity:
        where.append(summary.c.legal_entity == rt.check_legal_entity(args.legal_entity))
        fixed.add("legal_entity")
    for f in args.filters:
        if dates is not None and f.field == day:
            continue
        column = summary.c[columns[f.field]]
        where.append(_condition(column, f))
        if f.op == "eq" and f.value is not None and not isinstance(f.value, list):
            fixed.add(f.field)
    if dates is not None:
        summary = ledger_range(party_type, where, *dates, day=day)
        where = [summary.c.n > 0]
    return _SummaryPlan(
        summary,
        where,
        [summary.c[columns[k.name]].label(k.name) for k in keys],
        {name: summary.c[column] for name, column in columns.items()},
        bool(keys) and set(columns) <= fixed | {k.name for k in keys},
    )


_DATE_BOUNDS = {"eq": (0, 0), "ge": (0, None), "gt": (1, None), "le": (None, 0), "lt": (None, -1)}
"""Per filter op, the first and last day it leaves, in days from its value (None: no bound)."""


def _date_range(filters: list[QueryFilter], column) -> tuple[dt.date | None, dt.date | None] | None:
    """The first and last date the filters on date ``column`` leave (None: unbounded), or None
    when one of them leaves no single range (ne, in, null)."""
    first = last = None
    for f in filters:
        if f.field != column.name:
            continue
        if f.op not in _DATE_BOUNDS or f.value is None or isinstance(f.value, list):
            return None
        day = _coerce(column, f.value, f.field)
        low, high = _DATE_BOUNDS[f.op]
        if low is not None:
            first = max(d for d in (first, day + dt.timedelta(days=low)) if d is not None)
        if high is not None:
            last = min(d for d in (last, day + dt.timedelta(days=high)) if d is not None)
    return first, last


def _summary_aggregate(rt, es, args: QueryArgs, offset: int, plan: _SummaryPlan, measures):
    """The aggregate over the summary rows: counts are sums of ``n``, amounts sums of cents over
    100. When each summary row is one group the page is read in the order of the summary's index
    (no grouping, the number of groups counted apart)."""
    s = plan.table
    single = plan.one_row_per_group
    columns, order_of = [], {}
    for measure, agg in zip(measures, args.aggregates or [Aggregate(op="count")], strict=True):
        if agg.op == "count":
            value = s.c.n if single else func.coalesce(func.sum(s.c.n), 0)
            order_of[measure.name] = value
        elif agg.op == "sum":
            value = as_money(s.c[agg.field]) if single else amount_sum(s.c[agg.field])
            order_of[measure.name] = s.c[agg.field] if single else value
        else:
            column = plan.columns[agg.field]
            value = column if single else getattr(func, agg.op)(column)
            order_of[measure.name] = value
        columns.append(value.label(measure.name))
    for key in plan.keys:
        order_of[key.name] = key.element
    order = [order_of[o.field].desc() if o.descending else order_of[o.field]
             for o in args.order_by]  # fmt: skip
    order += [key.element for key in plan.keys]
    stmt = select(*plan.keys, *columns).where(*plan.where)
    if not single:
        stmt = stmt.group_by(*(key.element for key in plan.keys)) if plan.keys else stmt
    with rt.engine.connect() as conn:
        rows = []
        if not args.count_only:
            rows = conn.execute(stmt.order_by(*order).limit(args.top).offset(offset)).all()
        if not plan.keys:
            total = 1
        elif single:
            total = conn.execute(select(func.count()).select_from(s).where(*plan.where)).scalar()
        else:
            total = conn.execute(select(func.count()).select_from(stmt.subquery())).scalar()
    return _result(es, args, offset, _aggregate_items(rows, measures), int(total or 0))


class PingArgs(StrictModel):
    pass


class Pong(StrictModel):
    ok: bool
    today: dt.date


@erp_tool("bench", PingArgs, lookup=True)
def ping(rt: ErpRuntime, args: PingArgs) -> Pong:
    """No-op health check (benchmark floor): returns the ERP today without touching the database."""
    return Pong(ok=True, today=rt.today)
