"""ERP MCP tools in memory: each checked against values computed with plain SQL on the database."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest
from fastmcp import Client
from inline_snapshot import snapshot

from erp_mcp import build_server

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def db_path(erp_db_url: str) -> Path:
    return Path(erp_db_url.removeprefix("sqlite:///"))


@pytest.fixture(scope="module")
def sql(db_path: Path):
    """A plain sqlite3 read-only connection: the independent source of expected values."""
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def server(erp_db_url: str):
    return build_server(erp_db_url, public_url="http://erp.test")


@pytest.fixture
async def client(server):
    async with Client(server) as c:
        yield c


async def call(client: Client, name: str, **args):
    result = await client.call_tool(name, args)
    return result.structured_content


async def call_error(client: Client, name: str, **args) -> str:
    result = await client.call_tool(name, args, raise_on_error=False)
    assert result.is_error, f"{name}({args}) should fail"
    return result.content[0].text


def today(sql) -> dt.date:
    return dt.date.fromisoformat(
        sql.execute("select value from erp_meta where key='as_of'").fetchone()[0]
    )


def cents(value) -> int:
    return round(float(value or 0) * 100)


def _walk_records(value, found: list[dict]) -> None:
    if isinstance(value, dict):
        if "url" in value and any(k in value for k in ("legal_entity", "account")):
            found.append(value)
        for item in value.values():
            _walk_records(item, found)
    elif isinstance(value, list):
        for item in value:
            _walk_records(item, found)


# --------------------------------------------------------------------------------------------------
# catalogue
# --------------------------------------------------------------------------------------------------


def test_every_documented_field_has_its_docstring_as_description(server) -> None:
    """Models read their field docstrings once per module (erp_mcp._field_docs), not with
    pydantic's use_attribute_docstrings: each documented field of every tool model written in
    source (record extensions and world models included) must carry the description pydantic's own
    reading gives, or the catalogue would lose it without a sound."""
    import inspect

    from pydantic._internal._docs_extraction import extract_docstrings_from_cls

    import synthetic_world._tools  # noqa: F401  (its models are StrictModels too)
    from erp_mcp._records import GeneratedRecord, StrictModel

    checked, extensions, pending = 0, set(), list(StrictModel.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        own = inspect.get_annotations(model)
        if not own:
            continue  # no fields of its own
        try:
            inspect.getsourcelines(model)
        except (OSError, TypeError):
            continue
        for name, doc in extract_docstrings_from_cls(model, use_inspect=True).items():
            if name in own:
                assert model.model_fields[name].description == doc, (model.__qualname__, name)
                checked += 1
                if issubclass(model, GeneratedRecord):
                    extensions.add(model.__qualname__)
    assert checked >= 100
    assert len(extensions) >= 5


async def test_tool_catalogue_is_stable_typed_and_read_only(client):
    tools = await client.list_tools()
    catalogue = {t.name: sorted(t.input_schema.get("properties", {})) for t in tools}
    assert catalogue == snapshot(
        {
            "erp_info": [],
            "search_parties": ["legal_entity", "limit", "min_score", "party_type", "query"],
            "get_customer": ["account", "legal_entity"],
            "get_vendor": ["account", "legal_entity"],
            "list_reference_data": [
                "date_from",
                "date_to",
                "from_currency",
                "kind",
                "legal_entity",
                "limit",
                "party_type",
                "to_currency",
            ],
            "get_aging": [
                "account",
                "aging_basis",
                "as_of",
                "bucket_edges",
                "currency",
                "group_by",
                "group_id",
                "include_transactions",
                "legal_entity",
                "limit",
                "party_type",
                "sort_by",
            ],
            "list_customer_transactions": [
                "account",
                "currency",
                "cursor",
                "date_from",
                "date_to",
                "descending",
                "document_number",
                "due_from",
                "due_to",
                "legal_entity",
                "max_amount",
                "min_amount",
                "overdue_as_of",
                "page",
                "page_size",
                "sort_by",
                "status",
                "txn_type",
            ],
            "list_vendor_transactions": [
                "account",
                "currency",
                "cursor",
                "date_from",
                "date_to",
                "descending",
                "document_number",
                "due_from",
                "due_to",
                "legal_entity",
                "max_amount",
                "min_amount",
                "overdue_as_of",
                "page",
                "page_size",
                "sort_by",
                "status",
                "txn_type",
            ],
            "list_settlements": [
                "account",
                "cursor",
                "date_from",
                "date_to",
                "legal_entity",
                "page",
                "page_size",
                "party_type",
                "voucher",
            ],
            "list_disputes": [
                "account",
                "cursor",
                "kind",
                "legal_entity",
                "opened_from",
                "opened_to",
                "page",
                "page_size",
                "status",
            ],
            "list_cash_discounts": [
                "account",
                "as_of",
                "cursor",
                "expiring_within_days",
                "legal_entity",
                "page",
                "page_size",
                "party_type",
                "state",
            ],
            "rank_parties": [
                "ascending",
                "date_from",
                "date_to",
                "legal_entity",
                "measure",
                "party_type",
                "top_n",
            ],
            "list_sales_orders": [
                "account",
                "cursor",
                "date_from",
                "date_to",
                "legal_entity",
                "min_amount",
                "order_type",
                "page",
                "page_size",
                "status",
            ],
            "get_sales_order": ["legal_entity", "sales_id"],
            "list_purchase_orders": [
                "account",
                "cursor",
                "date_from",
                "date_to",
                "legal_entity",
                "page",
                "page_size",
                "status",
            ],
            "get_purchase_order": ["legal_entity", "po_number"],
            "list_vendor_invoices": [
                "account",
                "approver",
                "cursor",
                "date_from",
                "date_to",
                "due_from",
                "due_to",
                "legal_entity",
                "match_status",
                "page",
                "page_size",
                "po_number",
                "status",
            ],
            "get_vendor_invoice": ["invoice_id", "legal_entity"],
            "list_payment_journals": [
                "account",
                "cursor",
                "date_from",
                "date_to",
                "legal_entity",
                "method_of_payment",
                "page",
                "page_size",
                "source",
                "status",
            ],
            "get_payment_journal": ["journal_id", "legal_entity"],
            "get_vendor_spend": ["account", "fiscal_year", "legal_entity", "top_n"],
            "list_collection_letters": [
                "account",
                "cursor",
                "date_from",
                "date_to",
                "legal_entity",
                "level",
                "page",
                "page_size",
                "sequence",
            ],
            "list_collection_activities": [
                "account",
                "activity_type",
                "case_id",
                "category",
                "cursor",
                "due_from",
                "due_to",
                "legal_entity",
                "owner_agent_id",
                "page",
                "page_size",
                "status",
            ],
            "list_collection_cases": [
                "account",
                "cursor",
                "legal_entity",
                "opened_from",
                "opened_to",
                "owner_agent_id",
                "page",
                "page_size",
                "status",
            ],
            "get_collections_worklist": [
                "activity_limit",
                "agent_id",
                "as_of",
                "legal_entity",
                "limit",
                "min_overdue",
                "pool_id",
            ],
            "list_entity_sets": [],
            "describe_entity_set": ["entity_set"],
            "query_entity_set": [
                "aggregates",
                "count_only",
                "cursor",
                "entity_set",
                "filters",
                "group_by",
                "legal_entity",
                "order_by",
                "select",
                "skip",
                "top",
            ],
        }
    )
    for tool in tools:
        assert tool.annotations.read_only_hint is True, tool.name
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        assert "additionalProperties" not in tool.input_schema, tool.name  # lean; see below
        assert 30 < len(tool.description or "") <= 300, tool.name  # what a model needs, no more
        refused = await client.call_tool(tool.name, {"bogus": 1}, raise_on_error=False)
        assert refused.is_error, tool.name  # an unknown argument is still refused, by name
        assert "bogus: unknown argument" in refused.content[0].text, tool.name


async def test_listed_schemas_are_self_contained_and_inlined_once_per_tool(erp_db_url):
    """Some clients cannot follow ``$ref``: every listed schema is inlined, and the server does
    that once per tool, not on every ``tools/list`` (each agent session lists the tools)."""
    import json

    from erp_mcp._middleware import InlinedSchemas

    server = build_server(erp_db_url)
    inliner = next(m for m in server.middleware if isinstance(m, InlinedSchemas))
    listings = []
    for _ in range(2):
        async with Client(server) as session:
            listings.append([tool.model_dump(mode="json") for tool in await session.list_tools()])
            await session.list_tools()
    assert listings[0] == listings[1]
    assert not [t["name"] for t in listings[0] if "$ref" in json.dumps(t)]
    with_refs = [t for t in listings[0] if "$defs" in json.dumps(t)]
    assert len(inliner._inlined) == len(listings[0])
    assert with_refs == [], "inlined schemas keep no $defs to refer to"


async def test_toolsets_split_finance_and_generic(erp_db_url):
    async with Client(build_server(erp_db_url, toolset="generic")) as c:
        names = {t.name for t in await c.list_tools()}
    assert names == {"list_entity_sets", "describe_entity_set", "query_entity_set"}
    async with Client(build_server(erp_db_url, toolset="finance")) as c:
        names = {t.name for t in await c.list_tools()}
    assert "get_aging" in names and "query_entity_set" not in names and "ping" not in names


# --------------------------------------------------------------------------------------------------
# ERP facts and parties
# --------------------------------------------------------------------------------------------------


async def test_erp_info_matches_meta(client, sql):
    info = await call(client, "erp_info")
    meta = dict(sql.execute("select key, value from erp_meta").fetchall())
    assert info["today"] == meta["as_of"]
    assert info["snapshot_hash"] == meta["snapshot_hash"]
    les = {r["code"]: r["accounting_currency"] for r in sql.execute("select * from legal_entity")}
    assert {le["code"]: le["accounting_currency"] for le in info["legal_entities"]} == les
    counts = dict(sql.execute("select legal_entity, count(*) from customer group by 1").fetchall())
    assert {le["code"]: le["customer_count"] for le in info["legal_entities"]} == counts


async def test_search_parties_handles_typos_partial_names_and_accounts(client, sql):
    row = sql.execute(
        "select legal_entity, account, name from customer where length(name) > 14 "
        "order by account limit 1 offset 7"
    ).fetchone()
    name = row["name"]
    typo = name[:4] + name[5:]  # drop a letter
    spaced = name[:6] + " " + name[6:]
    for query in (typo, spaced, name.split()[0] + " " + name.split()[1], row["account"]):
        found = await call(client, "search_parties", query=query, party_type="customer")
        accounts = [c["account"] for c in found["candidates"][:3]]
        assert row["account"] in accounts, (query, found["candidates"][:3])
    exact = await call(client, "search_parties", query=row["account"])
    best = exact["candidates"][0]
    assert (best["account"], best["score"], best["match"]) == (row["account"], 100.0, "account")
    assert best["url"] == f"http://erp.test/erp/{row['legal_entity']}/customers/{row['account']}"


async def test_search_parties_returns_same_name_in_every_legal_entity(client, sql):
    name, les = sql.execute(
        "select name, group_concat(legal_entity) from customer group by name "
        "having count(distinct legal_entity) > 1 order by name limit 1"
    ).fetchone()
    found = await call(client, "search_parties", query=name, party_type="customer")
    top = {c["legal_entity"] for c in found["candidates"] if c["score"] == 100.0}
    assert top == set(les.split(","))
    assert found["ambiguous"] is True


async def test_get_customer_matches_tables(client, sql):
    row = sql.execute(
        "select c.* from customer c where exists (select 1 from customer_transaction t "
        "where t.legal_entity=c.legal_entity and t.customer_account=c.account "
        "and t.open_amount_cur != 0) order by account limit 1 offset 3"
    ).fetchone()
    details = await call(
        client, "get_customer", account=row["account"], legal_entity=row["legal_entity"]
    )
    customer = details["customer"]
    for column in ("name", "payment_terms", "credit_rating", "contact_email", "group_id"):
        assert customer[column] == row[column]
    assert cents(customer["credit_limit"]) == cents(row["credit_limit"])
    assert customer["credit_hold"] == bool(row["credit_hold"])
    group_name = sql.execute(
        "select name from customer_group where legal_entity=? and group_id=?",
        (row["legal_entity"], row["group_id"]),
    ).fetchone()[0]
    assert details["group"]["name"] == group_name
    balance = sql.execute(
        "select sum(open_amount_acct) from customer_transaction where legal_entity=? and "
        "customer_account=? and open_amount_cur != 0 and posted and txn_date <= ?",
        (row["legal_entity"], row["account"], today(sql).isoformat()),
    ).fetchone()[0]
    assert cents(details["balance"]["balance_acct"]) == cents(balance)
    assert cents(details["credit_available_acct"]) == cents(row["credit_limit"]) - cents(balance)
    if row["collections_agent_id"]:
        assert details["collections_agent"]["agent_id"] == row["collections_agent_id"]


async def test_get_customer_in_a_row_gives_each_its_own_figures(client, sql):
    """The statements are built once and reused with each call's values: calls in a row, across
    legal entities, must not carry one customer's balance or counts over to the next."""
    rows = sql.execute(
        "select legal_entity, customer_account as account from customer_dispute "
        "where status = 'open' group by legal_entity, customer_account "
        "order by count(*) desc, legal_entity desc limit 2"
    ).fetchall()
    rows += sql.execute(
        "select legal_entity, account from customer c where not exists (select 1 from "
        "customer_transaction t where t.legal_entity=c.legal_entity and "
        "t.customer_account=c.account and t.open_amount_cur != 0) limit 1"
    ).fetchall()
    assert len(rows) == 3
    for le, account in rows:
        details = await call(client, "get_customer", account=account, legal_entity=le)
        balance = sql.execute(
            "select coalesce(sum(open_amount_acct), 0), count(*) from customer_transaction "
            "where legal_entity=? and customer_account=? and open_amount_cur != 0 and posted "
            "and closed_date is null and txn_date <= ?",
            (le, account, today(sql).isoformat()),
        ).fetchone()
        disputes = sql.execute(
            "select count(*) from customer_dispute where legal_entity=? and "
            "customer_account=? and status='open'",
            (le, account),
        ).fetchone()[0]
        assert details["customer"]["account"] == account
        assert cents(details["balance"]["balance_acct"]) == cents(balance[0])
        assert details["balance"]["open_transaction_count"] == balance[1]
        assert details["open_dispute_count"] == disputes


