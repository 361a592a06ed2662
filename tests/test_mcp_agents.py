"""The ERP MCP server for agents in the wild (issue 16), through the official `mcp` client over
stdio and streamable HTTP: Host/Origin checks, bounded inputs, the result budget and cursors,
records as resources, descriptions, enums, completions, prompts, aggregation, the ranking tool,
the audit log and fault injection."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import asynccontextmanager

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from erp_mcp import TRANSIENT_PREFIX, main
from erp_mcp._tooling import RESULT_BUDGET
from harnesses._instructions import system_instructions
from tests.conftest import start_mcp_server, stop_process
from tests.mcp_budget import largest_arguments

pytestmark = pytest.mark.timeout(180)

QUIET = {"FASTMCP_LOG_LEVEL": "WARNING", "FASTMCP_SHOW_SERVER_BANNER": "false"}


@asynccontextmanager
async def http_session(url: str):
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session, await session.initialize()


@asynccontextmanager
async def stdio_session(db_url: str, *extra: str, env: dict | None = None):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "erp_mcp", "--db", db_url, *extra],
        env={**QUIET, **(env or {})},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        yield session, await session.initialize()


@pytest.fixture(scope="module")
def sql(erp_db_url: str):
    connection = sqlite3.connect(f"file:{erp_db_url.removeprefix('sqlite:///')}?mode=ro", uri=True)
    yield connection
    connection.close()


def error_text(result) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


# -- 1. Host and Origin --------------------------------------------------------------------------


async def test_foreign_host_gets_421_and_foreign_origin_403_on_every_route(erp_server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    page = f"{erp_server.base_url}/erp/USMF/customers/SYNCUS-0001"
    async with httpx.AsyncClient() as http:
        for url, method in ((erp_server.url, "POST"), (page, "GET")):
            kwargs = {"json": body} if method == "POST" else {}
            bad_host = await http.request(
                method, url, headers={**accept, "Host": "evil.example"}, **kwargs
            )
            assert bad_host.status_code == 421, url
            assert "--allowed-host" in bad_host.json()["error"]
            bad_origin = await http.request(
                method, url, headers={**accept, "Origin": "http://evil.example"}, **kwargs
            )
            assert bad_origin.status_code == 403, url
            for host in ("localhost", "127.0.0.1:8765", "[::1]:1"):
                ok = await http.request(method, url, headers={**accept, "Host": host}, **kwargs)
                assert ok.status_code not in (403, 421), (url, host)
            same_origin = await http.request(
                method, url, headers={**accept, "Origin": erp_server.base_url}, **kwargs
            )
            assert same_origin.status_code not in (403, 421), url
        huge = {**body, "method": "tools/call", "params": {"name": "query_entity_set",
                 "arguments": {"entity_set": "customers", "filters": [{"field": "name",
                 "op": "in", "value": ["x" * 20] * 20_000}]}}}  # fmt: skip
        too_big = await http.post(erp_server.url, json=huge, headers=accept)
        assert too_big.status_code == 413
        page_response = await http.get(page)
    assert page_response.status_code == 200
    assert "default-src 'none'" in page_response.headers["content-security-policy"]
    assert page_response.headers["x-content-type-options"] == "nosniff"


async def test_allowed_host_option_admits_that_name_only(erp_db_url):
    server, _ = start_mcp_server(erp_db_url, "--allowed-host", "erp.internal")
    try:
        async with httpx.AsyncClient() as http:
            page = f"{server.base_url}/erp/USMF/customers/SYNCUS-0001"
            named = await http.get(page, headers={"Host": "erp.internal:8080"})
            origin = await http.get(page, headers={"Origin": "https://erp.internal"})
            other = await http.get(page, headers={"Host": "erp.internal.evil.example"})
        assert named.status_code == 200 and origin.status_code == 200
        assert other.status_code == 421
    finally:
        stop_process(server.process)


# -- 2. bounded inputs ---------------------------------------------------------------------------

HOSTILE_CALLS = [
    ("list_customer_transactions", {"page": 2**62}, "page"),
    ("list_sales_orders", {"page": 2**62}, "page"),
    ("query_entity_set", {"entity_set": "customers", "skip": 2**63}, "skip"),
    ("get_aging", {"bucket_edges": [10**9]}, "bucket_edges.0"),
    ("get_aging", {"bucket_edges": list(range(1, 30))}, "bucket_edges"),
    ("get_aging", {"as_of": "0001-01-02"}, "as_of"),
    ("get_aging", {"as_of": "9999-12-31"}, "as_of"),
    ("list_cash_discounts", {"as_of": "9999-12-30", "expiring_within_days": 366}, "as_of"),
    ("get_collections_worklist", {"agent_id": "X", "as_of": "0001-01-01"}, "as_of"),
    ("search_parties", {"query": "x" * 5000}, "query"),
    ("get_customer", {"account": "SYNCUS-0001\x00"}, "account"),
    ("list_customer_transactions", {"txn_type": ["refund"]}, "txn_type.0"),
    ("list_vendor_transactions", {"min_amount": 1e300}, "min_amount"),
    (
        "query_entity_set",
        {
            "entity_set": "customers",
            "filters": [{"field": "name", "op": "in", "value": ["a"] * 600}],
        },
        "filters.0.value",
    ),
    (
        "query_entity_set",
        {
            "entity_set": "customers",
            "filters": [{"field": "name", "op": "contains", "value": "\x00"}],
        },
        "filters.0.value",
    ),
    ("get_vendor_spend", {"fiscal_year": 10**12}, "fiscal_year"),
    ("list_customer_transactions", {"unknown_argument": "y" * 5000}, "unknown_argument"),
]


async def test_hostile_inputs_are_clean_errors_naming_their_field(erp_server):
    async with http_session(erp_server.url) as (session, _):
        for tool, args, field in HOSTILE_CALLS:
            text = error_text(await session.call_tool(tool, args))
            assert text.startswith("invalid arguments: "), (tool, text)
            assert f"{field}:" in text or f"{field} " in text, (tool, field, text)
            assert "\n" not in text and len(text) < 600, (tool, text)
            assert "xxxxxxxxxx" not in text and "yyyyyyyyyy" not in text  # input not echoed
        # The server still answers normally afterwards.
        info = await session.call_tool("erp_info", {})
        assert not info.is_error


async def test_every_input_is_bounded_by_the_server(erp_server):
    """The listed schemas leave the bounds out (a model reads them; the few it needs are stated
    in words), so the server alone enforces them: every argument of every tool, sent far out of
    bounds for its type, is refused with one line naming that argument, before the tool runs."""
    async with http_session(erp_server.url) as (session, _):
        tools = (await session.list_tools()).tools
        unbounded = []
        for tool in tools:
            for name, prop in tool.input_schema.get("properties", {}).items():
                value = _out_of_bounds(prop)
                if value is None:
                    continue
                result = await session.call_tool(tool.name, {name: value})
                text = result.content[0].text if result.content else ""
                named = f"{name}:" in text or f"unknown {name}" in text
                if not (result.is_error and named):
                    unbounded.append(f"{tool.name}.{name}: {text[:120]}")
    listed = json.dumps([t.input_schema for t in tools])
    assert not [
        k for k in ("maximum", "maxLength", "maxItems", "formatMaximum") if f'"{k}"' in listed
    ]
    assert unbounded == []


def _out_of_bounds(prop: dict) -> object:
    """A value of ``prop``'s type beyond any bound the server sets (None for a boolean)."""
    kinds = prop.get("type")
    kind = next(k for k in kinds if k != "null") if isinstance(kinds, list) else kinds
    if "enum" in prop:
        return "not-one-of-them"  # a closed set is a bound too
    if kind == "string":
        return "0001-01-01" if prop.get("format") == "date" else "x" * 10_000
    if kind == "integer":
        return 10**12
    if kind == "number":
        return 1e300
    if kind == "array":
        item = prop.get("items", {})
        sample = (item.get("enum") or [None])[0] or {"object": {}, "integer": 1}.get(
            item.get("type"), "a"
        )
        return [sample] * 1_001
    return None


