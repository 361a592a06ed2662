"""The research world's MCP server, in memory and over HTTP: tools, errors, budget, pages."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import httpx
import pytest
from fastmcp import Client

from tests.world_fixtures import shared_folder, small_world, world_rows

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def world(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))


@pytest.fixture
async def client(world: Path):
    from synthetic_world import build_world_server

    async with Client(build_world_server(world, include_bench_tools=True)) as session:
        yield session


async def _call(client: Client, tool: str, **arguments):
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    text = result.content[0].text if result.content else ""
    return result, text


def _listed(world: Path) -> tuple[str, str, str]:
    return world_rows(
        world,
        "SELECT company_id, name, ticker FROM company WHERE kind = 'notable' AND listed = 1 "
        "ORDER BY company_id LIMIT 1",
    )[0]


async def test_the_tools_are_read_only_typed_and_share_the_erps_machinery(client: Client):
    tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) == {"world_info", "search", "fetch", "company", "prices", "ping"}
    for tool in tools.values():
        assert tool.annotations.read_only_hint is True
        assert tool.output_schema and tool.input_schema.get("type") == "object"
        assert "anyOf" not in json.dumps(tool.input_schema), tool.name  # lean: plain nullables
    k = tools["search"].input_schema["properties"]["k"]
    assert "maximum" not in k and "10" in k["description"]  # the bound, stated once in words
    refused = await client.call_tool("search", {"query": "revenue", "k": 11}, raise_on_error=False)
    assert refused.is_error and "k:" in refused.content[0].text  # and enforced by the server


async def test_world_info_names_today_world_and_links(client: Client, world: Path) -> None:
    info = (await client.call_tool("world_info", {})).structured_content
    (world_id,) = world_rows(world, "SELECT value FROM world_meta WHERE key = 'world_id'")[0]
    assert info["world_id"] == world_id and info["today"] == "2026-03-02"
    assert info["link_pattern"] == f"https://world.ledgerbench.test/{world_id}/docs/{{doc_id}}"


async def test_search_ranks_filters_and_is_stable(client: Client, world: Path) -> None:
    company_id, name, _ = _listed(world)
    query = {"query": f"{name} annual report statements of operations", "k": 10}
    first = (await client.call_tool("search", query)).structured_content["results"]
    again = (await client.call_tool("search", query)).structured_content["results"]
    assert [r["url"] for r in first] == [r["url"] for r in again]
    assert first and name in first[0]["title"]
    scores = [r["score"] for r in first]
    assert scores == sorted(scores, reverse=True)
    filtered = await client.call_tool(
        "search",
        {
            "query": "revenue",
            "company": name,
            "source_type": "annual_report",
            "k": 10,
            "published_before": "2024-12-31",
            "published_after": "2023-01-01",
        },
    )
    results = filtered.structured_content["results"]
    assert filtered.structured_content["company"]["company_id"] == company_id
    assert results and all(r["source_type"] == "annual_report" for r in results)
    assert all("2023-01-01" <= r["published_at"] <= "2024-12-31" for r in results)
    assert all(r["companies"][0]["company_id"] == company_id for r in results)
    assert all(len(r["snippet"]) < 600 for r in results)


async def test_fetch_returns_the_document_by_link_path_or_id(client: Client, world: Path) -> None:
    doc_id, url, body = world_rows(world, "SELECT doc_id, url, body FROM document LIMIT 1")[0]
    world_id = url.split("/")[3]
    for reference in (
        url,
        f"http://127.0.0.1:1/{world_id}/docs/{doc_id}",
        doc_id,
        f"/{world_id}/docs/{doc_id}?utm=1#top",  # a path with a query: the same document
        f"{url}?page=2",
    ):
        fetched = (await client.call_tool("fetch", {"url": reference})).structured_content
        assert fetched["content"] == body and fetched["url"] == url


async def test_fetch_of_a_malformed_url_names_the_problem(client: Client) -> None:
    for reference in ("http://[::1/x", "http://[::1]:99999999/docs/x", "ftp://"):
        result, text = await _call(client, "fetch", url=reference)
        assert result.is_error and "is not a document link of this world" in text, text


async def test_company_resolves_names_misspellings_and_tickers(client: Client, world: Path):
    company_id, name, ticker = _listed(world)
    for reference in (
        name,
        ticker,
        company_id,
        name.replace(name.split()[0], name.split()[0][:-1]),
    ):
        matches = await client.call_tool("company", {"name_or_ticker": reference})
        assert matches.structured_content["matches"][0]["company_id"] == company_id, reference
    linked = world_rows(
        world,
        "SELECT c.name, e.account FROM company_erp e JOIN company c USING (company_id) LIMIT 1",
    )[0]
    profile = (await client.call_tool("company", {"name_or_ticker": linked[0]})).structured_content
    assert linked[1] in [a["account"] for a in profile["matches"][0]["erp_accounts"]]


async def test_prices_are_paged_with_market_capitalisation(client: Client, world: Path) -> None:
    _, _, ticker = _listed(world)
    page = await client.call_tool(
        "prices", {"ticker": ticker, "start": "2025-01-01", "end": "2025-12-31", "page_size": 100}
    )
    data = page.structured_content
    assert data["total_count"] > 200 and len(data["items"]) == 100 and data["next_cursor"]
    row = data["items"][0]
    assert row["market_cap"] == pytest.approx(row["close"] * row["shares_outstanding"], abs=0.06)
    rest = await client.call_tool(
        "prices",
        {
            "ticker": ticker,
            "start": "2025-01-01",
            "end": "2025-12-31",
            "page_size": 100,
            "cursor": data["next_cursor"],
        },
    )
    assert rest.structured_content["items"][0]["date"] > data["items"][-1]["date"]


async def test_bad_input_gets_one_line_naming_the_fix(client: Client, world: Path) -> None:
    cases = [
        ("search", {"query": "revenue", "k": 20}, "k: Input should be less than or equal to 10"),
        ("search", {"query": "revenue", "company": "Zzyzx Qwerty Nonesuch"}, "no single company"),
        (
            "search",
            {"query": "revenue", "published_before": "2027-01-01"},
            "after the world's today (2026-03-02)",
        ),
        (
            "fetch",
            {"url": "https://world.ledgerbench.test/w0000000000/docs/d000000000000"},
            "belongs to research world w0000000000, but this server serves world",
        ),
        ("fetch", {"url": "https://example.com/annual-report"}, "not a document link"),
        ("company", {"name_or_ticker": "Qqqqq Xxxxx Zzzzz"}, "no company in this world"),
        (
            "prices",
            {"ticker": "NOPE9", "start": "2025-01-01", "end": "2025-02-01"},
            "no listed company has the ticker",
        ),
        (
            "prices",
            {"ticker": _listed(world)[2], "start": "2025-03-01", "end": "2025-02-01"},
            "is after end",
        ),
        (
            "prices",
            {"ticker": _listed(world)[2], "start": "1990-01-01", "end": "1990-02-01"},
            "before the world begins",
        ),
    ]
    for tool, arguments, message in cases:
        result, text = await _call(client, tool, **arguments)
        assert result.is_error, (tool, arguments)
        assert message in text and "\n" not in text and "Traceback" not in text, text


async def test_no_result_exceeds_the_budget(client: Client, world: Path) -> None:
    from erp_mcp import RESULT_BUDGET

    longest = world_rows(world, "SELECT url FROM document ORDER BY length(body) DESC LIMIT 1")[0]
    _, _, ticker = _listed(world)
    calls = [
        ("fetch", {"url": longest[0]}),
        (
            "prices",
            {"ticker": ticker, "start": "2020-01-01", "end": "2026-03-01", "page_size": 500},
        ),
        ("search", {"query": "revenue fiscal results quarter report", "k": 10}),
    ]
    for tool, arguments in calls:
        result = await client.call_tool(tool, arguments)
        assert len(json.dumps(result.structured_content)) <= RESULT_BUDGET


async def test_document_pages_over_http_need_the_token_and_escape_everything(world: Path):
    from erp_mcp import http_app
    from synthetic_world import build_world_server

    server = build_world_server(world, token="s3cret")
    app = http_app(server)
    url = world_rows(world, "SELECT url FROM document WHERE source_type = 'annual_report' LIMIT 1")[
        0
    ][0]
    path = "/" + url.split("/", 3)[3]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        assert (await http.get(path)).status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        page = await http.get(path, headers=headers)
        assert page.status_code == 200 and "<table>" in page.text and "<script" not in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]
        data = await http.get(path, headers={**headers, "Accept": "application/json"})
        assert data.json()["url"] == url
        missing = await http.get(path[:-1] + "0", headers={**headers, "Accept": "application/json"})
        assert missing.status_code == 404
        foreign = await http.get(path, headers={**headers, "Host": "evil.example"})
        assert foreign.status_code == 421


async def test_faults_are_injected_like_the_erps(world: Path) -> None:
    from erp_mcp import FaultConfig
    from synthetic_world import build_world_server

    server = build_world_server(world, faults=FaultConfig(error_rate=1.0, seed=3))
    async with Client(server) as session:
        result = await session.call_tool("world_info", {}, raise_on_error=False)
    assert result.is_error and result.content[0].text.startswith("TRANSIENT ERROR")
    assert "the research world is temporarily unavailable" in result.content[0].text


def test_search_engine_falls_back_to_rare_words_and_breaks_ties_by_order(world: Path) -> None:
    import sqlite3

    from synthetic_world._search import SearchEngine, query_words

    assert query_words("What was the revenue of ACME in FY2025?") == ["revenue", "acme", "fy2025"]
    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    (count,) = conn.execute("SELECT count(*) FROM document").fetchone()
    engine = SearchEngine(conn, count)
    _, name, _ = _listed(world)
    hits = engine.search(f"{name} zzzunknownword", 5)
    assert hits and all(name.split()[0] in h.title or name.split()[0] in h.snippet for h in hits)
    assert engine.search("zzzunknownword qqqnothing", 5) == []
    conn.close()
    assert dt.date.fromisoformat(hits[0].published_at)


def test_the_http_server_prints_where_it_is_how_and_its_faults(world: Path) -> None:
    """One start line on stderr, as the ERP's: address, auth (never the token), world, faults."""
    import time

    from tests.conftest import start_world_server, stop_process

    server, log = start_world_server(f"sqlite:///{world}", "--error-rate", "0.25", token="s3cr3t")
    try:
        deadline = time.monotonic() + 60
        while "serving MCP" not in log.read_text() and server.process.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
    finally:
        stop_process(server.process)
    lines = [line for line in log.read_text().splitlines() if "serving MCP" in line]
    assert lines == [
        f"synthetic_world: serving MCP at {server.url} (transport: streamable HTTP; auth: bearer "
        f"token; world: {world}; faults: 0.25 of tool calls)"
    ]
    assert "s3cr3t" not in log.read_text()