async def test_get_vendor_matches_tables(client, sql):
    row = sql.execute("select * from vendor where payment_hold order by account limit 1").fetchone()
    details = await call(
        client, "get_vendor", account=row["account"], legal_entity=row["legal_entity"]
    )
    assert details["vendor"]["payment_hold"] is True
    assert details["vendor"]["hold_reason"] == row["hold_reason"]
    mop = sql.execute(
        "select payment_account from method_of_payment where legal_entity=? and "
        "party_type='vendor' and code=?",
        (row["legal_entity"], row["method_of_payment"]),
    ).fetchone()[0]
    assert details["method_of_payment"]["payment_account"] == mop


async def test_unknown_party_offers_closest_matches(client, sql):
    name = sql.execute("select name from vendor order by account limit 1").fetchone()[0]
    message = await call_error(client, "get_vendor", account=name[:-2] + "xx")
    assert "no vendor" in message and "closest matches" in message and name in message


# --------------------------------------------------------------------------------------------------
# aging
# --------------------------------------------------------------------------------------------------


def _bucket(days: int, edges=(30, 60, 90)) -> int:
    if days <= 0:
        return 0
    for i, edge in enumerate(edges, start=1):
        if days <= edge:
            return i
    return len(edges) + 1


async def test_aging_of_one_customer_matches_sql_buckets(client, sql):
    le, account = sql.execute(
        "select legal_entity, customer_account from customer_transaction where open_amount_cur "
        "!= 0 group by 1, 2 having count(*) >= 3 order by 2 limit 1"
    ).fetchone()
    as_of = today(sql)
    expected = [0] * 4 + [0]
    for r in sql.execute(
        "select due_date, txn_date, open_amount_acct from customer_transaction where "
        "legal_entity=? and customer_account=? and open_amount_cur != 0 and posted",
        (le, account),
    ):
        due = dt.date.fromisoformat(r["due_date"] or r["txn_date"])
        expected[_bucket((as_of - due).days)] += cents(r["open_amount_acct"])
    report = await call(
        client, "get_aging", account=account, legal_entity=le, include_transactions=True
    )
    (row,) = report["rows"]
    assert [cents(b["amount_acct"]) for b in row["buckets"]] == expected
    assert report["bucket_labels"] == ["current", "1-30", "31-60", "61-90", "over 90"]
    assert cents(row["balance_acct"]) == sum(expected)
    assert len(report["transactions"]) == row["open_transaction_count"]