async def test_no_result_exceeds_the_budget_at_the_largest_allowed_arguments(erp_server, sql):
    async with http_session(erp_server.url) as (session, _):
        tools = {t.name for t in (await session.list_tools()).tools}
        calls = largest_arguments(sql)
        assert set(calls) == tools, set(calls) ^ tools
        sizes = {}
        for tool, arg_list in calls.items():
            for args in arg_list:
                result = await session.call_tool(tool, args)
                assert not result.is_error, (tool, args, result.content[0].text)
                size = len(result.content[0].text)
                sizes[(tool, json.dumps(args))] = size
                assert size <= RESULT_BUDGET, (tool, args, size)
                content = result.structured_content
                if size > 0.9 * RESULT_BUDGET:  # cut by the budget: the result says so
                    assert content.get("truncated") is True, (tool, args)
    largest = max(sizes.items(), key=lambda item: item[1])
    print(f"\nlargest result: {largest[1]} characters ({largest[0][0]} {largest[0][1]})")
    assert largest[1] > 50_000  # the budget, not small data, is what bounds the largest results


async def test_cursor_continues_exactly_after_a_cut_page(erp_server, sql):
    total = sql.execute("select count(*) from customer_transaction").fetchone()[0]
    seen: list[str] = []
    async with http_session(erp_server.url) as (session, _):
        args = {"page_size": 500, "sort_by": "voucher", "descending": False}
        first = (await session.call_tool("list_customer_transactions", args)).structured_content
        assert first["truncated"] is True and first["has_more"] is True
        assert len(first["items"]) < 500 and first["total_count"] == total
        seen += [i["voucher"] for i in first["items"]]
        cursor = first["next_cursor"]
        for _ in range(3):
            page = (
                await session.call_tool("list_customer_transactions", {**args, "cursor": cursor})
            ).structured_content
            assert page["offset"] == len(seen)
            seen += [i["voucher"] for i in page["items"]]
            cursor = page["next_cursor"]
        expected = [
            r[0]
            for r in sql.execute(
                "select voucher from customer_transaction order by voucher limit ?", (len(seen),)
            )
        ]
        assert seen == expected
        other = await session.call_tool(
            "list_customer_transactions", {**args, "status": "open", "cursor": cursor}
        )
        assert "cursor" in error_text(other) and "different filters" in error_text(other)
        query = {"entity_set": "customers", "top": 2, "order_by": [{"field": "account"}]}
        one = (await session.call_tool("query_entity_set", query)).structured_content
        two = (
            await session.call_tool("query_entity_set", {**query, "cursor": one["next_cursor"]})
        ).structured_content
    accounts = [
        r[0] for r in sql.execute("select account from customer order by account, legal_entity")
    ]
    assert [i["account"] for i in one["items"] + two["items"]] == accounts[:4]


