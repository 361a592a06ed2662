"""The ERP server at scale (issue 27): the database does the work, through indexes; no result
builds more than its page; the resident objects stay out of the garbage collector's way; cursors
are signed and bound; and the defects the audit found stay fixed.

Query plans are read with SQLite's ``EXPLAIN QUERY PLAN`` for every statement a call runs (caught
on the engine), so a tool that would scan a ledger or a whole legal entity fails here, whatever
the timings of the machine. The default tier checks the default ERP; the slow tier a 10x one,
whose planner statistics are closer to a large ERP's.
"""

from __future__ import annotations

import gc
import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from sqlalchemy import Engine, event

from erp_mcp import build_server
from erp_mcp._tooling import RESULT_BUDGET, fit_budget
from tests.conftest import TEST_TOKEN

pytestmark = pytest.mark.timeout(300)

LARGE_TABLES = frozenset(
    {
        "customer_transaction",
        "vendor_transaction",
        "customer_settlement",
        "vendor_settlement",
        "customer",
        "vendor",
        "collection_activity",
        "collection_case",
        "collection_letter",
        "customer_dispute",
        "sales_order",
        "sales_order_line",
        "purchase_order",
        "purchase_order_line",
        "product_receipt",
        "vendor_invoice",
        "payment_journal",
        "payment_journal_line",
    }
)
"""Tables that grow with the ERP (the reference tables stay a few hundred rows at any scale)."""
LEDGERS = frozenset(
    {"customer_transaction", "vendor_transaction", "customer_settlement", "vendor_settlement"}
)


@pytest.fixture(scope="module")
def db_path(erp_db_url: str) -> Path:
    return Path(erp_db_url.removeprefix("sqlite:///"))


