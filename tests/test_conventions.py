"""Each convention of docs/conventions.md, checked where it matters: the answer key (the oracle in
synthetic_erp.scenarios) and the MCP tool an agent would use agree on real ERP data.

The tools are called through the in-memory fastmcp Client; the keys are computed by the scenario
modules. Samples deliberately include the awkward cases (parties trading in a currency other than
the accounting currency, vendors with credit or debit notes, customers with return orders).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest
from fastmcp import Client
from sqlalchemy import create_engine

from erp_mcp import build_server
from synthetic_erp.scenarios import OracleContext, answer_question

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sql(erp_db_url: str):
    connection = sqlite3.connect(
        f"file:{Path(erp_db_url.removeprefix('sqlite:///'))}?mode=ro", uri=True
    )
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def oracle(erp_db_url: str):
    engine = create_engine(erp_db_url)
    ctx = OracleContext.open(engine)
    yield ctx
    ctx.close()
    engine.dispose()


@pytest.fixture(scope="module")
def server(erp_db_url: str):
    return build_server(erp_db_url, public_url="http://erp.test")


async def call(server, name: str, **args) -> dict:
    async with Client(server) as client:
        result = await client.call_tool(name, args)
    return result.structured_content


def fact(oracle: OracleContext, template: str, params: dict, name: str) -> float:
    answer = answer_question(oracle, template, params)
    return next(f.value for f in answer.facts if f.field == name)


def customers_in_foreign_currency(sql, limit: int = 6) -> list[tuple[str, str]]:
    return sql.execute(
        "select c.legal_entity, c.account from customer c join legal_entity le "
        "on le.code = c.legal_entity where c.currency != le.accounting_currency "
        "and exists (select 1 from customer_transaction t where t.legal_entity = c.legal_entity "
        "and t.customer_account = c.account and t.open_amount_cur != 0) "
        f"order by c.account limit {limit}"
    ).fetchall()


async def test_today_and_default_legal_entity_come_from_erp_info(server, oracle) -> None:
    info = await call(server, "erp_info")
    assert info["today"] == oracle.today.isoformat()
    assert info["default_legal_entity"] == oracle.default_legal_entity == "USMF"


async def test_credit_limits_compare_with_the_balance_in_accounting_currency(
    server, oracle, sql
) -> None:
    sample = customers_in_foreign_currency(sql)
    assert sample, "the ERP should have customers trading in a foreign currency"
    for le, account in sample:
        params = {"legal_entity": le, "account": account}
        tool = await call(server, "get_customer", account=account, legal_entity=le)
        key = fact(oracle, "credit_limit", params, "available_credit")
        assert key == pytest.approx(tool["credit_available_acct"], abs=0.011), account
        assert fact(oracle, "credit_limit", params, "balance") == pytest.approx(
            tool["balance"]["balance_acct"], abs=0.011
        )


async def test_open_balances_and_aging_buckets_match_get_aging(server, oracle, sql) -> None:
    for le, account in customers_in_foreign_currency(sql, 4):
        params = {"legal_entity": le, "account": account}
        answer = answer_question(oracle, "aging_customer", params)
        facts = {f.field: f.value for f in answer.facts}
        tool = await call(
            server, "get_aging", party_type="customer", account=account, legal_entity=le
        )
        row = tool["rows"][0]
        assert facts["balance"] == pytest.approx(row["balance_cur"], abs=0.011)
        for bucket in row["buckets"]:
            label = bucket["label"].replace("over 90", "over 90")
            expected = facts.get(f"aging_{label}", 0.0)
            assert expected == pytest.approx(bucket["amount_cur"] or 0.0, abs=0.011), label


async def test_vendor_spend_is_net_of_notes_in_accounting_currency(server, oracle, sql) -> None:
    vendors = sql.execute(
        "select distinct legal_entity, vendor_account from vendor_transaction "
        "where txn_type in ('credit_note', 'debit_note') order by 2 limit 8"
    ).fetchall()
    assert vendors
    for le, account in vendors:
        spend = fact(
            oracle, "vendor_spend_fiscal_year", {"legal_entity": le, "account": account}, "spend"
        )
        start, _ = oracle.fiscal_year(le)
        tool = await call(server, "get_vendor_spend", account=account, legal_entity=le)
        rows = [r for r in tool["rows"] if r["fiscal_year_start"] == start.isoformat()]
        net = rows[0]["net_spend_acct"] if rows else 0.0  # no row: nothing this fiscal year
        assert spend == pytest.approx(net, abs=0.011), account


async def test_a_sales_order_is_an_order_of_type_sales(server, oracle, sql) -> None:
    customers = sql.execute(
        "select distinct legal_entity, customer_account from sales_order "
        "where order_type = 'return' order by 2 limit 5"
    ).fetchall()
    assert customers
    for le, account in customers:
        params = {"legal_entity": le, "account": account}
        count = fact(oracle, "order_count_customer", params, "orders")
        tool = await call(
            server, "list_sales_orders", account=account, legal_entity=le, order_type="sales"
        )
        assert count == tool["total_count"], account
    returns = fact(oracle, "return_orders_entity", {"legal_entity": "USMF"}, "return_orders")
    tool = await call(server, "list_sales_orders", legal_entity="USMF", order_type="return")
    assert returns == tool["total_count"]


async def test_an_obligation_for_the_next_days_includes_what_is_overdue(server, oracle) -> None:
    for days in (7, 30):
        params = {"legal_entity": "USMF", "days": days}
        total = fact(oracle, "ap_obligation_next_days", params, "total_due")
        overdue = fact(oracle, "ap_obligation_next_days", params, "overdue")
        end = oracle.today + dt.timedelta(days=days)
        items, page = [], 1
        while True:
            data = await call(
                server,
                "list_vendor_transactions",
                legal_entity="USMF",
                status="open",
                txn_type=["invoice"],
                due_to=end.isoformat(),
                page=page,
                page_size=500,
            )
            items += data["items"]
            if not data["has_more"]:
                break
            page += 1
        owed = [i for i in items if i["open_amount_cur"] > 0]
        assert total == pytest.approx(sum(i["open_amount_acct"] for i in owed), abs=0.05)
        late = [i for i in owed if i["due_date"] < oracle.today.isoformat()]
        assert overdue > 0 and overdue == pytest.approx(
            sum(i["open_amount_acct"] for i in late), abs=0.05
        )