async def test_aging_by_legal_entity_and_group_totals(client, sql):
    report = await call(client, "get_aging", party_type="vendor", group_by="legal_entity")
    expected = dict(
        sql.execute(
            "select legal_entity, sum(open_amount_acct) from vendor_transaction "
            "where open_amount_cur != 0 and posted group by 1"
        ).fetchall()
    )
    assert {r["legal_entity"]: cents(r["balance_acct"]) for r in report["rows"]} == {
        le: cents(v) for le, v in expected.items()
    }
    by_group = await call(
        client, "get_aging", party_type="vendor", group_by="group", legal_entity="USMF"
    )
    groups = dict(
        sql.execute(
            "select v.group_id, sum(t.open_amount_acct) from vendor_transaction t join vendor v "
            "on v.legal_entity=t.legal_entity and v.account=t.vendor_account where "
            "t.legal_entity='USMF' and t.open_amount_cur != 0 group by 1"
        ).fetchall()
    )
    assert {r["group_id"]: cents(r["balance_acct"]) for r in by_group["rows"]} == {
        g: cents(v) for g, v in groups.items()
    }
    assert all(r["name"] for r in by_group["rows"])


async def test_aging_in_the_past_replays_settlements_forward(client, sql):
    """Open amounts on a past date computed forward (amount minus settlements up to that date)."""
    as_of = today(sql) - dt.timedelta(days=45)
    le = "USMF"
    expected = defaultdict(int)
    rows = sql.execute(
        "select voucher, txn_date, amount_cur, exchange_rate, due_date from customer_transaction "
        "where legal_entity=? and posted and txn_date <= ?",
        (le, as_of.isoformat()),
    ).fetchall()
    debit = defaultdict(float)
    credit = defaultdict(float)
    for s in sql.execute(
        "select debit_voucher, credit_voucher, amount_cur, cash_discount_taken from "
        "customer_settlement where legal_entity=? and settled_date <= ?",
        (le, as_of.isoformat()),
    ):
        debit[s["debit_voucher"]] += s["amount_cur"]
        credit[s["credit_voucher"]] += s["amount_cur"] - s["cash_discount_taken"]
    for r in rows:
        open_cur = r["amount_cur"] - debit[r["voucher"]] + credit[r["voucher"]]
        if abs(open_cur) < 0.005:
            continue
        due = dt.date.fromisoformat(r["due_date"] or r["txn_date"])
        acct = round(open_cur * r["exchange_rate"] + 1e-9, 2)
        expected[_bucket((as_of - due).days)] += cents(acct)
    report = await call(
        client, "get_aging", legal_entity=le, group_by="legal_entity", as_of=as_of.isoformat()
    )
    (row,) = report["rows"]
    got = [cents(b["amount_acct"]) for b in row["buckets"]]
    want = [expected[i] for i in range(5)]
    assert all(abs(g - w) <= 2 for g, w in zip(got, want, strict=True)), (got, want)