SERVING_NEEDS_NONE_OF = {
    "synthetic_world._generate",  # the world generator
    "synthetic_world._questions",  # question generation and its keys
    "synthetic_world._analyst",
    "synthetic_world._keys",
    "ledgerbench_core.dataset",  # the question-set format (and YAML)
    "yaml",
    "faker",  # the ERP generator's name pools
    "sqlalchemy",  # the ERP's database layer: a world server never reads an ERP
    "sqlmodel",
    "synthetic_erp._schema",
}
"""What a world server's start imported before issue 40 and serving never uses."""


def test_the_server_start_imports_only_what_serving_needs(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: ``synthetic_world serve`` is listening without having imported the generator,
    question generation or Faker (Python's own import log of the real start, up to the port)."""
    from tests.conftest import start_world_server, stop_process

    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # = python -X importtime
    server, log = start_world_server(f"sqlite:///{world}")  # returns once it listens
    try:
        imported = {
            line.rsplit("|", 1)[1].strip()
            for line in log.read_text().splitlines()
            if line.startswith("import time:") and "|" in line
        }
    finally:
        stop_process(server.process)
    assert "synthetic_world._server" in imported and "fastmcp" in imported  # the log is whole
    assert not imported & SERVING_NEEDS_NONE_OF, sorted(imported & SERVING_NEEDS_NONE_OF)