@pytest.fixture(scope="module")
def sql(db_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def server(erp_db_url: str):
    return build_server(erp_db_url, public_url="http://erp.test")


@contextmanager
def statements() -> Iterator[list[tuple[str, tuple]]]:
    """Every SQL statement (with its parameters) run by any engine inside the block."""
    seen: list[tuple[str, tuple]] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.append((statement, tuple(parameters or ())))

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", record)


def plan_steps(sql: sqlite3.Connection, statement: str, parameters: tuple) -> list[str]:
    """The EXPLAIN QUERY PLAN lines of a statement, with aliases replaced by their table."""
    aliases = dict(re.findall(r"\b(\w+) AS (\w+)\b", statement))
    aliases = {alias: table for table, alias in aliases.items()}
    steps = []
    for *_, detail in sql.execute("EXPLAIN QUERY PLAN " + statement, parameters):
        words = detail.split(" ")
        if len(words) > 1 and words[0] in ("SCAN", "SEARCH"):
            words[1] = aliases.get(words[1], words[1])
        steps.append(" ".join(words))
    return steps


def _table_of(step: str) -> str | None:
    words = step.split(" ")
    return words[1] if len(words) > 1 and words[0] in ("SCAN", "SEARCH") else None


def _beyond_legal_entity(step: str) -> bool:
    """Whether an index search is constrained by more than the legal entity."""
    match = re.search(r"\(([^()]*)\)", step)
    if match is None:
        return False
    terms = [t.strip() for t in match.group(1).split(" AND ")]
    return any(not re.match(r"(ANY\()?legal_entity", t) for t in terms)


def point_lookup_problems(steps: list[str]) -> list[str]:
    """Steps of a single-record call that read more than the record: any scan of a table that
    grows with the ERP, or a search of one by legal entity alone."""
    bad = []
    for step in steps:
        table = _table_of(step)
        if table not in LARGE_TABLES:
            continue
        if "AUTOMATIC" in step or step.startswith("SCAN") or not _beyond_legal_entity(step):
            bad.append(step)
    return bad


def aggregate_problems(steps: list[str], statement: str = "") -> list[str]:
    """Steps of an aggregate that read ledger rows, not just an index: an aggregate over a
    legal entity may read every entry of a covering index, never the table's rows. A page read
    in index order (a LIMIT and no sort of the whole result) stops after its rows, so it may
    walk a plain index."""
    paged = " LIMIT " in statement and "USE TEMP B-TREE FOR ORDER BY" not in steps
    bad = []
    for step in steps:
        table = _table_of(step)
        if table not in LARGE_TABLES or "INTEGER PRIMARY KEY" in step:
            continue
        covering = "COVERING INDEX" in step
        ordered_walk = paged and step.startswith(f"SCAN {table} USING INDEX")
        table_rows = step.startswith("SCAN") and not covering and not ordered_walk
        ledger_by_entity = table in LEDGERS and not covering and not _beyond_legal_entity(step)
        if "AUTOMATIC" in step or table_rows or ledger_by_entity:
            bad.append(step)
    return bad


def picks(sql: sqlite3.Connection) -> dict:
    """Records the single-record calls name, read from the database."""

    def one(query: str) -> tuple:
        return sql.execute(query).fetchone()

    return {
        "customer": one(
            "select legal_entity, customer_account from customer_transaction "
            "where open_amount_cur != 0 group by 1, 2 order by count(*) desc limit 1"
        ),
        "vendor": one(
            "select legal_entity, vendor_account from vendor_transaction "
            "group by 1, 2 order by count(*) desc limit 1"
        ),
        "order": one("select legal_entity, sales_id from sales_order limit 1 offset 3"),
        "po": one("select legal_entity, po_number from purchase_order limit 1 offset 3"),
        "invoice": one(
            "select legal_entity, invoice_id from vendor_invoice where po_number is not null "
            "limit 1 offset 3"
        ),
        "journal": one("select legal_entity, journal_id from payment_journal limit 1 offset 2"),
        "voucher": one("select legal_entity, debit_voucher from customer_settlement limit 1"),
        "case": one(
            "select legal_entity, case_id from collection_activity where case_id is not null "
            "limit 1"
        ),
        "agent": one(
            "select legal_entity, collections_agent_id from customer "
            "where collections_agent_id is not null group by 1, 2 limit 1"
        ),
    }


def point_calls(p: dict) -> list[tuple[str, dict]]:
    (cle, cust), (vle, vend) = p["customer"], p["vendor"]
    party = {"legal_entity": cle, "account": cust}
    return [
        ("get_customer", party),
        ("get_vendor", {"legal_entity": vle, "account": vend}),
        ("get_aging", party),
        ("get_aging", {**party, "include_transactions": True}),
        ("get_aging", {**party, "as_of": "2025-11-30", "include_transactions": True}),
        ("list_customer_transactions", party),
        ("list_vendor_transactions", {"legal_entity": vle, "account": vend}),
        ("list_settlements", party),
        ("list_settlements", {"legal_entity": p["voucher"][0], "voucher": p["voucher"][1]}),
        ("list_settlements", {"voucher": p["voucher"][1]}),
        ("list_disputes", party),
        ("list_collection_letters", party),
        ("list_collection_cases", party),
        ("list_collection_activities", {"legal_entity": p["case"][0], "case_id": p["case"][1]}),
        ("list_sales_orders", party),
        ("get_sales_order", {"legal_entity": p["order"][0], "sales_id": p["order"][1]}),
        ("list_purchase_orders", {"legal_entity": vle, "account": vend}),
        ("get_purchase_order", {"legal_entity": p["po"][0], "po_number": p["po"][1]}),
        ("get_vendor_invoice", {"legal_entity": p["invoice"][0], "invoice_id": p["invoice"][1]}),
        ("get_payment_journal", {"legal_entity": p["journal"][0], "journal_id": p["journal"][1]}),
        ("get_vendor_spend", {"legal_entity": vle, "account": vend}),
        (
            "query_entity_set",
            {
                "entity_set": "customer-transactions",
                "legal_entity": cle,
                "filters": [{"field": "customer_account", "op": "eq", "value": cust}],
            },
        ),
    ]


AGGREGATE_CALLS = [
    ("get_aging", {}),
    ("get_aging", {"legal_entity": "USMF", "group_by": "legal_entity"}),
    ("get_aging", {"party_type": "vendor", "group_by": "group", "legal_entity": "USMF"}),
    ("rank_parties", {"measure": "invoiced", "legal_entity": "USMF", "date_from": "2025-01-01"}),
    ("rank_parties", {"measure": "paid", "party_type": "vendor"}),
    ("rank_parties", {"measure": "open"}),
    ("get_vendor_spend", {"legal_entity": "USMF", "top_n": 10}),
    (
        "query_entity_set",
        {
            "entity_set": "customer-transactions",
            "group_by": ["legal_entity", "txn_type"],
            "aggregates": [{"op": "sum", "field": "amount_acct"}],
        },
    ),
    (
        "query_entity_set",
        {
            "entity_set": "customer-transactions",
            "legal_entity": "USMF",
            "filters": [{"field": "txn_type", "op": "eq", "value": "sales_invoice"}],
            "group_by": ["customer_account"],
            "aggregates": [{"op": "sum", "field": "amount_acct"}],
            "order_by": [{"field": "sum_amount_acct", "descending": True}],
            "top": 10,
        },
    ),
    ("list_collection_cases", {}),
]


async def plans_of(server, sql, calls) -> list[tuple[str, dict, list[tuple[str, list[str]]]]]:
    """Per call: each statement it ran with its query plan."""
    out = []
    async with Client(server) as client:
        await client.call_tool("erp_info", {})  # the runtime is open: only the call's queries
        for name, args in calls:
            with statements() as seen:
                result = await client.call_tool(name, args, raise_on_error=False)
            assert not result.is_error, (name, args, result.content[0].text)
            assert seen, (name, args)
            plans = [(statement, plan_steps(sql, statement, params)) for statement, params in seen]
            out.append((name, args, plans))
    return out


async def check_plans(server, sql) -> None:
    problems = []
    for name, args, plans in await plans_of(server, sql, point_calls(picks(sql))):
        if bad := [b for _, steps in plans for b in point_lookup_problems(steps)]:
            problems.append(f"{name} {json.dumps(args)}: {bad}")
    for name, args, plans in await plans_of(server, sql, AGGREGATE_CALLS):
        if bad := [b for statement, steps in plans for b in aggregate_problems(steps, statement)]:
            problems.append(f"{name} {json.dumps(args)}: {bad}")
    assert problems == []


async def test_query_plans_read_indexes_never_a_ledger_or_a_legal_entity(server, sql):
    await check_plans(server, sql)


def test_plan_checks_catch_scans():
    """The checks above flag what the audit found: a voucher lookup scanning its legal entity,
    activities counted per case without an index, a sum over a ledger's rows."""
    assert point_lookup_problems(
        ["SEARCH customer_settlement USING INDEX sqlite_autoindex_x_1 (legal_entity=?)"]
    )
    assert point_lookup_problems(["SCAN collection_activity"])
    assert aggregate_problems(["SCAN customer_transaction"])
    assert aggregate_problems(
        ["SEARCH customer_transaction USING INDEX ix_custtrans_party (legal_entity=?)"]
    )
    assert not aggregate_problems(
        ["SCAN customer_transaction USING COVERING INDEX ix_custtrans_by_type"]
    )
    walk = ["SCAN collection_case USING INDEX ix_collcase_opened"]
    assert not aggregate_problems(walk, "SELECT * FROM collection_case ORDER BY x LIMIT ?")
    assert aggregate_problems([*walk, "USE TEMP B-TREE FOR ORDER BY"], "... LIMIT ?")
    assert not point_lookup_problems(
        ["SEARCH customer_transaction USING INDEX ix_custtrans_party (legal_entity=? AND "
         "customer_account=?)"]
    )  # fmt: skip


async def test_the_invoice_register_reads_the_rows_of_its_page_only(server, sql):
    """At 100x a status matched 18,736 invoices, and the page, the sums and the counts each read
    all their rows: the indexes now answer the counts and sums and choose the page, and only
    the page's rows are read, by primary key."""
    call = ("list_vendor_invoices", {"status": ["pending_approval"], "page_size": 20})
    [(_, _, plans)] = await plans_of(server, sql, [call])
    steps = [step for _, lines in plans for step in lines if _table_of(step) == "vendor_invoice"]
    assert steps
    assert [s for s in steps if "COVERING INDEX" not in s and "INTEGER PRIMARY KEY" not in s] == []


async def test_an_agents_activities_are_counted_and_paged_off_one_index(server, sql):
    """An agent's activities due on a date (hundreds at 100x): the counts read the owner index
    alone, the page is walked in that index's order (no sort of every match) and only its rows
    are read; the worklist's due and past-due counts read the index alone too."""
    le, agent, day = sql.execute(
        "select legal_entity, owner_agent_id, due_date from collection_activity "
        "group by 1, 2, 3 order by count(*) desc limit 1"
    ).fetchone()
    calls = [
        ("list_collection_activities",
         {"owner_agent_id": agent, "legal_entity": le, "due_from": day, "due_to": day,
          "page_size": 5}),
        ("get_collections_worklist", {"agent_id": agent, "legal_entity": le, "as_of": day}),
    ]  # fmt: skip
    listed, worklist = await plans_of(server, sql, calls)
    listing = listed[2]
    assert all("USE TEMP B-TREE FOR ORDER BY" not in lines for _, lines in listing), listing
    for statement, lines in listing:
        reads = [line for line in lines if _table_of(line) == "collection_activity"]
        if "count(" in statement:
            assert reads and all("COVERING INDEX ix_collact_owner_due" in r for r in reads), lines
    counts = [lines for st, lines in worklist[2] if "count(CASE" in st]
    assert counts and all("COVERING INDEX ix_collact_owner_due" in r for r in counts[0]), counts


# -- results ---------------------------------------------------------------------------------------


async def test_aging_of_a_group_member_lists_each_open_item_once(server, sql):
    """get_aging with account, include_transactions and group_id listed every open item once per
    party of the group (269 items for 2 vouchers in the audit)."""
    le, account = picks(sql)["customer"]
    (group,) = sql.execute(
        "select group_id from customer where legal_entity = ? and account = ?", (le, account)
    ).fetchone()
    vouchers = [
        v
        for (v,) in sql.execute(
            "select voucher from customer_transaction where legal_entity = ? and "
            "customer_account = ? and open_amount_cur != 0 order by voucher",
            (le, account),
        )
    ]
    assert len(vouchers) >= 2
    async with Client(server) as client:
        args = {"legal_entity": le, "account": account, "include_transactions": True}
        plain = (await client.call_tool("get_aging", args)).structured_content
        grouped = (
            await client.call_tool("get_aging", {**args, "group_id": group})
        ).structured_content
    assert sorted(t["voucher"] for t in grouped["transactions"]) == vouchers
    assert grouped["transactions"] == plain["transactions"]
    assert grouped["rows"] == plain["rows"]


async def test_cursors_are_signed_and_bound_to_their_tool_and_filters(
    server, erp_db_url, monkeypatch
):
    async with Client(server) as client:
        args = {"page_size": 3}
        first = (await client.call_tool("list_customer_transactions", args)).structured_content
        cursor = first["next_cursor"]
        payload, signature = cursor.split(".")
        body = json.loads(_unb64(payload))
        assert body["o"] == 3
        second = await client.call_tool("list_customer_transactions", {**args, "cursor": cursor})
        assert second.structured_content["offset"] == 3

        moved = _b64(json.dumps({**body, "o": 300}).encode()) + "." + signature
        other_tool = await client.call_tool(
            "list_vendor_transactions", {**args, "cursor": cursor}, raise_on_error=False
        )
        other_filters = await client.call_tool(
            "list_customer_transactions", {**args, "status": "open", "cursor": cursor},
            raise_on_error=False,
        )  # fmt: skip
        forged = await client.call_tool(
            "list_customer_transactions", {**args, "cursor": moved}, raise_on_error=False
        )
        query = {"entity_set": "customers", "top": 2}
        page = (await client.call_tool("query_entity_set", query)).structured_content
        into_lists = await client.call_tool(
            "list_customer_transactions", {**args, "cursor": page["next_cursor"]},
            raise_on_error=False,
        )  # fmt: skip
    assert other_tool.is_error and "another tool" in other_tool.content[0].text
    assert other_filters.is_error and "different filters" in other_filters.content[0].text
    assert forged.is_error and "not a cursor this server issued" in forged.content[0].text
    assert into_lists.is_error
    # a server with another key (another process, or a restart) does not take them
    import erp_mcp._cursors as cursors

    monkeypatch.setenv(cursors.CURSOR_SECRET_ENV, "another-server")
    cursors.cursor_key.cache_clear()
    try:
        async with Client(build_server(erp_db_url)) as other:
            elsewhere = await other.call_tool(
                "list_customer_transactions", {**args, "cursor": cursor}, raise_on_error=False
            )
    finally:
        cursors.cursor_key.cache_clear()
    assert elsewhere.is_error and "issued" in elsewhere.content[0].text


def test_cursors_made_with_a_shared_secret_work_on_every_replica(monkeypatch):
    import erp_mcp._cursors as cursors
    from erp_mcp._tools_ledger import TransactionArgs

    monkeypatch.setenv(cursors.CURSOR_SECRET_ENV, "shared-by-replicas")
    cursors.cursor_key.cache_clear()
    try:
        args = TransactionArgs(page_size=5)
        with cursors.tool_scope("list_customer_transactions"):
            made = cursors.encode_cursor(args, 10)
        cursors.cursor_key.cache_clear()  # another process with the same secret
        with cursors.tool_scope("list_customer_transactions"):
            assert cursors.decode_cursor(made, args) == 10
    finally:
        cursors.cursor_key.cache_clear()


def _b64(raw: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_the_budget_cuts_every_long_list_until_the_result_fits():
    """A worklist at 100x held two lists that each exceeded the budget (357,664 characters):
    cutting the largest one and giving up left the result over budget."""
    from erp_mcp._records import StrictModel

    class Result(StrictModel):
        first: list[str]
        second: list[str]
        truncated: bool = False

    big = Result(first=["x" * 1000] * 300, second=["y" * 1000] * 200)
    fitted = fit_budget(big, Result(first=[], second=[]))
    assert len(fitted.model_dump_json()) <= RESULT_BUDGET
    assert fitted.truncated is True and fitted.first == [] and 0 < len(fitted.second) < 200


def test_every_result_the_budget_can_cut_says_so():
    """A payment journal of 250 lines (10x) was cut to fit the budget without a word: every
    result with a list the budget may cut has a ``truncated`` flag (pages also a cursor)."""
    import typing

    from erp_mcp._tooling import tools_for

    bounded = {"erp_info", "search_parties", "list_entity_sets", "describe_entity_set"}
    silent = []
    for tool in tools_for("all"):
        fields = tool.output_model.model_fields
        lists = [n for n, f in fields.items() if typing.get_origin(f.annotation) is list]
        if lists and tool.name not in bounded and "truncated" not in fields:
            silent.append(tool.name)
    assert silent == []


def test_resident_objects_are_frozen_out_of_collections(erp_db_url):
    from erp_mcp._runtime import RuntimeHolder

    gc.unfreeze()
    holder = RuntimeHolder(erp_db_url, None)
    try:
        runtime = holder.get()
        assert gc.get_freeze_count() > 10_000
        assert len(runtime.parties.entries) == 2000
    finally:
        holder.close()
    assert gc.get_freeze_count() == 0


async def test_account_completions_match_every_party(server, sql):
    accounts = sorted(
        {a for (a,) in sql.execute("select account from customer where legal_entity = 'USMF'")}
    )
    prefix = accounts[0][:-2]
    expected = [a for a in accounts if a.startswith(prefix)]
    async with Client(server) as client:
        got = await client.complete(
            {"type": "ref/resource", "uri": "erp://{legal_entity}/{entity_set}/{key}"},
            {"name": "key", "value": prefix.lower()},
            context_arguments={"legal_entity": "USMF", "entity_set": "customers"},
        )
    assert got.values == expected[:100]
    assert got.total == len(expected)


# -- defects ---------------------------------------------------------------------------------------


async def test_non_ascii_credentials_are_refused_with_401(erp_server_with_token):
    """A non-ASCII bearer token or link signature got a 500 and a traceback."""
    base = erp_server_with_token.base_url
    page = f"{base}/erp/USMF/customers/SYNCUS-0001"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as http:
        statuses = []
        for token in ("Bearer \u00e9t\u00e9".encode(), b"Bearer \xff\xfe", "Bearer é".encode()):
            statuses.append((await http.get(page, headers={"Authorization": token})).status_code)
            mcp = await http.post(f"{base}/mcp", json=init,
                                  headers={**accept, "Authorization": token})  # fmt: skip
            statuses.append(mcp.status_code)
        import time

        expires = int(time.time()) + 60
        for signature in ("%C3%A9", "%E2%82%AC" * 10, "ok"):
            link = f"{page}?expires={expires}&signature={signature}"
            statuses.append((await http.get(link)).status_code)
        statuses.append((await http.get(f"{page}?expires=%C2%B2&signature=x")).status_code)
        good = await http.get(page, headers={"Authorization": f"Bearer {TEST_TOKEN}"})
    assert statuses == [401] * len(statuses)
    assert good.status_code == 200


async def test_a_chunked_body_over_the_limit_gets_413(erp_server):
    """Without a Content-Length the limit was met mid-read and the request failed with 500."""
    from erp_mcp._security import MAX_REQUEST_BYTES

    async def body():
        for _ in range(MAX_REQUEST_BYTES // 8192 + 2):
            yield b" " * 8192

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    async def small():
        yield json.dumps(call).encode()

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient() as http:
        too_big = await http.post(erp_server.url, content=body(), headers=headers)
        fine = await http.post(erp_server.url, content=small(), headers=headers)
    assert too_big.status_code == 413
    assert "request body over" in too_big.json()["error"]
    assert fine.status_code != 413 and fine.status_code < 500


async def test_a_missing_record_is_a_not_found_error(server):
    """It was -32603 (internal error)."""
    from mcp.shared.exceptions import MCPError

    async with Client(server) as client:
        for uri in ("erp://USMF/customers/NO-SUCH", "erp://NOPE/customers/SYNCUS-0001"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            assert caught.value.error.code == -32602, caught.value.error
            assert caught.value.error.data == {"uri": uri}
            assert "not found" in caught.value.error.message.lower()


async def test_completion_for_an_unknown_prompt_is_an_error(server):
    from mcp.shared.exceptions import MCPError

    async with Client(server) as client:
        known = await client.complete(
            {"type": "ref/prompt", "name": "aging_review"}, {"name": "legal_entity", "value": "U"}
        )
        assert "USMF" in known.values
        for ref in (
            {"type": "ref/prompt", "name": "no_such_prompt"},
            {"type": "ref/resource", "uri": "erp://nothing/{x}"},
        ):
            with pytest.raises(MCPError) as caught:
                await client.complete(ref, {"name": "legal_entity", "value": "U"})
            message = caught.value.error.message
            assert "unknown" in message and ("aging_review" in message or "erp://{" in message)


def test_a_one_second_link_works_for_a_second():
    """``link --ttl 1`` rounded the expiry down: the link could expire before it was printed."""
    from urllib.parse import parse_qs, urlsplit

    from erp_mcp._pages import signed_link

    for now in (1000.0, 1000.4, 1000.999):
        link = signed_link("http://x/erp/USMF/customers/A", "t", 1, now=now)
        expires = int(parse_qs(urlsplit(link).query)["expires"][0])
        assert expires >= now + 1


async def test_prompt_arguments_say_what_they_are(server):
    async with Client(server) as client:
        prompts = await client.list_prompts()
    described = {(p.name, a.name): a.description or "" for p in prompts for a in p.arguments}
    assert len(described) == 6
    for key, text in described.items():
        assert text and "JSON schema" not in text, key


# -- the slow tier: a 10x ERP ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sql_10x(erp_10x_db_url: str) -> Iterator[sqlite3.Connection]:
    path = erp_10x_db_url.removeprefix("sqlite:///")
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield connection
    connection.close()


@pytest.mark.slow
async def test_query_plans_at_10x(erp_10x_db_url, sql_10x):
    await check_plans(build_server(erp_10x_db_url, public_url="http://erp.test"), sql_10x)


@pytest.mark.slow
async def test_no_result_exceeds_the_budget_at_10x(erp_10x_db_url, sql_10x):
    from tests.mcp_budget import largest_arguments

    sizes = {}
    async with Client(build_server(erp_10x_db_url, public_url="http://erp.test")) as client:
        for tool, many in largest_arguments(sql_10x).items():
            for args in many:
                result = await client.call_tool(tool, args, raise_on_error=False)
                assert not result.is_error, (tool, args, result.content[0].text)
                size = len(result.content[0].text)
                sizes[(tool, json.dumps(args))] = size
                assert size <= RESULT_BUDGET, (tool, args, size)
                content = result.structured_content
                if size > 0.9 * RESULT_BUDGET:  # cut by the budget (it says so) or complete
                    complete = content.get("returned") == args.get("top")
                    assert content.get("truncated") is True or complete, (tool, args)
    assert max(sizes.values()) > 0.9 * RESULT_BUDGET  # the budget, not the data, bounds them


# -- the summary tables ----------------------------------------------------------------------------

SUMMARY_TABLES = frozenset(
    {"summary_ledger_party", "summary_party_period", "summary_open_customer", "summary_open_party"}
)
"""Summary tables that grow with the parties (the others with the dates or not at all)."""


def summary_calls(p: dict) -> list[tuple[str, dict]]:
    """The issue-27 aggregates that read the summary tables (bench/bench_mcp.py's arguments)."""
    return [
        ("rank_parties", {"measure": "invoiced", "legal_entity": "USMF",
                          "date_from": "2025-01-01", "date_to": "2025-12-31", "top_n": 10}),
        ("query_entity_set", AGGREGATE_CALLS[-2][1]),
        ("query_entity_set", {"entity_set": "customer-transactions",
                              "group_by": ["legal_entity", "txn_type"],
                              "aggregates": [{"op": "sum", "field": "amount_acct"},
                                             {"op": "count"}]}),
        # transaction dates: a range per series off the running sums, days off the day rows
        ("query_entity_set", {"entity_set": "customer-transactions", "group_by": ["legal_entity"],
                              "filters": [{"field": "txn_date", "op": "ge",
                                           "value": "2025-10-01"}],
                              "aggregates": [{"op": "sum", "field": "amount_acct"}]}),
        ("query_entity_set", {"entity_set": "vendor-transactions",
                              "group_by": ["txn_date", "txn_type"],
                              "filters": [{"field": "txn_date", "op": "ge", "value": "2025-07-01"},
                                          {"field": "txn_date", "op": "le", "value": "2025-09-30"}],
                              "aggregates": [{"op": "count"}], "top": 100}),
        ("query_entity_set", {"entity_set": "vendor-transactions", "group_by": ["currency"],
                              "filters": [{"field": "due_date", "op": "ge",
                                           "value": "2026-03-01"}],
                              "aggregates": [{"op": "sum", "field": "open_amount_acct"}]}),
        ("get_aging", {"legal_entity": "USMF", "group_by": "legal_entity"}),
        ("get_aging", {"party_type": "vendor", "group_by": "group", "legal_entity": "USMF"}),
        ("get_vendor_spend", {"legal_entity": "USMF", "top_n": 10}),
        ("get_collections_worklist", {"agent_id": p["agent"][1], "legal_entity": p["agent"][0],
                                      "as_of": "2026-03-12"}),
    ]  # fmt: skip


async def check_summary_plans(server, sql) -> None:
    """Each hot aggregate reads summary rows through an index, and no ledger at all."""
    problems = []
    for name, args, plans in await plans_of(server, sql, summary_calls(picks(sql))):
        steps = [step for _, found in plans for step in found]
        tables = {_table_of(step) for step in steps}
        if not tables & {t for t in tables if t and t.startswith("summary_")}:
            problems.append(f"{name} {json.dumps(args)}: no summary read: {steps}")
        if tables & LEDGERS:
            problems.append(f"{name} {json.dumps(args)}: reads a ledger: {steps}")
        scans = [s for s in steps if s.startswith("SCAN") and _table_of(s) in SUMMARY_TABLES]
        if scans:
            problems.append(f"{name} {json.dumps(args)}: scans a summary: {scans}")
        for statement, found in plans:
            if bad := aggregate_problems(found, statement):
                problems.append(f"{name} {json.dumps(args)}: {bad}")
    assert problems == []


async def test_hot_aggregates_read_the_summary_tables_by_index(server, sql):
    await check_summary_plans(server, sql)


AGING_PAGES = [
    {},
    {"party_type": "vendor", "sort_by": "overdue"},
    {"legal_entity": "USMF", "sort_by": "key", "limit": 20},
    {"legal_entity": "USMF", "aging_basis": "txn_date", "sort_by": "overdue", "limit": 5},
]
"""get_aging per party today: the page is read off an index of the per-party sums."""


async def test_aging_of_every_party_reads_only_its_page(server, sql):
    """The page's parties come off an index in the page's order (no sort of every party), and
    the ledger is searched for those parties' open items only."""
    problems = []
    for _, args, plans in await plans_of(server, sql, [("get_aging", a) for a in AGING_PAGES]):
        steps = [step for _, found in plans for step in found]
        page = [(st, found) for st, found in plans if "FROM summary_open_party" in st]
        if not any(" LIMIT " in st and "USE TEMP B-TREE FOR ORDER BY" not in f for st, f in page):
            problems.append(f"{args}: no page off an index: {page}")
        for step in steps:
            if _table_of(step) in LEDGERS and not re.search(r"_account=\?( AND |\))", step):
                problems.append(f"{args}: reads the ledger beyond the page's parties: {step}")
    assert problems == []


def test_summary_plan_checks_catch_a_ledger_read():
    steps = ["SEARCH customer_transaction USING COVERING INDEX ix_custtrans_by_type (x=?)"]
    assert {_table_of(s) for s in steps} & LEDGERS
    assert _table_of("SCAN summary_party_period") in SUMMARY_TABLES


@pytest.mark.slow
async def test_summary_plans_at_10x(erp_10x_db_url, sql_10x):
    await check_summary_plans(build_server(erp_10x_db_url, public_url="http://erp.test"), sql_10x)
