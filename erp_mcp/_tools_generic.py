"""Generic data tools in the style of Dynamics' data tools: list, describe and query entity sets.

Queries are built from validated structured filters over the catalogue's tables: field names are
checked against the table's columns and values are bound parameters, so there is no SQL text
anywhere.
"""

from __future__ import annotations

import datetime as dt
import difflib
from typing import Any, Literal

from fastmcp.exceptions import ToolError
from pydantic import Field
from sqlalchemy import func, select

from erp_mcp._common import to_record
from erp_mcp._records import StrictModel, column_description, python_type, visible_columns
from erp_mcp._runtime import ErpRuntime
from erp_mcp._tooling import erp_tool
from synthetic_erp._catalog import ENTITY_SETS, EntitySet

MAX_TOP = 500
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


@erp_tool("generic", ListEntitySetsArgs)
def list_entity_sets(rt: ErpRuntime, args: ListEntitySetsArgs) -> EntitySetList:
    """The ERP's entity sets (customers, vendors, customer-transactions, sales-orders, ...) with
    what each holds and its key field. Then describe_entity_set for its fields and query_entity_set
    to read rows."""
    return EntitySetList(
        entity_sets=[
            EntitySetInfo(
                name=es.name, title=es.title, description=es.description, key_field=es.key_column
            )
            for es in ENTITY_SETS
        ]
    )


class DescribeArgs(StrictModel):
    entity_set: str = Field(min_length=1, max_length=60)
    """Entity set name from list_entity_sets, e.g. customer-transactions."""


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


@erp_tool("generic", DescribeArgs)
def describe_entity_set(rt: ErpRuntime, args: DescribeArgs) -> EntitySetDescription:
    """The fields of one entity set (name, type, nullability, meaning), its key, its row count and
    the filter operators query_entity_set accepts."""
    es = _entity_set(args.entity_set)
    table = es.table.__table__
    with rt.engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(table)).scalar()
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
        example_url=f"{rt.base_url}/erp/{{legal_entity}}/{es.name}/{{{es.key_column}}}",
    )


class QueryFilter(StrictModel):
    field: str = Field(min_length=1, max_length=60)
    """A field of the entity set (describe_entity_set lists them)."""
    op: FilterOp = "eq"
    """eq, ne, lt, le, gt, ge, in (value is a list), contains, startswith (strings)."""
    value: str | float | int | bool | list[str | float | int | bool] | None
    """Compared with the field; dates as YYYY-MM-DD; null only with eq / ne."""


class OrderBy(StrictModel):
    field: str = Field(min_length=1, max_length=60)
    descending: bool = False


class QueryArgs(StrictModel):
    entity_set: str = Field(min_length=1, max_length=60)
    """Entity set name from list_entity_sets."""
    legal_entity: str | None = None
    """Company code; omit for all legal entities."""
    filters: list[QueryFilter] = Field(default_factory=list, max_length=20)
    """All must hold (AND)."""
    select: list[str] | None = Field(None, max_length=60)
    """Fields to return (default all); url is always included."""
    order_by: list[OrderBy] = Field(default_factory=list, max_length=5)
    top: int = Field(50, ge=1, le=MAX_TOP)
    """Most rows to return (max 500)."""
    skip: int = Field(0, ge=0)
    """Rows to skip, for paging."""
    count_only: bool = False
    """Return only total_count."""


class QueryResult(StrictModel):
    entity_set: str
    total_count: int
    """Rows matching the filters."""
    returned: int
    has_more: bool
    items: list[dict[str, Any]]
    """Rows with the selected fields and their url."""


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
            return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
        if kind is bool:
            if isinstance(value, str):
                if value.lower() not in ("true", "false"):
                    raise ValueError(value)
                return value.lower() == "true"
            return bool(value)
        if kind in (float, int):
            return kind(value)
        return str(value)
    except (TypeError, ValueError):
        raise ToolError(
            f"filter on {field!r}: {value!r} is not a valid {_TYPE_NAMES[kind]}"
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


@erp_tool("generic", QueryArgs)
def query_entity_set(rt: ErpRuntime, args: QueryArgs) -> QueryResult:
    """Read rows of one entity set with structured filters ([{field, op, value}], AND-ed; ops eq,
    ne, lt, le, gt, ge, in, contains, startswith), selected fields, order_by, top (max 500) and
    skip. Every row carries its record url. Fields are validated against the entity set (see
    describe_entity_set); there is no free-form SQL."""
    es = _entity_set(args.entity_set)
    table = es.table.__table__
    le = rt.check_legal_entity(args.legal_entity)
    conditions = [table.c.legal_entity == le] if le and "legal_entity" in table.c else []
    conditions += [_condition(_column(table, es, f.field), f) for f in args.filters]
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
                select(table).where(*conditions).order_by(*order).limit(args.top).offset(args.skip)
            ).all()
        )
    items = []
    for row in rows:
        record = to_record(rt, es.table, row).model_dump(mode="json")
        if selected:
            record = {k: record[k] for k in [*selected, "url"]}
        items.append(record)
    total = int(total or 0)
    return QueryResult(
        entity_set=es.name,
        total_count=total,
        returned=len(items),
        has_more=args.skip + len(items) < total,
        items=items,
    )


class PingArgs(StrictModel):
    pass


class Pong(StrictModel):
    ok: bool
    today: dt.date


@erp_tool("bench", PingArgs)
def ping(rt: ErpRuntime, args: PingArgs) -> Pong:
    """No-op health check (benchmark floor): returns the ERP today without touching the database."""
    return Pong(ok=True, today=rt.today)
