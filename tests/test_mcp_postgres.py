"""The ERP MCP server on PostgreSQL answers exactly as on SQLite, and cannot write there either."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from erp_mcp import build_server
from erp_mcp._runtime import ErpRuntime
from synthetic_erp import generate_erp

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]

CALLS = [
    ("erp_info", {}),
    ("search_parties", {"query": "Wholesale", "limit": 5}),
    ("get_aging", {"group_by": "legal_entity"}),
    ("get_aging", {"group_by": "group", "party_type": "vendor", "as_of": "2025-12-31"}),
    ("list_customer_transactions", {"status": "open", "page_size": 5, "sort_by": "amount"}),
    ("list_vendor_transactions", {"overdue_as_of": "2026-02-01", "page_size": 5}),
    ("list_settlements", {"page_size": 5}),
    ("list_disputes", {"status": "open"}),
    ("list_cash_discounts", {"expiring_within_days": 30}),
    ("list_cash_discounts", {"page_size": 5, "page": 3}),
    ("rank_parties", {"measure": "invoiced", "date_from": "2025-01-01", "top_n": 3}),
    ("rank_parties", {"measure": "paid", "party_type": "vendor", "top_n": 3}),
    ("rank_parties", {"measure": "open", "ascending": True, "top_n": 3}),
    ("list_sales_orders", {"status": ["open"], "page_size": 5}),
    ("list_vendor_invoices", {"status": ["pending_approval"], "page_size": 5}),
    ("list_payment_journals", {"source": "proposal", "page_size": 5}),
    ("get_vendor_spend", {"top_n": 3}),
    ("list_reference_data", {"kind": "methods_of_payment"}),
    ("list_collection_activities", {"status": ["open"], "page_size": 5}),
    ("list_collection_cases", {"page_size": 5}),
    ("query_entity_set", {"entity_set": "customers", "filters": [
        {"field": "credit_hold", "op": "eq", "value": True},
        {"field": "name", "op": "contains", "value": "a"}], "top": 5}),
    ("query_entity_set", {"entity_set": "vendor-transactions", "group_by": ["legal_entity",
        "vendor_account"], "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"},
        {"op": "max", "field": "txn_date"}], "order_by": [{"field": "sum_amount_acct"}], "top": 5}),
]  # fmt: skip


@pytest.fixture
def fresh_pg_db(pg_url: str) -> Iterator[str]:
    import psycopg

    name = f"lb_mcp_test_{os.getpid()}"
    admin = make_url(pg_url).set(drivername="postgresql")
    conninfo = admin.render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _answers(db_url: str) -> list:
    answers = []
    async with Client(build_server(db_url, public_url="http://erp.test")) as client:
        for name, args in CALLS:
            result = await client.call_tool(name, args, raise_on_error=False)
            assert not result.is_error, (name, result.content[0].text)
            answers.append(result.structured_content)
    return answers


async def test_postgres_answers_equal_sqlite(fresh_pg_db: str, tmp_path: Path) -> None:
    sqlite_url = f"sqlite:///{tmp_path / 'erp.db'}"
    generate_erp(sqlite_url, customers=150, vendors=150, seed=5)
    generate_erp(fresh_pg_db, customers=150, vendors=150, seed=5)
    on_sqlite = await _answers(sqlite_url)
    on_pg = await _answers(fresh_pg_db)
    for (name, _), want, got in zip(CALLS, on_sqlite, on_pg, strict=True):
        assert got == want, name


def test_postgres_connection_is_read_only(fresh_pg_db: str) -> None:
    generate_erp(fresh_pg_db, customers=20, vendors=20, seed=1)
    runtime = ErpRuntime.open(fresh_pg_db, None)
    try:
        with pytest.raises(DBAPIError, match="read-only"), runtime.engine.begin() as conn:
            conn.execute(text("UPDATE customer SET credit_limit = 0"))
    finally:
        runtime.close()