# -- 4. records as resources ---------------------------------------------------------------------


async def test_stdio_links_are_resources_that_resolve(erp_db_url, sql):
    async with stdio_session(erp_db_url) as (session, init):
        assert init.server_info.name == "ledgerbench-erp"
        from erp_mcp._server import server_version

        assert init.server_info.version == server_version() != "0+unknown"
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["erp://{legal_entity}/{entity_set}/{key}"]
        customer = await session.call_tool("get_customer", {"account": "SYNCUS-0001"})
        record = customer.structured_content["customer"]
        assert record["url"] == f"erp://{record['legal_entity']}/customers/SYNCUS-0001"
        terms = customer.structured_content["payment_terms"]["url"]
        for url in (record["url"], terms):
            read = await session.read_resource(url)
            page = json.loads(read.contents[0].text)
            assert page["url"] == url
        page = json.loads((await session.read_resource(record["url"])).contents[0].text)
        assert page["record"]["credit_limit"] == record["credit_limit"]
        assert all(link["url"].startswith("erp://") for link in page["related"])
        with pytest.raises(MCPError, match="no customers record 'NOPE-0' in USMF"):
            await session.read_resource("erp://USMF/customers/NOPE-0")


# -- 5. agent-developer features -----------------------------------------------------------------


async def test_every_parameter_is_described_and_closed_sets_are_enums(erp_server):
    """Described in its schema, or (the shared arguments) by the conventions that the server's
    instructions and every harness's system instructions state once; no null among an
    argument's types."""
    from erp_mcp._conventions import STATED_ONCE

    async with http_session(erp_server.url) as (session, initialized):
        tools = (await session.list_tools()).tools
    missing = [
        f"{tool.name}.{name}"
        for tool in tools
        for name, prop in tool.input_schema.get("properties", {}).items()
        if not (prop.get("description") or "").strip() and name not in STATED_ONCE
    ]
    assert missing == []
    for text in (initialized.instructions, system_instructions("world")):
        assert all(name in text for name in STATED_ONCE)
        assert "at most 500" in text and "1-based" in text and "next_cursor" in text
    nullable = [
        f"{tool.name}.{name}"
        for tool in tools
        for name, prop in tool.input_schema.get("properties", {}).items()
        if "null" in (prop.get("type") or []) or None in (prop.get("enum") or [])
    ]
    assert nullable == []  # an optional argument is left out (a filter's value may be null)
    by_name = {t.name: t.input_schema["properties"] for t in tools}
    txn_type = by_name["list_customer_transactions"]["txn_type"]["items"]
    assert set(txn_type["enum"]) >= {"sales_invoice", "payment", "credit_note"}
    assert "customers" in by_name["query_entity_set"]["entity_set"]["enum"]
    assert by_name["rank_parties"]["measure"]["enum"] == ["invoiced", "paid", "open"]
    assert by_name["get_payment_journal"]["journal_id"]["description"]


