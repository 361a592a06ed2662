"""get_aging on past days against an independent computation from the raw ledger rows (issue 40).

On a past day the server sums each bucket from the Fenwick tree of running totals
(``summary_open_tree``), or, on an ERP summarised before it had one, each aging date's running
totals (``summary_open_history``); here each transaction's open amount on that day is worked out
in Python with exact decimals (its open amount today plus what settlements after that day took
off it), and the balances, overdue amounts, counts and buckets per legal entity, per currency and
per group must be the same to the cent, for customers and vendors, both aging bases, several days
and bucket edges, on both paths. The statements the server ran must have read the summaries and
not the ledger.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import sqlite3
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from fastmcp import Client
from sqlalchemy import Engine, event

from erp_mcp import build_server

pytestmark = pytest.mark.timeout(300)

CENT = Decimal("0.01")
DAYS = ["2025-03-02", "2025-05-20", "2025-09-30", "2025-12-31", "2026-02-27", "2026-03-01"]
TABLES = {"customer": ("customer_transaction", "customer_settlement"),
          "vendor": ("vendor_transaction", "vendor_settlement")}  # fmt: skip


def _open_items(db: Path, party_type: str, day: dt.date) -> list[dict]:
    """Every transaction open on ``day``: legal entity, currency, dates and open amounts."""
    txn_table, settlement_table = TABLES[party_type]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        back: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
        for s in conn.execute(
            f"SELECT legal_entity, debit_voucher, credit_voucher, amount_cur, "
            f"cash_discount_taken FROM {settlement_table} WHERE settled_date > ?",
            (day.isoformat(),),
        ):
            amount = Decimal(str(s["amount_cur"]))
            back[(s["legal_entity"], s["debit_voucher"])] += amount
            back[(s["legal_entity"], s["credit_voucher"])] -= amount - Decimal(
                str(s["cash_discount_taken"])
            )
        items = []
        for t in conn.execute(
            f"SELECT legal_entity, {party_type}_account AS account, voucher, currency, "
            f"txn_date, due_date, closed_date, "
            f"open_amount_cur, exchange_rate FROM {txn_table} WHERE posted AND txn_date <= ? "
            f"AND (closed_date IS NULL OR closed_date > ?)",
            (day.isoformat(), day.isoformat()),
        ):
            open_cur = Decimal(str(t["open_amount_cur"])) + back[(t["legal_entity"], t["voucher"])]
            product = open_cur * Decimal(str(t["exchange_rate"]))
            items.append(
                {
                    "legal_entity": t["legal_entity"],
                    "account": t["account"],
                    "currency": t["currency"],
                    "due_date": dt.date.fromisoformat(t["due_date"] or t["txn_date"]),
                    "txn_date": dt.date.fromisoformat(t["txn_date"]),
                    "open_cur": open_cur,
                    "open_acct": product.quantize(CENT, ROUND_HALF_UP),
                    "tie": product.quantize(CENT, ROUND_HALF_EVEN)
                    != product.quantize(CENT, ROUND_HALF_UP),
                }
            )
        return items
    finally:
        conn.close()


def _bucket(aging: dt.date, day: dt.date, edges: list[int]) -> int:
    overdue = (day - aging).days
    if overdue <= 0:
        return 0
    for i, edge in enumerate(edges, start=1):
        if overdue <= edge:
            return i
    return len(edges) + 1


def _key(row: dict, group_by: str) -> tuple:
    if group_by == "legal_entity":
        return (row["legal_entity"],)
    return (row["legal_entity"], row["currency" if group_by == "currency" else "group_id"])


def _expected(items: list[dict], group_by: str, basis: str, day: dt.date, edges: list[int]) -> dict:
    """Per row key: open count, balance, overdue and buckets (accounting currency), and the
    balance in the transaction currency (rows per group leave out items of a missing party)."""
    rows: dict[tuple, dict] = {}
    for item in items:
        if group_by == "group" and item["group_id"] is None:
            continue
        empty = {"n": 0, "balance": Decimal(0), "overdue": Decimal(0), "cur": Decimal(0),
                 "buckets": [Decimal(0)] * (len(edges) + 2)}  # fmt: skip
        row = rows.setdefault(_key(item, group_by), empty)
        aging = item[basis]
        row["n"] += 1
        row["balance"] += item["open_acct"]
        row["cur"] += item["open_cur"]
        if aging < day:
            row["overdue"] += item["open_acct"]
        row["buckets"][_bucket(aging, day, edges)] += item["open_acct"]
    return rows


async def _aging(db: Path, calls: list[dict]) -> tuple[list[dict], list[str]]:
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.append(statement)

    async with Client(build_server(f"sqlite:///{db}")) as client:
        await client.call_tool("erp_info", {})
        event.listen(Engine, "before_cursor_execute", record)
        try:
            answers = [(await client.call_tool("get_aging", c)).structured_content for c in calls]
        finally:
            event.remove(Engine, "before_cursor_execute", record)
    return answers, seen


@pytest.fixture(scope="module")
def erp_without_tree(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ERP as summarised before the Fenwick tree: no ``summary_open_tree`` nor its keys."""
    path = tmp_path_factory.mktemp("no_tree") / "erp.db"
    shutil.copyfile(erp_db_url.removeprefix("sqlite:///"), path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE summary_open_tree")
        conn.execute("DELETE FROM summary_meta WHERE key LIKE 'open_tree%'")
    conn.close()
    return path


@pytest.mark.parametrize("path", ["tree", "aging dates"])
@pytest.mark.parametrize("party_type, basis", [("customer", "due_date"), ("vendor", "txn_date"),
                                               ("vendor", "due_date")])  # fmt: skip
async def test_past_day_aging_equals_the_ledger_to_the_cent(
    erp_db_url: str, erp_without_tree: Path, party_type: str, basis: str, path: str
) -> None:
    db = Path(erp_db_url.removeprefix("sqlite:///")) if path == "tree" else erp_without_tree
    edges = [30, 60, 90] if party_type == "customer" else [10, 45, 180]
    calls = [
        {"party_type": party_type, "aging_basis": basis, "as_of": day, "group_by": group_by,
         "bucket_edges": edges, "limit": 1000}
        for day in DAYS
        for group_by in ("legal_entity", "currency", "group")
    ]  # fmt: skip
    answers, statements = await _aging(db, calls)
    transactions = TABLES[party_type][0]
    assert not [s for s in statements if re.search(rf"\b{transactions}\b", s)]
    read = {name for s in statements for name in re.findall(r"summary_open_(?:tree|history)", s)}
    assert read == {"summary_open_tree" if path == "tree" else "summary_open_history"}
    groups = _groups(db, party_type)
    compared, ties = 0, 0
    for call, answer in zip(calls, answers, strict=True):
        day = dt.date.fromisoformat(call["as_of"])
        items = _open_items(db, party_type, day)
        for item in items:
            item["group_id"] = groups.get((item["legal_entity"], item["account"]))
        ties += sum(item["tie"] for item in items)
        key = call["group_by"]
        want = _expected(items, key, basis, day, edges)
        got = {_key(row, key): row for row in answer["rows"]}
        assert set(got) == {k for k, row in want.items() if row["n"]}, (call, sorted(got))
        for name, row in got.items():
            expected = want[name]
            assert row["open_transaction_count"] == expected["n"], (call, name)
            assert Decimal(str(row["balance_acct"])) == expected["balance"], (call, name)
            assert Decimal(str(row["overdue_acct"])) == expected["overdue"], (call, name)
            buckets = [Decimal(str(b["amount_acct"])) for b in row["buckets"]]
            assert buckets == expected["buckets"], (call, name)
            if key == "currency":
                assert Decimal(str(row["balance_cur"])) == expected["cur"], (call, name)
            compared += 1
    assert compared >= 60  # the days hold open items in several legal entities, currencies
    # and groups
    assert ties == 0  # no half-cent product: the rounding rule cannot decide a cent here


def _groups(db: Path, party_type: str) -> dict[tuple[str, str], str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(f"SELECT legal_entity, account, group_id FROM {party_type}")
        return {(le, account): group for le, account, group in rows}
    finally:
        conn.close()


PARTY_CALLS = [
    {"sort_by": "balance", "limit": 25},
    {"sort_by": "balance", "limit": 7, "legal_entity": "USMF"},
    {"sort_by": "key", "limit": 30},
    {"sort_by": "key", "limit": 10, "legal_entity": "DEMF"},
    {"sort_by": "balance", "limit": 15, "group_id": "GROUP"},
]


@pytest.mark.parametrize("party_type", ["customer", "vendor"])
async def test_past_day_party_page_equals_the_ledger_to_the_cent(
    erp_db_url: str, party_type: str
) -> None:
    """Per party on a past day: the page (largest balance first or by key, in one legal entity
    or group or all), every row's sums and the number of parties are those of the ledger, and
    the page is chosen from the per-party stretches, not from every open item."""
    db = Path(erp_db_url.removeprefix("sqlite:///"))
    groups = _groups(db, party_type)
    some_group = sorted(g for g in groups.values() if g)[0]
    edges = [30, 60, 90]
    calls = [
        {"party_type": party_type, "as_of": day, "bucket_edges": edges,
         **{k: (some_group if v == "GROUP" else v) for k, v in shape.items()}}
        for day in DAYS[:4]
        for shape in PARTY_CALLS
    ]  # fmt: skip
    answers, statements = await _aging(db, calls)
    assert any("summary_party_history" in s for s in statements)
    transactions = TABLES[party_type][0]
    # the ledger is read for the page's parties only: each such statement names its accounts
    ledger_reads = [s for s in statements if re.search(rf"\b{transactions}\b", s)]
    assert ledger_reads and all(" IN (" in s for s in ledger_reads)
    for call, answer in zip(calls, answers, strict=True):
        day = dt.date.fromisoformat(call["as_of"])
        parties: dict[tuple[str, str], dict] = {}
        for item in _open_items(db, party_type, day):
            key = (item["legal_entity"], item["account"])
            if call.get("legal_entity") not in (None, key[0]):
                continue
            if "group_id" in call and groups.get(key) != call["group_id"]:
                continue
            row = parties.setdefault(key, {"n": 0, "balance": Decimal(0), "overdue": Decimal(0),
                                           "buckets": [Decimal(0)] * (len(edges) + 2)})  # fmt: skip
            row["n"] += 1
            row["balance"] += item["open_acct"]
            if item["due_date"] < day:
                row["overdue"] += item["open_acct"]
            row["buckets"][_bucket(item["due_date"], day, edges)] += item["open_acct"]
        if call["sort_by"] == "balance":
            order = sorted(parties, key=lambda k: (-parties[k]["balance"], k))
        else:
            order = sorted(parties)
        assert answer["total_rows"] == len(parties), call
        got = [(row["legal_entity"], row["account"]) for row in answer["rows"]]
        assert got == order[: call["limit"]], call
        for row in answer["rows"]:
            want = parties[(row["legal_entity"], row["account"])]
            assert row["open_transaction_count"] == want["n"], (call, row["account"])
            assert Decimal(str(row["balance_acct"])) == want["balance"], (call, row["account"])
            assert Decimal(str(row["overdue_acct"])) == want["overdue"], (call, row["account"])
            buckets = [Decimal(str(b["amount_acct"])) for b in row["buckets"]]
            assert buckets == want["buckets"], (call, row["account"])
    assert sum(len(a["rows"]) for a in answers) > 200


@pytest.mark.parametrize("size", [1, 2, 7, 64, 426, 1000])
def test_fenwick_nodes_hold_each_index_of_a_prefix_once(size: int) -> None:
    """Index k is in exactly one of the nodes summed for a prefix 1..p when k <= p, in none when
    k > p: the nodes an index is written to (its parents) meet the nodes a prefix reads once."""
    from synthetic_erp._summaries import _tree_parents, tree_nodes

    for prefix in range(size + 1):
        read = set(tree_nodes(prefix))
        assert len(read) <= size.bit_length()
        for index in range(1, size + 1):
            held = read & set(_tree_parents(index, size))
            assert len(held) == (1 if index <= prefix else 0), (size, prefix, index)