async def test_aging_rejects_bad_buckets_and_dates(client):
    message = await call_error(client, "get_aging", bucket_edges=[60, 30])
    assert "bucket_edges" in message and "ascending" in message
    message = await call_error(client, "get_aging", as_of="2026-02-30")
    assert "as_of" in message
    message = await call_error(client, "get_aging", legal_entity="XXXX")
    assert "unknown legal_entity" in message and "USMF" in message


# --------------------------------------------------------------------------------------------------
# ledgers, settlements, disputes, discounts
# --------------------------------------------------------------------------------------------------


async def test_customer_transactions_filters_totals_and_paging(client, sql):
    where = (
        "legal_entity='USMF' and txn_type in ('sales_invoice','free_text_invoice') and "
        "open_amount_cur != 0 and due_date < ?"
    )
    as_of = today(sql).isoformat()
    count, total = sql.execute(
        f"select count(*), sum(open_amount_cur) from customer_transaction where {where}",
        (as_of,),
    ).fetchone()
    page = await call(
        client,
        "list_customer_transactions",
        legal_entity="USMF",
        txn_type=["sales_invoice", "free_text_invoice"],
        overdue_as_of=as_of,
        page_size=7,
        sort_by="open_amount",
    )
    assert page["total_count"] == count and page["has_more"] is (count > 7)
    assert sum(cents(t["open_amount"]) for t in page["totals"]) == cents(total)
    amounts = [i["open_amount_cur"] for i in page["items"]]
    assert amounts == sorted(amounts, reverse=True) and len(amounts) == min(7, count)
    assert all(i["days_overdue"] > 0 for i in page["items"])
    page2 = await call(
        client, "list_customer_transactions", legal_entity="USMF", page=2, page_size=7,
        txn_type=["sales_invoice", "free_text_invoice"], overdue_as_of=as_of,
        sort_by="open_amount",
    )  # fmt: skip
    assert not {i["voucher"] for i in page2["items"]} & {i["voucher"] for i in page["items"]}


