"""The ERP MCP server on PostgreSQL answers exactly as on SQLite, and cannot write there either.

Every tool is called with the same arguments on the same snapshot in both databases (filters,
paging, past dates, groupings, rankings, the largest results, single records picked from the
data) and every structured result must be identical. The default tier uses a small ERP; the slow
tier a 10x one, which also checks the result budget on PostgreSQL.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from erp_mcp import build_server
from erp_mcp._runtime import ErpRuntime
from erp_mcp._tooling import RESULT_BUDGET, tools_for
from synthetic_erp import generate_erp
from tests.mcp_budget import largest_arguments

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(900)]

CALLS = [
    ("erp_info", {}),
    ("search_parties", {"query": "Wholesale", "limit": 5}),
    ("search_parties", {"query": "Forest Whole sale", "party_type": "customer"}),
    ("get_aging", {}),
    ("get_aging", {"group_by": "legal_entity"}),
    ("get_aging", {"group_by": "group", "party_type": "vendor", "as_of": "2025-12-31"}),
    ("get_aging", {"group_by": "currency", "sort_by": "key", "bucket_edges": [15, 45, 365]}),
    ("get_aging", {"sort_by": "overdue", "as_of": "2025-09-30", "aging_basis": "txn_date"}),
    # past days from the Fenwick tree of running totals, summary_open_tree (issue 40)
    ("get_aging", {"group_by": "legal_entity", "as_of": "2025-11-30"}),
    ("get_aging", {"group_by": "currency", "as_of": "2025-06-30", "party_type": "vendor"}),
    ("get_aging", {"group_by": "group", "as_of": "2026-02-01", "legal_entity": "USMF",
                   "aging_basis": "txn_date", "bucket_edges": [15, 120]}),
    ("get_aging", {"group_by": "legal_entity", "as_of": "2025-12-15", "currency": "EUR",
                   "group_id": "20", "party_type": "vendor"}),
    # a past day's parties from the per-party stretches of summary_party_history (issue 40)
    ("get_aging", {"as_of": "2025-10-31", "limit": 12}),
    ("get_aging", {"as_of": "2025-07-15", "legal_entity": "USMF", "party_type": "vendor",
                   "limit": 6}),
    ("get_aging", {"as_of": "2026-01-20", "sort_by": "key", "limit": 9, "group_id": "20"}),
    ("list_customer_transactions", {"status": "open", "page_size": 5, "sort_by": "amount"}),
    ("list_customer_transactions", {"page_size": 7, "page": 4, "sort_by": "account"}),
    ("list_vendor_transactions", {"overdue_as_of": "2026-02-01", "page_size": 5}),
    ("list_settlements", {"page_size": 5}),
    ("list_settlements", {"party_type": "vendor", "date_from": "2025-10-01", "page_size": 9}),
    ("list_disputes", {"status": "open"}),
    ("list_cash_discounts", {"expiring_within_days": 30}),
    ("list_cash_discounts", {"page_size": 5, "page": 3}),
    ("list_cash_discounts", {"state": "missed", "party_type": "vendor"}),
    ("rank_parties", {"measure": "invoiced", "date_from": "2025-01-01", "top_n": 3}),
    ("rank_parties", {"measure": "paid", "party_type": "vendor", "top_n": 3}),
    ("rank_parties", {"measure": "open", "ascending": True, "top_n": 3}),
    ("list_sales_orders", {"status": ["open"], "page_size": 5}),
    ("list_purchase_orders", {"status": ["received", "invoiced"], "page_size": 5}),
    ("list_vendor_invoices", {"status": ["pending_approval"], "page_size": 5}),
    ("list_vendor_invoices", {"match_status": "failed"}),
    ("list_payment_journals", {"source": "proposal", "page_size": 5}),
    ("get_vendor_spend", {"top_n": 3}),
    ("get_vendor_spend", {"fiscal_year": 2024, "top_n": 5}),
    ("list_reference_data", {"kind": "methods_of_payment"}),
    ("list_reference_data", {"kind": "exchange_rates", "from_currency": "EUR", "limit": 20}),
    ("list_collection_letters", {"level": 2}),
    ("list_collection_activities", {"status": ["open"], "page_size": 5}),
    ("list_collection_cases", {"page_size": 5}),
    ("list_collection_cases", {}),
    ("list_entity_sets", {}),
    ("describe_entity_set", {"entity_set": "customer-transactions"}),
    ("query_entity_set", {"entity_set": "customers", "filters": [
        {"field": "credit_hold", "op": "eq", "value": True},
        {"field": "name", "op": "contains", "value": "a"}], "top": 5}),
    ("query_entity_set", {"entity_set": "vendor-transactions", "group_by": ["legal_entity",
        "vendor_account"], "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"},
        {"op": "max", "field": "txn_date"}], "order_by": [{"field": "sum_amount_acct"}], "top": 5}),
    ("query_entity_set", {"entity_set": "customer-transactions", "group_by": ["legal_entity",
        "txn_type"], "aggregates": [{"op": "sum", "field": "amount_acct"}]}),
    # the summary paths (tests/test_mcp_summaries.py): summarised periods, today's open items
    ("rank_parties", {"measure": "invoiced", "date_from": "2025-01-01", "date_to": "2025-12-31"}),
    ("rank_parties", {"measure": "paid", "party_type": "vendor", "date_from": "2026-01-01",
        "date_to": "2026-12-31", "ascending": True, "top_n": 4}),
    ("rank_parties", {"measure": "paid", "legal_entity": "GBSI", "date_from": "2025-04-01",
        "date_to": "2026-03-31"}),
    ("get_vendor_spend", {"legal_entity": "USMF", "top_n": 10}),
    ("get_aging", {"legal_entity": "USMF", "group_by": "legal_entity", "as_of": "2026-05-01"}),
    ("get_aging", {"party_type": "vendor", "group_by": "group", "legal_entity": "USMF",
        "aging_basis": "txn_date"}),
    ("query_entity_set", {"entity_set": "customer-transactions", "legal_entity": "USMF",
        "filters": [{"field": "txn_type", "op": "eq", "value": "sales_invoice"}],
        "group_by": ["customer_account"], "aggregates": [{"op": "sum", "field": "amount_acct"}],
        "order_by": [{"field": "sum_amount_acct", "descending": True}], "top": 10}),
    ("query_entity_set", {"entity_set": "vendor-transactions", "filters": [{"field": "posted",
        "op": "eq", "value": True}], "group_by": ["currency", "txn_type"], "aggregates": [
        {"op": "count", "field": "voucher"}, {"op": "sum", "field": "open_amount_cur"},
        {"op": "max", "field": "legal_entity"}], "order_by": [{"field": "count_voucher"}]}),
    # transaction dates: a range from the running sums per day, days and lists from the day rows
    ("query_entity_set", {"entity_set": "customer-transactions", "group_by": ["legal_entity"],
        "filters": [{"field": "txn_date", "op": "ge", "value": "2025-10-01"}],
        "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"}]}),
    ("query_entity_set", {"entity_set": "vendor-transactions", "group_by": ["txn_date",
        "txn_type"], "filters": [{"field": "txn_date", "op": "gt", "value": "2025-06-30"},
        {"field": "txn_date", "op": "lt", "value": "2025-08-01"}], "aggregates": [
        {"op": "sum", "field": "amount_cur"}, {"op": "count"}], "top": 40}),
    ("query_entity_set", {"entity_set": "customer-transactions", "filters": [{"field": "txn_date",
        "op": "in", "value": ["2025-05-05", "2025-12-01"]}, {"field": "posted", "op": "eq",
        "value": True}], "group_by": ["currency"], "aggregates": [{"op": "sum",
        "field": "open_amount_acct"}, {"op": "min", "field": "txn_date"}]}),
    ("query_entity_set", {"entity_set": "vendor-transactions", "group_by": ["legal_entity"],
        "filters": [{"field": "due_date", "op": "gt", "value": "2026-03-02"}],
        "aggregates": [{"op": "sum", "field": "open_amount_acct"}, {"op": "count"}]}),
    ("query_entity_set", {"entity_set": "customer-transactions", "group_by": ["txn_type"],
        "filters": [{"field": "due_date", "op": "eq", "value": None}],
        "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"}]}),
]  # fmt: skip


def record_calls(sql: sqlite3.Connection) -> list[tuple[str, dict]]:
    """Calls about single records and parties, picked from the data."""

    def one(query: str) -> tuple:
        return sql.execute(query).fetchone()

    cle, cust = one(
        "select legal_entity, customer_account from customer_transaction "
        "where open_amount_cur != 0 group by 1, 2 order by count(*) desc, 2 limit 1"
    )
    vle, vend = one(
        "select legal_entity, vendor_account from vendor_transaction "
        "group by 1, 2 order by count(*) desc, 2 limit 1"
    )
    group = one(
        f"select group_id from customer where legal_entity = '{cle}' and account = '{cust}'"
    )
    agent = one(
        "select legal_entity, collections_agent_id from customer where collections_agent_id "
        "is not null group by 1, 2 order by count(*) desc, 2 limit 1"
    )
    pool = one(
        "select legal_entity, collections_pool_id from customer where collections_pool_id "
        "is not null group by 1, 2 order by count(*) desc, 2 limit 1"
    )
    (due,) = one(
        "select due_date from collection_activity where status = 'open' order by activity_id "
        "limit 1"
    )
    order = one("select legal_entity, sales_id from sales_order order by sales_id limit 1")
    po = one("select legal_entity, po_number from purchase_order order by po_number limit 1")
    invoice = one(
        "select legal_entity, invoice_id from vendor_invoice where po_number is not null "
        "order by invoice_id limit 1"
    )
    journal = one("select legal_entity, journal_id from payment_journal order by journal_id")
    voucher = one(
        "select legal_entity, debit_voucher from customer_settlement order by settlement_id"
    )
    case = one(
        "select legal_entity, case_id from collection_activity where case_id is not null "
        "order by activity_id"
    )
    party = {"legal_entity": cle, "account": cust}
    vendor = {"legal_entity": vle, "account": vend}
    return [
        ("get_customer", party),
        ("get_vendor", vendor),
        ("get_aging", {**party, "include_transactions": True}),
        ("get_aging", {**party, "include_transactions": True, "as_of": "2025-12-01"}),
        ("get_aging", {**party, "group_id": group[0], "include_transactions": True}),
        ("get_aging", {"legal_entity": cle, "group_id": group[0], "group_by": "group"}),
        ("list_customer_transactions", party),
        ("list_vendor_transactions", vendor),
        ("list_settlements", party),
        ("list_settlements", {"legal_entity": voucher[0], "voucher": voucher[1]}),
        ("list_disputes", party),
        ("list_cash_discounts", {**vendor, "party_type": "vendor"}),
        ("list_sales_orders", party),
        ("get_sales_order", {"legal_entity": order[0], "sales_id": order[1]}),
        ("list_purchase_orders", vendor),
        ("get_purchase_order", {"legal_entity": po[0], "po_number": po[1]}),
        ("list_vendor_invoices", vendor),
        ("get_vendor_invoice", {"legal_entity": invoice[0], "invoice_id": invoice[1]}),
        ("list_payment_journals", vendor),
        ("get_payment_journal", {"legal_entity": journal[0], "journal_id": journal[1]}),
        ("get_vendor_spend", vendor),
        ("list_collection_letters", party),
        ("list_collection_activities", {"legal_entity": case[0], "case_id": case[1]}),
        ("list_collection_cases", party),
        ("get_collections_worklist", {"legal_entity": agent[0], "agent_id": agent[1]}),
        ("get_collections_worklist", {"agent_id": agent[1], "as_of": due}),
        ("get_collections_worklist", {"agent_id": agent[1], "as_of": "2026-03-20"}),
        ("get_collections_worklist", {"pool_id": pool[1], "as_of": "2026-04-15", "min_overdue": 1}),
        ("get_collections_worklist", {"legal_entity": pool[0], "pool_id": pool[1], "as_of": due}),
        (
            "query_entity_set",
            {
                "entity_set": "customer-transactions",
                "legal_entity": cle,
                "filters": [{"field": "customer_account", "op": "eq", "value": cust}],
                "order_by": [{"field": "amount_acct", "descending": True}],
            },
        ),
    ]


RECORD_QUERIES = (
    ("customers", "select legal_entity, account from customer order by id"),
    ("vendors", "select legal_entity, account from vendor order by id"),
    ("customer-transactions", "select legal_entity, voucher from customer_transaction order by id"),
    ("purchase-orders", "select legal_entity, po_number from purchase_order order by id"),
)


def parity_calls(sqlite_path: Path) -> tuple[list[tuple[str, dict]], list[str]]:
    """The tool calls (every tool at least once) and the record resources to compare."""
    sql = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    try:
        largest = [(tool, args) for tool, many in largest_arguments(sql).items() for args in many]
        calls = CALLS + record_calls(sql) + largest
        records = [
            f"erp://{le}/{entity_set}/{key}"
            for entity_set, query in RECORD_QUERIES
            for le, key in [sql.execute(query).fetchone()]
        ]
    finally:
        sql.close()
    tools = {tool.name for tool in tools_for("all")}
    assert {name for name, _ in calls} == tools, tools ^ {name for name, _ in calls}
    return calls, records


@pytest.fixture
def fresh_pg_db(pg_url: str) -> Iterator[str]:
    yield from _fresh_pg_db(pg_url, f"lb_mcp_test_{os.getpid()}")


def _fresh_pg_db(pg_url: str, name: str) -> Iterator[str]:
    import psycopg

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


async def _answers(db_url: str, calls: list[tuple[str, dict]], records: list[str]) -> list:
    answers = []
    async with Client(build_server(db_url, public_url="http://erp.test")) as client:
        for name, args in calls:
            result = await client.call_tool(name, args, raise_on_error=False)
            assert not result.is_error, (name, args, result.content[0].text)
            assert len(result.content[0].text) <= RESULT_BUDGET, (name, args)
            answers.append(result.structured_content)
        for uri in records:
            answers.append((await client.read_resource(uri))[0].text)
    return answers


async def _assert_parity(sqlite_url: str, pg_url: str, sqlite_path: Path) -> None:
    calls, records = parity_calls(sqlite_path)
    on_sqlite = await _answers(sqlite_url, calls, records)
    on_pg = await _answers(pg_url, calls, records)
    labels = [f"{name} {args}" for name, args in calls] + records
    for label, want, got in zip(labels, on_sqlite, on_pg, strict=True):
        assert got == want, label


async def test_every_tool_answers_the_same_on_postgres(fresh_pg_db: str, tmp_path: Path) -> None:
    path = tmp_path / "erp.db"
    generate_erp(f"sqlite:///{path}", customers=150, vendors=150, seed=5)
    generate_erp(fresh_pg_db, customers=150, vendors=150, seed=5)
    await _assert_parity(f"sqlite:///{path}", fresh_pg_db, path)


@pytest.mark.slow
async def test_every_tool_answers_the_same_on_postgres_at_10x(
    pg_url: str, erp_10x_db_url: str
) -> None:
    path = Path(erp_10x_db_url.removeprefix("sqlite:///"))
    for db in _fresh_pg_db(pg_url, f"lb_mcp_test_10x_{os.getpid()}"):
        generate_erp(db, seed=42, scale=10)
        await _assert_parity(erp_10x_db_url, db, path)


def test_postgres_connection_is_read_only(fresh_pg_db: str) -> None:
    generate_erp(fresh_pg_db, customers=20, vendors=20, seed=1)
    runtime = ErpRuntime.open(fresh_pg_db, None)
    try:
        with pytest.raises(DBAPIError, match="read-only"), runtime.engine.begin() as conn:
            conn.execute(text("UPDATE customer SET credit_limit = 0"))
    finally:
        runtime.close()