async def test_completions_and_prompts(erp_server, sql):
    from mcp.types import PromptReference, ResourceTemplateReference

    template = ResourceTemplateReference(
        type="ref/resource", uri="erp://{legal_entity}/{entity_set}/{key}"
    )
    async with http_session(erp_server.url) as (session, _):
        les = await session.complete(template, {"name": "legal_entity", "value": "U"})
        sets = await session.complete(template, {"name": "entity_set", "value": "cust"})
        keys = await session.complete(
            template,
            {"name": "key", "value": "SYNCUS-00"},
            context_arguments={"legal_entity": "USMF", "entity_set": "customers"},
        )
        prompts = (await session.list_prompts()).prompts
        names = {p.name for p in prompts}
        agents = await session.complete(
            PromptReference(type="ref/prompt", name="collections_worklist"),
            {"name": "agent_id", "value": ""},
            context_arguments={"legal_entity": "USMF"},
        )
        review = await session.get_prompt("aging_review", {"legal_entity": "USMF"})
    expected_les = [r[0] for r in sql.execute("select code from legal_entity where code like 'U%'")]
    assert sorted(les.completion.values) == sorted(expected_les)
    from synthetic_erp._catalog import ENTITY_SETS

    assert sets.completion.values == [e.name for e in ENTITY_SETS if e.name.startswith("cust")]
    assert "customers" in sets.completion.values
    usmf = {
        r[0]
        for r in sql.execute(
            "select account from customer where legal_entity='USMF' and account like 'SYNCUS-00%'"
        )
    }
    assert keys.completion.total == len(usmf)
    assert set(keys.completion.values) <= usmf and len(keys.completion.values) == min(
        100, len(usmf)
    )
    usmf_agents = {
        r[0]
        for r in sql.execute("select agent_id from collections_agent where legal_entity='USMF'")
    }
    assert set(agents.completion.values) == usmf_agents
    assert {"aging_review", "customer_account_review", "collections_worklist"} <= names
    assert (
        "USMF" in review.messages[0].content.text and "get_aging" in review.messages[0].content.text
    )


async def test_aggregation_and_ranking_match_sql(erp_server, sql):
    async with http_session(erp_server.url) as (session, _):
        grouped = (
            await session.call_tool(
                "query_entity_set",
                {
                    "entity_set": "customer-transactions",
                    "legal_entity": "USMF",
                    "filters": [{"field": "txn_type", "op": "eq", "value": "sales_invoice"}],
                    "group_by": ["customer_account"],
                    "aggregates": [{"op": "sum", "field": "amount_acct"}, {"op": "count"}],
                    "order_by": [{"field": "sum_amount_acct", "descending": True}],
                    "top": 5,
                },
            )
        ).structured_content
        ranked = (
            await session.call_tool(
                "rank_parties",
                {
                    "measure": "invoiced",
                    "legal_entity": "USMF",
                    "date_from": "2025-01-01",
                    "date_to": "2025-12-31",
                    "top_n": 5,
                },
            )
        ).structured_content
        paid = (
            await session.call_tool(
                "rank_parties", {"measure": "paid", "party_type": "vendor", "top_n": 3}
            )
        ).structured_content
    rows = sql.execute(
        "select customer_account, sum(amount_acct), count(*) from customer_transaction "
        "where legal_entity='USMF' and txn_type='sales_invoice' group by 1 "
        "order by 2 desc, 1 limit 5"
    ).fetchall()
    assert [i["customer_account"] for i in grouped["items"]] == [r[0] for r in rows]
    assert [round(i["sum_amount_acct"] * 100) for i in grouped["items"]] == [
        round(r[1] * 100) for r in rows
    ]
    assert [i["count"] for i in grouped["items"]] == [r[2] for r in rows]
    expected = sql.execute(
        "select customer_account, sum(amount_acct) from customer_transaction "
        "where legal_entity='USMF' and posted "
        "and txn_type in ('sales_invoice','free_text_invoice') "
        "and txn_date between '2025-01-01' and '2025-12-31' group by 1 order by 2 desc, 1 limit 5"
    ).fetchall()
    assert [r["account"] for r in ranked["rows"]] == [e[0] for e in expected]
    assert [round(r["amount_acct"] * 100) for r in ranked["rows"]] == [
        round(e[1] * 100) for e in expected
    ]
    assert ranked["rows"][0]["url"].endswith(f"/erp/USMF/customers/{expected[0][0]}")
    les = {r[0] for r in sql.execute("select code from legal_entity")}
    assert {r["legal_entity"] for r in paid["rows"]} == les  # ranked within each legal entity
    assert all(r["amount_acct"] > 0 for r in paid["rows"])