async def test_vendor_transactions_for_one_vendor_and_amount_range(client, sql):
    le, account = sql.execute(
        "select legal_entity, vendor_account from vendor_transaction group by 1, 2 "
        "order by count(*) desc limit 1"
    ).fetchone()
    expected = sql.execute(
        "select count(*) from vendor_transaction where legal_entity=? and vendor_account=? "
        "and abs(amount_cur) between 100 and 5000 and txn_date >= '2025-06-01'",
        (le, account),
    ).fetchone()[0]
    page = await call(
        client, "list_vendor_transactions", account=account, legal_entity=le, min_amount=100,
        max_amount=5000, date_from="2025-06-01",
    )  # fmt: skip
    assert page["total_count"] == expected
    message = await call_error(client, "list_vendor_transactions", txn_type=["sales_invoice"])
    assert "txn_type" in message and "debit_note" in message
    message = await call_error(
        client, "list_vendor_transactions", date_from="2026-01-01", date_to="2025-01-01"
    )
    assert "date_from/date_to" in message


async def test_settlements_by_voucher(client, sql):
    s = (
        sql.execute(
            "select * from customer_settlement where cash_discount_taken > 0 limit 1"
        ).fetchone()
        or sql.execute("select * from customer_settlement limit 1").fetchone()
    )
    found = await call(client, "list_settlements", voucher=s["debit_voucher"])
    expected = sql.execute(
        "select count(*) from customer_settlement where debit_voucher=? or credit_voucher=?",
        (s["debit_voucher"], s["debit_voucher"]),
    ).fetchone()[0]
    assert found["total_count"] == expected
    item = next(i for i in found["items"] if i["settlement_id"] == s["settlement_id"])
    assert cents(item["amount_cur"]) == cents(s["amount_cur"])
    assert cents(item["cash_discount_taken"]) == cents(s["cash_discount_taken"])


async def test_disputes_open_deductions(client, sql):
    count, total = sql.execute(
        "select count(*), sum(amount) from customer_dispute where kind='deduction' and "
        "status='open'"
    ).fetchone()
    found = await call(client, "list_disputes", kind="deduction", status="open", page_size=500)
    assert found["total_count"] == count and cents(found["total_amount"]) == cents(total)


async def test_cash_discounts_expiring_within_days(client, sql):
    as_of = today(sql)
    end = as_of + dt.timedelta(days=10)
    expected = set()
    for table in ("customer_transaction", "vendor_transaction"):
        expected |= {
            r[0]
            for r in sql.execute(
                f"select voucher from {table} where cash_discount_date between ? and ? and "
                "open_amount_cur != 0",
                (as_of.isoformat(), end.isoformat()),
            )
        }
    found = await call(client, "list_cash_discounts", expiring_within_days=10, page_size=500)
    assert {i["voucher"] for i in found["items"]} == expected
    assert all(i["state"] == "available" for i in found["items"])
    taken = await call(client, "list_cash_discounts", state="taken", party_type="customer")
    taken_count = sql.execute(
        "select count(distinct debit_voucher) from customer_settlement t join "
        "customer_transaction c on c.legal_entity=t.legal_entity and c.voucher=t.debit_voucher "
        "where t.cash_discount_taken > 0 and c.cash_discount_date is not null"
    ).fetchone()[0]
    assert taken["total_count"] == taken_count


async def test_cash_discount_pages_follow_the_ledger(client, sql):
    """Page after page, every posted discounted invoice of both ledgers in the tool's order
    (discount date, legal entity, voucher) with the discount taken on it (issue 40: each side
    chooses its rows of the page before it sums what was taken)."""
    expected = []
    for table, settlements in (("customer_transaction", "customer_settlement"),
                               ("vendor_transaction", "vendor_settlement")):  # fmt: skip
        taken = {
            (le, voucher): amount
            for le, voucher, amount in sql.execute(
                f"select legal_entity, debit_voucher, sum(cash_discount_taken) from {settlements} "
                "group by 1, 2"
            )
        }
        expected += [
            (date, le, voucher, cents(taken.get((le, voucher))))
            for le, voucher, date in sql.execute(
                f"select legal_entity, voucher, cash_discount_date from {table} "
                "where cash_discount_date is not null and posted"
            )
        ]
    expected.sort()
    got, page = [], 1
    while True:
        found = await call(client, "list_cash_discounts", page_size=150, page=page)
        assert found["total_count"] == len(expected)
        got += [(i["cash_discount_date"], i["legal_entity"], i["voucher"],
                 cents(i["discount_taken"])) for i in found["items"]]  # fmt: skip
        if len(found["items"]) < 150:
            break
        page += 1
    assert page > 3 and got == expected
    assert any(taken for *_, taken in expected)


