"""The ERP MCP server as real clients see it: stdio and HTTP with the official `mcp` client, bearer
auth, record pages, the CLI, fault injection, the audit log and read-only enforcement."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from pathlib import Path

import httpx
import httpx2
import pytest
from fastmcp import Client
from fastmcp.utilities.tests import asgi_server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from erp_mcp import TRANSIENT_PREFIX, FaultConfig, build_server, main
from erp_mcp._middleware import FaultDraws
from erp_mcp._runtime import ErpRuntime
from ledgerbench_core._trial import TRIAL_HEADER

pytestmark = pytest.mark.timeout(120)

QUIET = {"FASTMCP_LOG_LEVEL": "WARNING", "FASTMCP_SHOW_SERVER_BANNER": "false"}


def _record(result) -> dict:
    return result.structured_content


async def test_official_client_over_stdio(erp_db_url):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "erp_mcp", "--db", erp_db_url], env=QUIET
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        names = {t.name for t in tools.tools}
        assert {"get_aging", "search_parties", "query_entity_set"} <= names
        assert all(t.annotations.read_only_hint for t in tools.tools)
        result = await session.call_tool("erp_info", {})
        assert not result.is_error
        assert result.structured_content["today"]
        bad = await session.call_tool("get_customer", {"account": "NOPE-0000"})
        assert bad.is_error and "no customer" in bad.content[0].text


async def _http_session_call(url: str, headers: dict, name: str, args: dict):
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(name, args)


async def test_official_client_over_http(erp_server):
    result = await _http_session_call(
        erp_server.url, {}, "search_parties", {"query": "SYNCUS-0002"}
    )
    assert not result.is_error
    best = result.structured_content["candidates"][0]
    assert best["account"] == "SYNCUS-0002"
    assert best["url"].startswith(erp_server.base_url + "/erp/")


async def test_bearer_auth_accepts_the_token_and_refuses_others(erp_server_with_token):
    server = erp_server_with_token
    ok = await _http_session_call(
        server.url, {"Authorization": f"Bearer {server.token}"}, "erp_info", {}
    )
    assert not ok.is_error and ok.structured_content["today"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as http:
        missing = await http.post(server.url, json=body, headers=headers)
        wrong = await http.post(
            server.url, json=body, headers={**headers, "Authorization": "Bearer wrong"}
        )
        page = await http.get(f"{server.base_url}/erp/USMF/customers/SYNCUS-0001")
        page_ok = await http.get(
            f"{server.base_url}/erp/USMF/customers/SYNCUS-0001",
            headers={"Authorization": f"Bearer {server.token}", "Accept": "application/json"},
        )
    assert missing.status_code == 401 and wrong.status_code == 401
    assert page.status_code == 401 and page_ok.status_code == 200


async def test_pages_read_the_authorization_header_as_mcp_does(erp_server_with_token):
    """One reading of the header for /mcp and the record pages: "Bearer", one space, the token."""
    server = erp_server_with_token
    record = f"{server.base_url}/erp/USMF/customers/SYNCUS-0001"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as http:
        for header, accepted in (
            (f"Bearer {server.token}", True),
            (f"bearer {server.token}", True),
            (f"Bearer  {server.token}", False),
        ):
            auth = {"Authorization": header}
            page = await http.get(record, headers=auth)
            mcp = await http.post(server.url, json=body, headers={**accept, **auth})
            assert (page.status_code == 200) is accepted, (header, page.status_code)
            assert (mcp.status_code != 401) is accepted, (header, mcp.status_code)


async def test_record_urls_resolve_to_the_data_the_tool_returned(erp_server):
    # A customer whose payment terms key needs escaping in a URL ("2%10Net30").
    with sqlite3.connect(erp_server.db_url.removeprefix("sqlite:///")) as db:
        account = db.execute(
            "select account from customer where payment_terms like '%\\%%' escape '\\' "
            "order by account limit 1"
        ).fetchone()[0]
    async with Client(erp_server.url) as client:
        customer = _record(await client.call_tool("get_customer", {"account": account}))
        txns = _record(
            await client.call_tool("list_customer_transactions", {"page_size": 3, "status": "open"})
        )
        order = _record(
            await client.call_tool("list_sales_orders", {"page_size": 1, "status": ["open"]})
        )
    records = [customer["customer"], *txns["items"], order["items"][0]]
    records += [customer["payment_terms"], customer["group"]]
    if customer["cash_discount"]:
        records.append(customer["cash_discount"])
    async with httpx.AsyncClient() as http:
        for record in records:
            response = await http.get(record["url"], headers={"Accept": "application/json"})
            assert response.status_code == 200, record["url"]
            page = response.json()
            assert page["url"] == record["url"]
            for field, value in page["record"].items():
                assert record[field] == value, (record["url"], field)
        html = await http.get(order["items"][0]["url"])
        assert html.status_code == 200 and "text/html" in html.headers["content-type"]
        assert "lines (" in html.text and "<table>" in html.text
        so_page = (
            await http.get(order["items"][0]["url"], headers={"Accept": "application/json"})
        ).json()
        assert so_page["children"]["lines"], "a sales order page lists its lines"
        assert any(link["entity_set"] == "customers" for link in so_page["related"])


async def test_unknown_records_and_path_tricks_give_404(erp_server):
    base = erp_server.base_url
    paths = [
        "/erp/USMF/customers/SYNCUS-9999",
        "/erp/ZZZZ/customers/SYNCUS-0001",
        "/erp/USMF/no-such-set/X",
        "/erp/USMF/customers/..%2F..%2Fetc%2Fpasswd",
        "/erp/USMF/customers/%2e%2e",
        "/erp/USMF/../customers/SYNCUS-0001",
        "/erp/USMF/customers/SYNCUS-0001/extra",
    ]
    async with httpx.AsyncClient() as http:
        for path in paths:
            response = await http.get(base + path, headers={"Accept": "application/json"})
            assert response.status_code == 404, path


async def test_fault_injection_is_seeded_and_marked_transient(erp_db_url):
    faults = FaultConfig(error_rate=0.5, latency_ms=20, seed=3)
    outcomes = []
    for _ in range(2):
        async with Client(build_server(erp_db_url, faults=faults)) as client:
            started = time.perf_counter()
            run = []
            for _ in range(8):
                result = await client.call_tool("erp_info", {}, raise_on_error=False)
                run.append(result.is_error)
                if result.is_error:
                    assert result.content[0].text.startswith(TRANSIENT_PREFIX)
            assert time.perf_counter() - started >= 8 * 0.02
            outcomes.append(run)
    assert outcomes[0] == outcomes[1] and any(outcomes[0]) and not all(outcomes[0])


# Calls each trial makes: a repeated call (its k-th occurrence gets a fresh draw) and a few others.
KEYED_CALLS = [
    ("erp_info", {}),
    ("search_parties", {"query": "Wholesale", "limit": 2}),
    ("search_parties", {"limit": 2, "query": "Wholesale"}),  # same call: keys are canonical JSON
    ("get_customer", {"account": "SYNCUS-0001"}),
    ("list_entity_sets", {}),
] + [("erp_info", {})] * 7


async def _faults_seen(server, trials: list[str], *, together: bool) -> dict:
    """(trial, tool, arguments, occurrence) -> whether the call met an injected fault, for
    sessions that each send their own trial header, one after another or interleaved."""
    seen: dict = {}

    async def session(trial: str) -> None:
        occurrences: dict = {}
        async with server.client(headers={TRIAL_HEADER: trial}) as client:
            for tool, arguments in KEYED_CALLS:
                key = (tool, json.dumps(arguments, sort_keys=True))
                occurrence = occurrences[key] = occurrences.get(key, -1) + 1
                result = await client.call_tool(tool, arguments, raise_on_error=False)
                fault = result.is_error and result.content[0].text.startswith(TRANSIENT_PREFIX)
                assert fault or not result.is_error, result.content[0].text
                seen[(trial, *key, occurrence)] = fault
                await asyncio.sleep(0)  # let the other session in

    if together:
        await asyncio.gather(*(session(trial) for trial in trials))
    else:
        for trial in trials:
            await session(trial)
    return seen


async def test_faults_are_keyed_by_trial_and_call_not_by_arrival_order(erp_db_url, tmp_path):
    faults = FaultConfig(error_rate=0.5, seed=11)
    trials = ["q-a#0", "q-b#0"]
    orders = [(trials, False), (trials[::-1], False), (trials[::-1], True)]
    runs = []
    for index, (order, together) in enumerate(orders):
        log = tmp_path / f"audit-{index}.jsonl"
        server = build_server(erp_db_url, faults=faults, audit_log=log)
        async with asgi_server(server) as running:
            runs.append(await _faults_seen(running, order, together=together))
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        assert {entry["trial"] for entry in entries} == set(trials)
        assert len(entries) == 2 * len(KEYED_CALLS)
        for entry in entries:  # every audited call traces back to the question that made it
            key = (entry["tool"], json.dumps(entry["arguments"], sort_keys=True))
            assert any(k[:3] == (entry["trial"], *key) for k in runs[-1])
    assert all(run == runs[0] for run in runs[1:]), "the same calls met different faults"
    first, second = (
        [fault for (trial, *_), fault in sorted(runs[0].items()) if trial == name]
        for name in trials
    )
    assert first != second, "two trials making the same calls met the same faults"
    assert any(first) and not all(first)
    # a retry is a fresh draw: the repeated erp_info call both failed and went through
    repeats = [fault for (trial, tool, *_), fault in runs[0].items() if tool == "erp_info"]
    assert any(repeats) and not all(repeats)


@pytest.mark.parametrize(("rate", "expected"), [(0.0, False), (1.0, True)])
async def test_error_rate_zero_never_fails_and_one_always_fails(erp_db_url, rate, expected):
    server = build_server(erp_db_url, faults=FaultConfig(error_rate=rate, latency_ms=1, seed=5))
    async with asgi_server(server) as running:
        seen = await _faults_seen(running, ["q-a#0", "q-b#0"], together=True)
    assert set(seen.values()) == {expected}


def test_fault_draws_are_a_function_of_the_call():
    config = FaultConfig(error_rate=0.3, latency_ms=5, jitter_ms=40, seed=7)
    calls = [(f"q-{n % 3}#0", "get_customer", {"account": f"A-{n % 4}"}) for n in range(40)]

    def draws(order: list, config: FaultConfig = config) -> dict:
        faults = FaultDraws(config)
        seen = {}
        for trial, tool, arguments in order:
            draw = faults.draw(trial, tool, arguments)
            seen[(trial, tool, arguments["account"], draw.occurrence)] = draw
        return seen

    forward = draws(calls)
    assert draws(sorted(calls, key=lambda call: call[0], reverse=True)) == forward
    assert draws(calls[::-1]) == forward
    assert all(5 <= draw.delay_ms <= 45 for draw in forward.values())
    assert len({draw.delay_ms for draw in forward.values()}) == len(forward)
    assert 0 < sum(draw.fail for draw in forward.values()) < len(forward)
    other_seed = draws(calls, config.model_copy(update={"seed": 8}))
    assert other_seed.keys() == forward.keys()
    assert [d.fail for d in other_seed.values()] != [d.fail for d in forward.values()]


async def test_audit_log_records_every_call(erp_db_url, tmp_path):
    log = tmp_path / "audit.jsonl"
    async with Client(build_server(erp_db_url, audit_log=log)) as client:
        await client.call_tool("search_parties", {"query": "Wholesale", "limit": 2})
        await client.call_tool("get_customer", {"account": "NOPE-1"}, raise_on_error=False)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [entry["tool"] for entry in lines] == ["search_parties", "get_customer"]
    assert lines[0]["arguments"] == {"query": "Wholesale", "limit": 2}
    assert lines[0]["error"] is None and lines[0]["result_chars"] > 50
    assert lines[1]["error"].startswith("no customer") and lines[1]["duration_ms"] >= 0
    assert lines[1]["error_kind"] == "client" and lines[0]["error_kind"] is None
    assert lines[0]["trial"] is None  # an in-memory client sends no trial header
    assert {
        "time",
        "session_id",
        "trial",
        "tool",
        "arguments",
        "duration_ms",
        "result_chars",
        "error",
        "error_kind",
    } == set(lines[0])


def test_database_is_read_only_through_every_path(erp_db_url):
    runtime = ErpRuntime.open(erp_db_url, None)
    try:
        for statement in (
            "UPDATE customer SET credit_limit = 0",
            "DELETE FROM customer_transaction",
            "CREATE TABLE evil (x int)",
        ):
            with pytest.raises(OperationalError), runtime.engine.begin() as conn:
                conn.execute(text(statement))
    finally:
        runtime.close()
    path = erp_db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as check:
        assert check.execute("select count(*) from customer_transaction").fetchone()[0] > 0
        assert check.execute("select min(credit_limit) from customer").fetchone()[0] > 0


def test_cli_errors_are_one_line_with_exit_2(tmp_path, capsys):
    missing = tmp_path / "nope.db"
    assert main(["--db", f"sqlite:///{missing}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "does not exist" in err and "python -m synthetic_erp generate" in err
    not_an_erp = tmp_path / "empty.db"
    sqlite3.connect(not_an_erp).execute("create table t (x int)").connection.close()
    assert main(["--db", f"sqlite:///{not_an_erp}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot read an ERP" in err and "generate" in err
    assert main(["--db", "mysql://x/y"]) == 2
    assert "unsupported database URL" in capsys.readouterr().err
    assert main(["--db", "sqlite:///x.db", "--error-rate", "2"]) == 2
    assert "--error-rate" in capsys.readouterr().err


def test_cli_tools_json_lists_the_catalogue(capsys):
    assert main(["tools", "--json"]) == 0
    catalogue = json.loads(capsys.readouterr().out)
    by_name = {tool["name"]: tool for tool in catalogue}
    assert {"erp_info", "get_aging", "query_entity_set"} <= set(by_name)
    aging = by_name["get_aging"]
    assert aging["annotations"]["readOnlyHint"] is True
    assert "bucket_edges" in aging["inputSchema"]["properties"]
    assert aging["outputSchema"]["type"] == "object"


def test_readme_documents_every_tool_and_option():
    readme = (Path(__file__).resolve().parents[1] / "erp_mcp" / "README.md").read_text()

    async def names():
        server = build_server("sqlite:///unused.db", check_database=False)
        return [t.name for t in await server.list_tools()]

    for name in asyncio.run(names()):
        assert f"`{name}`" in readme, name
    for option in ("--toolset", "--token", "--public-url", "--audit-log", "--error-rate"):
        assert option in readme, option


async def test_concurrent_sessions_and_calls_each_get_their_own_results(erp_server):
    """Agent sessions at once over HTTP, one per legal entity, each asking at once for every
    vendor group's balance while calls of another shape run beside them: every call gets its own
    figures, the ones one call gets for the whole ledger grouped by vendor group."""
    async with Client(erp_server.url) as client:
        whole = await client.call_tool(
            "get_aging", {"party_type": "vendor", "group_by": "group", "limit": 1000}
        )
    expected = {
        (r["legal_entity"], r["group_id"]): r["balance_acct"] for r in _record(whole)["rows"]
    }
    assert len(set(expected.values())) == len(expected) >= 12  # every group's figure differs

    async def group_balance(client: Client, le: str, group: str) -> tuple[str, str, float]:
        result = await client.call_tool(
            "get_aging",
            {"party_type": "vendor", "legal_entity": le, "group_id": group, "group_by": "group"},
        )
        (row,) = _record(result)["rows"]
        return row["legal_entity"], row["group_id"], row["balance_acct"]

    async def search(client: Client, le: str) -> set[str]:
        result = await client.call_tool("search_parties", {"query": "Supply", "legal_entity": le})
        return {c["legal_entity"] for c in _record(result)["candidates"]}

    async def one_session(le: str) -> list:
        groups = [group for entity, group in expected if entity == le]
        async with Client(erp_server.url) as client:
            calls = [group_balance(client, le, group) for group in groups]
            return await asyncio.gather(*calls, search(client, le))

    entities = sorted({le for le, _ in expected})
    for le, results in zip(
        entities, await asyncio.gather(*map(one_session, entities)), strict=True
    ):
        *balances, found = results
        assert found <= {le}
        for entity, group, balance in balances:
            assert entity == le and balance == expected[(le, group)], (le, group)