# -- 6. audit log, internal errors and faults ----------------------------------------------------


async def test_audit_log_tells_client_from_internal_errors_with_session_ids(erp_db_url, tmp_path):
    broken = tmp_path / "broken.db"
    with sqlite3.connect(erp_db_url.removeprefix("sqlite:///")) as source:
        target = sqlite3.connect(broken)
        source.backup(target)
    target.execute("drop table customer_dispute")
    target.commit()
    target.close()
    log = tmp_path / "audit.jsonl"
    stderr_log = tmp_path / "stderr.log"
    with stderr_log.open("w") as errors:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "erp_mcp", "--db", f"sqlite:///{broken}", "--audit-log", str(log)],
            env={**QUIET, "PATH": os.environ.get("PATH", "")},
        )
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            internal = await session.call_tool("list_disputes", {})
            client = await session.call_tool("get_customer", {"account": "NOPE-1"})
            invalid = await session.call_tool("list_disputes", {"page": 0})
            ok = await session.call_tool("erp_info", {})
    assert "internal error in list_disputes" in error_text(internal)
    assert "customer_dispute" not in error_text(internal)
    assert error_text(client).startswith("no customer") and not ok.is_error
    assert error_text(invalid).startswith("invalid arguments: page:")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["tool"], e["error_kind"]) for e in entries] == [
        ("list_disputes", "internal"),
        ("get_customer", "client"),
        ("list_disputes", "client"),
        ("erp_info", None),
    ]
    sessions = {e["session_id"] for e in entries}
    assert len(sessions) == 1 and None not in sessions
    server_log = stderr_log.read_text()
    assert "internal error in tool list_disputes" in server_log
    assert "Traceback" not in server_log and "│" not in server_log  # no (rich) traceback


async def test_faults_hit_only_valid_calls_to_real_tools(erp_db_url):
    async with stdio_session(erp_db_url, "--error-rate", "1", "--fault-seed", "3") as (session, _):
        valid = await session.call_tool("erp_info", {})
        invalid = await session.call_tool("list_disputes", {"page": 0})
        unknown = await session.call_tool("no_such_tool", {})
    assert error_text(valid).startswith(TRANSIENT_PREFIX)
    assert error_text(invalid).startswith("invalid arguments: page")
    assert TRANSIENT_PREFIX not in error_text(unknown) and "no_such_tool" in error_text(unknown)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--latency-ms", "inf"),
        ("--latency-ms", "nan"),
        ("--jitter-ms", "1e12"),
        ("--error-rate", "nan"),
    ],
)
def test_non_finite_fault_options_are_refused(flag, value, capsys):
    assert main(["--db", "sqlite:///unused.db", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and flag in err
    assert ("finite" in err) if flag != "--error-rate" else ("between 0 and 1" in err)


def test_allowed_host_must_be_a_host_name(capsys):
    assert main(["--db", "sqlite:///x.db", "--allowed-host", "http://a/b"]) == 2
    assert "--allowed-host" in capsys.readouterr().err


def test_help_mentions_the_new_options(capsys):
    with pytest.raises(SystemExit) as stop:  # `python -m erp_mcp --help` (tests/test_docs.py)
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "--allowed-host" in out and "erp://" in out


async def test_signed_links_open_one_record_for_a_short_time(erp_server_with_token):
    from erp_mcp._pages import signed_link

    server = erp_server_with_token
    url = f"{server.base_url}/erp/USMF/customers/SYNCUS-0001"
    link = signed_link(url, server.token, 60)
    assert server.token not in link
    other = link.replace("SYNCUS-0001", "SYNCUS-0002")
    expired = signed_link(url, server.token, 60, now=0)
    forged = signed_link(url, "not-the-token", 60)
    async with httpx.AsyncClient() as http:
        ok = await http.get(link, headers={"Accept": "application/json"})
        refused = [await http.get(u) for u in (url, other, expired, forged)]
    assert ok.status_code == 200 and ok.json()["record"]["account"] == "SYNCUS-0001"
    assert [r.status_code for r in refused] == [401, 401, 401, 401]
    out = subprocess.run(
        [sys.executable, "-m", "erp_mcp", "link", url, "--ttl", "30"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ERP_MCP_TOKEN": server.token},
    )
    assert out.returncode == 0 and out.stdout.startswith(url + "?expires=")