async def test_cash_discounts_expiring_count_and_totals(client, sql):
    """The number and per-currency discount amounts of the open invoices whose discount date
    falls within some days are those of the ledger (the server sums them per discount date)."""
    as_of = today(sql)
    shapes = [(10, None, None), (45, "USMF", None), (0, None, None), (366, "DEMF", None),
              (30, None, as_of - dt.timedelta(days=40))]  # fmt: skip
    for days, le, day in shapes:
        start = day or as_of
        counts, totals = 0, defaultdict(int)
        for table in ("customer_transaction", "vendor_transaction"):
            for currency, n, amount in sql.execute(
                f"select currency, count(*), sum(cash_discount_amount) from {table} where "
                "posted and open_amount_cur != 0 and cash_discount_date between ? and ? "
                "and (? is null or legal_entity = ?) group by currency",
                (start.isoformat(), (start + dt.timedelta(days=days)).isoformat(), le, le),
            ):
                counts += n
                totals[currency] += cents(amount)
        args = {"expiring_within_days": days, "page_size": 1}
        args |= {"legal_entity": le} if le else {}
        args |= {"as_of": day.isoformat()} if day else {}
        found = await call(client, "list_cash_discounts", **args)
        assert found["total_count"] == counts, args
        got = {c: cents(v) for c, v in found["total_discount_amount"].items()}
        assert got == {c: v for c, v in totals.items()}, args
    assert counts > 0


# --------------------------------------------------------------------------------------------------
# orders, invoices, journals, spend
# --------------------------------------------------------------------------------------------------


async def test_sales_orders_list_and_detail(client, sql):
    count = sql.execute(
        "select count(*) from sales_order where status='open' and legal_entity='USMF'"
    ).fetchone()[0]
    page = await call(client, "list_sales_orders", status=["open"], legal_entity="USMF")
    assert page["total_count"] == count == page["count_by_status"]["open"]
    so = sql.execute("select * from sales_order order by sales_id limit 1 offset 11").fetchone()
    detail = await call(client, "get_sales_order", sales_id=so["sales_id"])
    lines = sql.execute(
        "select line_amount from sales_order_line where legal_entity=? and sales_id=?",
        (so["legal_entity"], so["sales_id"]),
    ).fetchall()
    assert len(detail["lines"]) == len(lines)
    assert sum(cents(x["line_amount"]) for x in detail["lines"]) == sum(cents(r[0]) for r in lines)
    assert detail["lines"][0]["url"].endswith("#line-1")
    message = await call_error(client, "get_sales_order", sales_id="SO-NOPE")
    assert "no sales order" in message


async def test_purchase_order_detail_and_three_way_match(client, sql):
    vi = (
        sql.execute(
            "select * from vendor_invoice where match_status='failed' and po_number is not null "
            "limit 1"
        ).fetchone()
        or sql.execute(
            "select * from vendor_invoice where po_number is not null limit 1"
        ).fetchone()
    )
    detail = await call(client, "get_vendor_invoice", invoice_id=vi["invoice_id"])
    received = dict(
        sql.execute(
            "select line_number, sum(quantity) from product_receipt where legal_entity=? and "
            "po_number=? group by 1",
            (vi["legal_entity"], vi["po_number"]),
        ).fetchall()
    )
    match = detail["match"]
    assert match["stored_match_status"] == vi["match_status"]
    assert {m["line_number"]: cents(m["quantity_received"]) for m in match["lines"]} == {
        m["line_number"]: cents(received.get(m["line_number"], 0)) for m in match["lines"]
    }
    po = await call(client, "get_purchase_order", po_number=vi["po_number"])
    assert {i["invoice_id"] for i in po["invoices"]} >= {vi["invoice_id"]}
    assert (
        len(po["receipts"])
        == sql.execute(
            "select count(*) from product_receipt where legal_entity=? and po_number=?",
            (vi["legal_entity"], vi["po_number"]),
        ).fetchone()[0]
    )
    by_number = await call(client, "get_vendor_invoice", invoice_id=vi["vendor_invoice_number"],
                           legal_entity=vi["legal_entity"])  # fmt: skip
    assert by_number["invoice"]["invoice_id"] == vi["invoice_id"]


