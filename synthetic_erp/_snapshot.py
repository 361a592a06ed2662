"""Snapshot hash and statistics of an ERP database.

The hash is the same on SQLite and PostgreSQL for the same content: tables in a fixed order,
surrogate ``id`` columns left out, rows ordered by their natural key (byte order for text), and
values normalised (money as 2-decimal strings, rates with 6 decimals, dates ISO, booleans 0/1, NULL
as ``\\N``). The ``snapshot_hash`` row of ``erp_meta`` is itself excluded.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Boolean, Connection, Date, Engine, Numeric, String, Table, func, select
from sqlalchemy import UniqueConstraint as _Unique

from synthetic_erp._db import open_engine, read_meta
from synthetic_erp._schema import ALL_TABLES

HASH_EXCLUDED_META = ("snapshot_hash",)
STATS_TABLES = {
    "legal_entities": "legal_entity",
    "customers": "customer",
    "vendors": "vendor",
    "ar_transactions": "customer_transaction",
    "ap_transactions": "vendor_transaction",
    "customer_settlements": "customer_settlement",
    "vendor_settlements": "vendor_settlement",
    "disputes": "customer_dispute",
    "sales_orders": "sales_order",
    "sales_order_lines": "sales_order_line",
    "purchase_orders": "purchase_order",
    "purchase_order_lines": "purchase_order_line",
    "product_receipts": "product_receipt",
    "vendor_invoices": "vendor_invoice",
    "collection_letters": "collection_letter",
    "collection_cases": "collection_case",
    "collection_activities": "collection_activity",
    "payment_journals": "payment_journal",
    "payment_journal_lines": "payment_journal_line",
    "exchange_rates": "exchange_rate",
}


def natural_key(table: Table) -> list[str]:
    """Columns that order a table's rows: its unique constraint, else its primary key."""
    for constraint in table.constraints:
        if isinstance(constraint, _Unique):
            return [column.name for column in constraint.columns]
    return [column.name for column in table.primary_key.columns]


def _text_expression(column, postgres: bool) -> str:
    """SQL rendering ``column`` as its normalised text (``\\N`` for NULL), the same on both
    dialects, so that rows arrive as ready strings."""
    name = f'"{column.name}"'
    kind = column.type
    if isinstance(kind, Numeric):
        scale = kind.scale if kind.scale is not None else 2
        text = (
            f"CAST(ROUND({name}, {scale}) AS TEXT)" if postgres else f"printf('%.{scale}f', {name})"
        )
        return f"CASE WHEN {name} IS NULL THEN '\\N' ELSE {text} END"
    if isinstance(kind, Boolean):
        return f"CASE WHEN {name} IS NULL THEN '\\N' WHEN {name} THEN '1' ELSE '0' END"
    if isinstance(kind, Date):
        text = f"to_char({name}, 'YYYY-MM-DD')" if postgres else name
    elif isinstance(kind, String):
        text = name
    else:
        text = f"CAST({name} AS TEXT)"
    return f"COALESCE({text}, '\\N')"


def _table_digest(conn: Connection, table: Table, digest) -> None:
    columns = [c for c in table.columns if c.name != "id"]
    postgres = conn.dialect.name == "postgresql"
    separator = " || chr(31) || " if postgres else " || char(31) || "
    line = separator.join(_text_expression(c, postgres) for c in columns)
    order = []
    for name in natural_key(table):
        collate = ' COLLATE "C"' if postgres and isinstance(table.c[name].type, String) else ""
        order.append(f'"{name}"{collate}')
    where = ""
    if table.name == "erp_meta":
        excluded = ", ".join(f"'{key}'" for key in HASH_EXCLUDED_META)
        where = f' WHERE "key" NOT IN ({excluded})'
    sql = f'SELECT {line} FROM "{table.name}"{where} ORDER BY {", ".join(order)}'
    digest.update(f"#{table.name}:{','.join(c.name for c in columns)}\n".encode())
    result = conn.exec_driver_sql(sql)
    while batch := result.fetchmany(20000):
        digest.update(("\n".join([row[0] for row in batch]) + "\n").encode())


def hash_connection(conn: Connection) -> str:
    digest = hashlib.sha256()
    for model in ALL_TABLES:
        _table_digest(conn, model.__table__, digest)
    return digest.hexdigest()


def snapshot_hash(engine: Engine | Connection) -> str:
    """SHA-256 of the database content, identical on SQLite and PostgreSQL for the same data."""
    if isinstance(engine, Connection):
        return hash_connection(engine)
    with engine.connect() as conn:
        return hash_connection(conn)


def erp_stats(db_url: str) -> dict:
    """Row counts and snapshot facts of the ERP at ``db_url`` (read-only)."""
    engine = open_engine(db_url, read_only=True)
    try:
        meta = read_meta(engine)
        stats: dict[str, object] = {}
        tables = {model.__table__.name: model.__table__ for model in ALL_TABLES}
        with engine.connect() as conn:
            for key, name in STATS_TABLES.items():
                stats[key] = conn.execute(
                    select(func.count()).select_from(tables[name])
                ).scalar_one()
            stored = meta.get("snapshot_hash") or hash_connection(conn)
        stats["as_of"] = meta.get("as_of")
        stats["snapshot_hash"] = stored
        for key in ("seed", "scale", "source", "generator_version", "faker_version"):
            stats[key] = meta.get(key)
        return stats
    finally:
        engine.dispose()