async def test_vendor_invoice_register_and_purchase_orders(client, sql):
    counts = dict(sql.execute("select status, count(*) from vendor_invoice group by 1").fetchall())
    page = await call(client, "list_vendor_invoices", page_size=1)
    assert page["count_by_status"] == counts
    pending = await call(client, "list_vendor_invoices", status=["pending_approval"])
    assert pending["total_count"] == counts.get("pending_approval", 0)
    sums = sql.execute(
        "select currency, sum(amount) from vendor_invoice where status='pending_approval' "
        "group by 1"
    ).fetchall()
    assert {c: cents(v) for c, v in pending["total_amount"].items()} == {
        c: cents(v) for c, v in sums
    }
    assert pending["count_by_status"] == {"pending_approval": counts["pending_approval"]}
    # Every page in the register's order (newest first, then invoice id), nothing lost or doubled.
    expected = [
        r[0]
        for r in sql.execute(
            "select invoice_id from vendor_invoice where status in ('pending_approval', "
            "'approved') order by invoice_date desc, invoice_id"
        )
    ]
    walked, cursor = [], None
    while True:
        args = {"cursor": cursor} if cursor else {}
        page = await call(
            client,
            "list_vendor_invoices",
            status=["pending_approval", "approved"],
            page_size=37,
            **args,
        )
        walked += [item["invoice_id"] for item in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert walked == expected and len(expected) > 37
    pos = await call(client, "list_purchase_orders", status=["open"])
    assert (
        pos["total_count"]
        == sql.execute("select count(*) from purchase_order where status='open'").fetchone()[0]
    )


async def test_payment_journals(client, sql):
    pj = sql.execute(
        "select * from payment_journal where source='proposal' order by line_count desc limit 1"
    ).fetchone()
    detail = await call(client, "get_payment_journal", journal_id=pj["journal_id"])
    assert detail["line_count"] == pj["line_count"]
    assert sum(cents(v) for v in detail["total_by_currency"].values()) == cents(pj["total_amount"])
    page = await call(client, "list_payment_journals", source="proposal", page_size=1)
    assert (
        page["total_count"]
        == sql.execute("select count(*) from payment_journal where source='proposal'").fetchone()[0]
    )


async def test_vendor_spend_for_one_fiscal_year(client, sql):
    le, account = sql.execute(
        "select legal_entity, vendor_account from vendor_transaction where txn_type='invoice' "
        "and legal_entity='GBSI' group by 1, 2 order by sum(amount_acct) desc limit 1"
    ).fetchone()
    year = 2025  # GBSI's fiscal year starts in April: 2025-04-01 .. 2026-03-31
    expected = sql.execute(
        "select sum(amount_acct) from vendor_transaction where legal_entity=? and "
        "vendor_account=? and txn_type in ('invoice','credit_note','debit_note') and posted and "
        "txn_date between '2025-04-01' and '2026-03-31'",
        (le, account),
    ).fetchone()[0]
    spend = await call(
        client, "get_vendor_spend", account=account, legal_entity=le, fiscal_year=year
    )
    (row,) = spend["rows"]
    assert (row["fiscal_year_start"], row["fiscal_year_end"]) == ("2025-04-01", "2026-03-31")
    assert cents(row["net_spend_acct"]) == cents(expected)
    top = await call(client, "get_vendor_spend", legal_entity=le, fiscal_year=year, top_n=3)
    assert len(top["rows"]) == 3 and top["rows"][0]["account"] == account


async def test_reference_data(client, sql):
    for kind, table in (
        ("payment_terms", "payment_terms"),
        ("collections_agents", "collections_agent"),
        ("methods_of_payment", "method_of_payment"),
    ):
        data = await call(client, "list_reference_data", kind=kind, legal_entity="USMF")
        count = sql.execute(f"select count(*) from {table} where legal_entity='USMF'").fetchone()
        assert data["total_count"] == count[0] == len(data["items"])
    rates = await call(
        client, "list_reference_data", kind="exchange_rates", from_currency="EUR",
        to_currency="USD", date_from="2026-01-01", date_to="2026-01-31",
    )  # fmt: skip
    assert (
        rates["total_count"]
        == sql.execute(
            "select count(*) from exchange_rate where from_currency='EUR' and to_currency='USD' "
            "and rate_date between '2026-01-01' and '2026-01-31'"
        ).fetchone()[0]
    )


# --------------------------------------------------------------------------------------------------
# collections
# --------------------------------------------------------------------------------------------------


async def test_collection_letters_cases_and_activities(client, sql):
    le, account = sql.execute(
        "select legal_entity, customer_account from collection_letter group by 1, 2 "
        "order by count(*) desc limit 1"
    ).fetchone()
    letters = await call(client, "list_collection_letters", account=account, legal_entity=le)
    assert (
        letters["total_count"]
        == sql.execute(
            "select count(*) from collection_letter where legal_entity=? and customer_account=?",
            (le, account),
        ).fetchone()[0]
    )
    tasks = await call(
        client, "list_collection_activities", category="task", status=["open", "in_progress"],
        legal_entity="USMF", due_from="2026-03-01", due_to="2026-03-31",
    )  # fmt: skip
    assert (
        tasks["total_count"]
        == sql.execute(
            "select count(*) from collection_activity where category='task' and status in "
            "('open','in_progress') and legal_entity='USMF' and due_date between '2026-03-01' and "
            "'2026-03-31'"
        ).fetchone()[0]
    )
    cases = await call(client, "list_collection_cases", status="open")
    assert (
        cases["total_count"]
        == sql.execute("select count(*) from collection_case where status='open'").fetchone()[0]
    )


async def test_collections_worklist(client, sql):
    le, agent, day = sql.execute(
        "select legal_entity, owner_agent_id, due_date from collection_activity where status in "
        "('open','in_progress') group by 1, 2, 3 order by count(*) desc limit 1"
    ).fetchone()
    worklist = await call(
        client, "get_collections_worklist", agent_id=agent, legal_entity=le, as_of=day
    )
    due = {
        r[0]
        for r in sql.execute(
            "select activity_id from collection_activity where legal_entity=? and "
            "owner_agent_id=? and due_date=? and status in ('open','in_progress')",
            (le, agent, day),
        )
    }
    assert {a["activity_id"] for a in worklist["activities_due"]} == due
    assert worklist["activities_due_count"] == len(due) > 1
    first = await call(
        client,
        "get_collections_worklist",
        agent_id=agent,
        legal_entity=le,
        as_of=day,
        activity_limit=1,
    )
    # One listed, the first by customer account; the count still covers all of them.
    assert [a["activity_id"] for a in first["activities_due"]] == [
        sql.execute(
            "select activity_id from collection_activity where legal_entity=? and "
            "owner_agent_id=? and due_date=? and status in ('open','in_progress') "
            "order by customer_account, activity_id limit 1",
            (le, agent, day),
        ).fetchone()[0]
    ]
    assert first["activities_due_count"] == len(due)
    assert (
        first["past_due_activity_count"]
        == worklist["past_due_activity_count"]
        == (
            sql.execute(
                "select count(*) from collection_activity where legal_entity=? "
                "and owner_agent_id=? and due_date<? and status in ('open','in_progress')",
                (le, agent, day),
            ).fetchone()[0]
        )
    )
    assigned = {
        r[0]
        for r in sql.execute(
            "select account from customer where legal_entity=? and collections_agent_id=?",
            (le, agent),
        )
    }
    assert {c["account"] for c in worklist["customers"]} <= assigned
    overdue = [c["overdue_acct"] for c in worklist["customers"]]
    assert overdue == sorted(overdue, reverse=True) and all(x > 0 for x in overdue)
    message = await call_error(client, "get_collections_worklist", agent_id="NOBODY")
    assert "unknown collections agent" in message


# --------------------------------------------------------------------------------------------------
# generic layer
# --------------------------------------------------------------------------------------------------


async def test_generic_query_matches_sql(client, sql):
    result = await call(
        client,
        "query_entity_set",
        entity_set="customers",
        legal_entity="USMF",
        filters=[
            {"field": "credit_rating", "op": "in", "value": ["Poor", "Fair"]},
            {"field": "credit_limit", "op": "ge", "value": 10000},
            {"field": "name", "op": "contains", "value": "co"},
        ],
        select=["account", "credit_limit"],
        order_by=[{"field": "credit_limit", "descending": True}],
        top=5,
    )
    rows = sql.execute(
        "select account, credit_limit from customer where legal_entity='USMF' and credit_rating "
        "in ('Poor','Fair') and credit_limit >= 10000 and lower(name) like '%co%' "
        "order by credit_limit desc, account"
    ).fetchall()
    assert result["total_count"] == len(rows)
    assert [i["account"] for i in result["items"]] == [r[0] for r in rows[:5]]
    assert set(result["items"][0]) == {"account", "credit_limit", "url"}


async def test_generic_layer_validates_and_cannot_be_injected(client, sql):
    described = await call(client, "describe_entity_set", entity_set="vendor-invoices")
    assert {"invoice_id", "status", "match_status"} <= {f["name"] for f in described["fields"]}
    assert (
        described["row_count"] == sql.execute("select count(*) from vendor_invoice").fetchone()[0]
    )
    message = await call_error(
        client, "query_entity_set", entity_set="customers",
        filters=[{"field": "acount", "op": "eq", "value": "x"}],
    )  # fmt: skip
    assert "unknown field 'acount'" in message and "account" in message
    message = await call_error(client, "query_entity_set", entity_set="customer")
    assert "did you mean" in message and "customers" in message
    injected = await call(
        client, "query_entity_set", entity_set="customers",
        filters=[{"field": "account", "op": "eq", "value": "x' OR '1'='1"}],
    )  # fmt: skip
    assert injected["total_count"] == 0
    message = await call_error(client, "query_entity_set", entity_set="customers", top=501)
    assert "top" in message


async def test_every_record_carries_a_resolvable_url(client):
    results = [
        await call(client, "get_customer", account="SYNCUS-0001"),
        await call(client, "list_vendor_transactions", page_size=3),
        await call(client, "list_settlements", page_size=3),
        await call(client, "list_collection_activities", page_size=3),
        await call(client, "query_entity_set", entity_set="product-receipts", top=3),
    ]
    records: list[dict] = []
    for result in results:
        _walk_records(result, records)
    # Methods of payment have no entity set (their key is not unique per legal entity): no url.
    records = [r for r in records if "payment_account" not in r]
    assert len(records) >= 12
    for record in records:
        assert record["url"] and record["url"].startswith("http://erp.test/erp/"), record


async def test_internal_errors_are_masked_and_server_keeps_serving(erp_db_url, tmp_path):
    broken = tmp_path / "broken.db"
    source = sqlite3.connect(erp_db_url.removeprefix("sqlite:///"))
    target = sqlite3.connect(broken)
    source.backup(target)
    source.close()
    target.execute("drop table customer_dispute")
    target.commit()
    target.close()
    async with Client(build_server(f"sqlite:///{broken}")) as c:
        result = await c.call_tool("list_disputes", {}, raise_on_error=False)
        assert result.is_error
        text = result.content[0].text
        assert "customer_dispute" not in text.lower() and "select" not in text.lower()
        assert "Traceback" not in text
        info = await c.call_tool("erp_info", {})
        assert info.structured_content["today"]


async def test_concurrent_calls_all_succeed(client, sql):
    """Tools run in a thread pool: many at once must not trip over shared connections."""
    accounts = [
        r[0] for r in sql.execute("select account from customer where legal_entity='USMF' limit 24")
    ]
    results = await asyncio.gather(
        *(
            client.call_tool(
                "get_customer", {"account": a, "legal_entity": "USMF"}, raise_on_error=False
            )
            for a in accounts
        )
    )
    assert [r.is_error for r in results] == [False] * len(accounts)
    assert [r.structured_content["customer"]["account"] for r in results] == accounts


async def test_account_ids_resolve_without_zero_padding(client, sql):
    le, account = sql.execute("select legal_entity, account from customer limit 1").fetchone()
    prefix, number = account.split("-")
    unpadded = f"{prefix}-{int(number)}"
    details = await call(client, "get_customer", account=unpadded, legal_entity=le)
    assert details["customer"]["account"] == account
    found = await call(client, "search_parties", query=unpadded.lower(), party_type="customer")
    assert found["candidates"][0]["account"] == account
