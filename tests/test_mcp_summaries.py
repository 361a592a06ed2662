"""The summary tables (issue 27): the aggregates that read them answer exactly as over the raw
ledgers, take them only where that holds, and fall back on an ERP without them.

The same calls go to the default ERP (generated with summaries) and to a copy of it without them
(as an ERP of older code), in memory; every structured result must be identical. Each call also
says whether it should read a summary table, and the statements it runs must agree: date ranges
that are and are not a summarised period, aging dates in the past and the future, filters,
groupings and orderings a summary does or does not key. A copy with one wrong summary row shows
the comparison catches a wrong rewrite.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from fastmcp import Client
from sqlalchemy import Engine, event

from erp_mcp import build_server
from synthetic_erp import generate_erp, snapshot_hash
from synthetic_erp._db import open_engine
from synthetic_erp._summaries import SUMMARY_TABLES, summarize

pytestmark = pytest.mark.timeout(300)

QES = "query_entity_set"
CT, VT = "customer-transactions", "vendor-transactions"


def _qes(entity_set: str, *, uses: bool, **query) -> tuple[str, dict, bool]:
    return QES, {"entity_set": entity_set, **query}, uses


def _sum(field: str = "amount_acct") -> dict:
    return {"op": "sum", "field": field}


PARTY_PAGES: list[dict] = [
    {"sort_by": "key", "limit": 7},
    {"sort_by": "overdue"},
    {"party_type": "vendor", "sort_by": "overdue", "aging_basis": "txn_date",
     "legal_entity": "USMF"},
    {"party_type": "vendor", "limit": 1000},
    {"group_id": "20", "limit": 3, "legal_entity": "DEMF"},
    {"as_of": "2026-09-30", "bucket_edges": [10, 20]},
    # the page from the open items: overdue on a later date, one currency
    {"sort_by": "overdue", "as_of": "2026-09-30", "limit": 5},
    {"currency": "EUR", "limit": 5},
]  # fmt: skip
"""get_aging per party on or after today: the first six pick their page of parties from the
per-party sums (summary_open_party), the last two from the ledger."""
PAGE_FROM_SUMMARY = [True] * 6 + [False] * 2

PAST_DAYS: list[dict] = [
    {"group_by": "legal_entity", "as_of": day, "party_type": party_type, "aging_basis": basis}
    for day in ("2024-12-31", "2025-03-02", "2025-03-03", "2025-06-30", "2025-10-15",
                "2026-02-28")
    for party_type, basis in (("customer", "due_date"), ("vendor", "txn_date"))
] + [
    {"group_by": "currency", "as_of": "2025-09-30", "legal_entity": "DEMF"},
    {"group_by": "currency", "as_of": "2025-09-30", "party_type": "vendor", "sort_by": "key",
     "bucket_edges": [7, 14, 200, 400]},
    {"group_by": "legal_entity", "as_of": "2025-12-15", "currency": "EUR", "sort_by": "overdue"},
    {"group_by": "legal_entity", "as_of": "2025-12-15", "currency": "USD",
     "party_type": "vendor", "legal_entity": "USMF"},
    {"group_by": "group", "as_of": "2025-08-01", "legal_entity": "GBSI"},
    {"group_by": "group", "as_of": "2026-01-10", "group_id": "20", "aging_basis": "txn_date"},
    {"group_by": "currency", "as_of": "2026-01-10", "group_id": "30", "party_type": "vendor"},
    {"group_by": "party", "as_of": "2025-11-30", "legal_entity": "USMF", "limit": 5},
    {"group_by": "party", "as_of": "2025-11-30", "party_type": "vendor", "currency": "EUR"},
    {"group_by": "party", "as_of": "2026-02-01", "group_id": "10", "sort_by": "overdue"},
]  # fmt: skip
"""get_aging on past days across party types, legal entities, currencies, groups, aging bases
and bucket edges: before the first transaction, on it, the day after, and up to today's eve."""


def _date(op: str, value) -> dict:
    return {"field": "txn_date", "op": op, "value": value}


def _due(op: str, value) -> dict:
    return {"field": "due_date", "op": op, "value": value}


DATE_QUERIES: list[tuple[str, dict, bool]] = [
    (CT, {"group_by": ["legal_entity"], "filters": [_date("ge", "2025-10-01")],
          "aggregates": [_sum()]}, True),
    (VT, {"group_by": ["txn_type", "currency"], "filters": [_date("ge", "2025-07-01"),
          _date("le", "2025-09-30")], "aggregates": [_sum("amount_cur"), {"op": "count"}]}, True),
    (CT, {"legal_entity": "USMF", "group_by": ["txn_date"], "filters": [_date("gt", "2025-11-15"),
          _date("lt", "2026-01-10")], "aggregates": [_sum("open_amount_acct"), {"op": "count"}],
          "order_by": [{"field": "sum_open_amount_acct", "descending": True}], "top": 10}, True),
    (CT, {"filters": [_date("eq", "2026-02-02")], "aggregates": [_sum(), _sum("amount_cur"),
          {"op": "count", "field": "voucher"}]}, True),
    (VT, {"filters": [_date("in", ["2025-05-05", "2025-12-01", "2026-03-02", "2024-01-01"]),
          {"field": "posted", "op": "eq", "value": True}], "group_by": ["legal_entity"],
          "aggregates": [_sum(), {"op": "count"}]}, True),
    (CT, {"filters": [_date("ne", "2025-06-30")], "group_by": ["currency"],
          "aggregates": [{"op": "min", "field": "txn_date"}, {"op": "max", "field": "txn_date"},
                         {"op": "count"}]}, True),
    # each summary row one group: every key column grouped or fixed
    (VT, {"filters": [{"field": "posted", "op": "eq", "value": True},
          {"field": "currency", "op": "eq", "value": "USD"}, _date("ge", "2026-01-01")],
          "group_by": ["legal_entity", "txn_type", "txn_date"], "aggregates": [_sum()],
          "order_by": [{"field": "sum_amount_acct"}], "top": 15, "skip": 4}, True),
    (CT, {"group_by": ["txn_date"], "filters": [_date("le", "2025-04-30")], "count_only": True},
     True),
    (CT, {"group_by": ["txn_date", "txn_type"], "filters": [_date("ge", "2025-12-01")],
          "aggregates": [_sum()], "skip": 100_000}, True),
    (VT, {"legal_entity": "DEMF", "filters": [_date("lt", "2025-03-01")],
          "aggregates": [_sum(), {"op": "count"}]}, True),
    (CT, {"group_by": ["txn_date"], "filters": [{"field": "txn_type", "op": "eq",
          "value": "payment"}, _date("ge", "2026-02-01")], "aggregates": [_sum()],
          "order_by": [{"field": "txn_date", "descending": True}], "top": 5}, True),
    # a range summed per series (each series one group here), an empty range, a range's key
    # extremes and a count of groups
    (VT, {"filters": [{"field": "posted", "op": "eq", "value": True},
          {"field": "currency", "op": "eq", "value": "USD"}, _date("ge", "2025-06-01"),
          _date("lt", "2025-09-01")], "group_by": ["legal_entity", "txn_type"],
          "aggregates": [_sum(), {"op": "count"}],
          "order_by": [{"field": "sum_amount_acct", "descending": True}], "top": 5, "skip": 2},
     True),
    (CT, {"filters": [_date("ge", "2026-01-01"), _date("le", "2025-12-31")],
          "group_by": ["legal_entity"], "aggregates": [_sum(), {"op": "count"}]}, True),
    (CT, {"legal_entity": "GBSI", "filters": [_date("gt", "2025-12-31")],
          "group_by": ["txn_type"], "aggregates": [{"op": "min", "field": "currency"},
          {"op": "count"}, _sum("open_amount_cur")]}, True),
    (VT, {"filters": [_date("le", "2025-05-31")], "group_by": ["posted", "currency"],
          "count_only": True}, True),
    (VT, {"filters": [_date("ge", "2025-09-01"), _date("ne", "2025-09-15")],
          "group_by": ["currency"], "aggregates": [{"op": "count", "field": "txn_date"}]}, True),
    (CT, {"filters": [_date("eq", None)], "aggregates": [{"op": "count"}, _sum()]}, True),
    (CT, {"filters": [_date("le", "2025-12-31")], "aggregates": [
          {"op": "count", "field": "txn_date"}, _sum("open_amount_cur")]}, True),
    # due dates (NULL on payments and notes): a range, days, a list, the lines without one
    (VT, {"group_by": ["legal_entity"], "filters": [_due("ge", "2026-03-01"),
          _due("le", "2026-04-15")], "aggregates": [_sum("open_amount_acct"), {"op": "count"}]},
     True),
    (CT, {"legal_entity": "USMF", "filters": [_due("gt", "2026-03-02"),
          {"field": "posted", "op": "eq", "value": True}], "group_by": ["txn_type", "currency"],
          "aggregates": [_sum("open_amount_cur"), {"op": "max", "field": "currency"}]}, True),
    (CT, {"group_by": ["due_date"], "filters": [_due("lt", "2026-03-02"),
          _due("ge", "2026-02-01")], "aggregates": [_sum("open_amount_acct")],
          "order_by": [{"field": "due_date", "descending": True}], "top": 10}, True),
    (VT, {"filters": [_due("in", ["2026-03-31", "2026-04-30"])], "group_by": ["legal_entity"],
          "aggregates": [{"op": "max", "field": "due_date"}, _sum()]}, True),
    (CT, {"filters": [_due("eq", None)], "group_by": ["txn_type"],
          "aggregates": [_sum(), {"op": "count"}]}, True),
    (VT, {"filters": [_due("ne", "2026-03-31")], "aggregates": [_sum(), {"op": "count"}]},
     True),
    # fields no summary keys together with the date: the ledger
    (CT, {"group_by": ["legal_entity"], "filters": [_date("ge", "2025-10-01"),
          {"field": "amount_acct", "op": "gt", "value": 1000}], "aggregates": [_sum()]}, False),
    (VT, {"group_by": ["txn_date"], "filters": [{"field": "due_date", "op": "ge",
          "value": "2026-01-01"}], "aggregates": [_sum()], "top": 5}, False),
    (CT, {"group_by": ["txn_date"], "aggregates": [{"op": "max", "field": "amount_acct"}],
          "top": 5}, False),
]  # fmt: skip
"""query_entity_set with transaction- and due-date filters (each op a date takes) and groups."""

CALLS: list[tuple[str, dict, bool]] = [
    # get_aging: today or later reads the open-item sums for its rows and totals; per party its
    # rows come from the ledger (the sums keep no party) and only the totals from the sums; one
    # account reads the ledger alone
    ("get_aging", {"legal_entity": "USMF", "group_by": "legal_entity"}, True),
    ("get_aging", {"party_type": "vendor", "group_by": "group", "legal_entity": "USMF"}, True),
    ("get_aging", {"group_by": "legal_entity"}, True),
    ("get_aging", {"group_by": "currency", "sort_by": "key", "bucket_edges": [15, 45, 365]}, True),
    ("get_aging", {"group_by": "group", "as_of": "2026-06-30", "aging_basis": "txn_date"}, True),
    ("get_aging", {"group_by": "legal_entity", "currency": "EUR", "sort_by": "overdue"}, True),
    ("get_aging", {"group_by": "group", "group_id": "20", "limit": 2}, True),
    ("get_aging", {"group_by": "currency", "group_id": "30", "as_of": "2027-01-01"}, True),
    # a past day: the running totals of the open items of each day (summary_open_history)
    ("get_aging", {"group_by": "group", "party_type": "vendor", "as_of": "2025-12-31"}, True),
    ("get_aging", {"group_by": "legal_entity", "as_of": "2026-03-01"}, True),
    *(("get_aging", args, True) for args in PAST_DAYS),
    ("get_aging", {}, True),
    ("get_aging", {"sort_by": "overdue", "group_by": "party", "as_of": "2026-09-30"}, True),
    # per party on a past day: the rows from the ledger, the totals from the running totals
    ("get_aging", {"group_by": "party", "as_of": "2026-01-31"}, True),
    ("get_aging", {"account": "SYNCUS-0002", "legal_entity": "USMF", "as_of": "2025-11-30"},
     False),
    ("get_aging", {"account": "SYNCUS-0002", "legal_entity": "USMF"}, False),
    *(("get_aging", args, True) for args in PARTY_PAGES),
    # get_collections_worklist: on or after today from the per-customer sums
    ("get_collections_worklist", {"agent_id": "CA001", "legal_entity": "USMF"}, True),
    ("get_collections_worklist", {"agent_id": "CA003", "as_of": "2026-03-12"}, True),
    ("get_collections_worklist", {"agent_id": "CA002", "as_of": "2026-04-30",
                                  "min_overdue": 500}, True),
    ("get_collections_worklist", {"pool_id": "KEYACCT", "legal_entity": "USMF"}, True),
    ("get_collections_worklist", {"pool_id": "KEYACCT", "agent_id": "CA003", "limit": 5}, True),
    ("get_collections_worklist", {"agent_id": "CA001", "legal_entity": "USMF",
                                  "as_of": "2026-02-20"}, False),
    # list_settlements: the count and totals of a legal entity and date range from the per-day
    # sums; of one party or voucher from the ledger
    ("list_settlements", {"party_type": "vendor", "page_size": 500}, True),
    ("list_settlements", {"legal_entity": "USMF", "date_from": "2025-10-01", "page_size": 7},
     True),
    ("list_settlements", {"date_to": "2025-06-30", "page": 3, "page_size": 50}, True),
    ("list_settlements", {"party_type": "vendor", "legal_entity": "DEMF",
                          "date_from": "2026-01-01", "date_to": "2026-01-31"}, True),
    ("list_settlements", {"account": "SYNCUS-0002", "legal_entity": "USMF"}, False),
    # rank_parties: a summarised period (a calendar or fiscal year, a quarter or a month) for every
    # legal entity asked
    ("rank_parties", {"measure": "invoiced", "legal_entity": "USMF", "date_from": "2025-01-01",
                      "date_to": "2025-12-31"}, True),
    ("rank_parties", {"measure": "invoiced", "date_from": "2025-01-01", "date_to": "2025-12-31",
                      "top_n": 3, "ascending": True}, True),
    ("rank_parties", {"measure": "paid", "party_type": "vendor", "date_from": "2026-01-01",
                      "date_to": "2026-12-31", "top_n": 100}, True),
    ("rank_parties", {"measure": "paid", "legal_entity": "GBSI", "date_from": "2025-04-01",
                      "date_to": "2026-03-31"}, True),
    # calendar quarters and months are summarised periods too
    ("rank_parties", {"measure": "invoiced", "date_from": "2025-07-01", "date_to": "2025-09-30"},
     True),
    ("rank_parties", {"measure": "paid", "party_type": "vendor", "legal_entity": "USMF",
                      "date_from": "2025-11-01", "date_to": "2025-11-30", "top_n": 100}, True),
    ("rank_parties", {"measure": "invoiced", "date_from": "2026-01-01", "date_to": "2026-03-31",
                      "ascending": True}, True),
    # two months, or days that are no month, quarter or year: the ledger
    ("rank_parties", {"measure": "invoiced", "date_from": "2025-07-01", "date_to": "2025-08-31"},
     False),
    ("rank_parties", {"measure": "paid", "date_from": "2025-04-15", "date_to": "2025-09-03"},
     False),
    # GBSI's fiscal year is no period of the other legal entities
    ("rank_parties", {"measure": "paid", "date_from": "2025-04-01", "date_to": "2026-03-31"},
     False),
    ("rank_parties", {"measure": "invoiced", "legal_entity": "USMF", "date_from": "2025-01-01",
                      "date_to": "2025-12-30"}, False),
    ("rank_parties", {"measure": "invoiced", "date_from": "2025-01-01"}, False),
    ("rank_parties", {"measure": "open", "date_from": "2025-01-01", "date_to": "2025-12-31"},
     False),
    ("rank_parties", {"measure": "paid"}, False),
    # open today on any transaction: today's per-party sums
    ("rank_parties", {"measure": "open"}, True),
    ("rank_parties", {"measure": "open", "party_type": "vendor", "ascending": True,
                      "legal_entity": "USMF", "top_n": 3}, True),
    ("rank_parties", {"measure": "open", "top_n": 100}, True),
    # get_vendor_spend: the top list of a summarised fiscal year
    ("get_vendor_spend", {"legal_entity": "USMF", "top_n": 10}, True),
    ("get_vendor_spend", {"top_n": 3}, True),
    ("get_vendor_spend", {"fiscal_year": 2025, "top_n": 100}, True),
    ("get_vendor_spend", {"fiscal_year": 2024, "legal_entity": "GBSI"}, True),
    ("get_vendor_spend", {"fiscal_year": 2020}, False),
    # query_entity_set: fields a summary is keyed by, counts and sums of amounts
    _qes(CT, legal_entity="USMF", filters=[{"field": "txn_type", "op": "eq",
         "value": "sales_invoice"}], group_by=["customer_account"], aggregates=[_sum()],
         order_by=[{"field": "sum_amount_acct", "descending": True}], top=10, uses=True),
    _qes(CT, group_by=["legal_entity", "txn_type"], aggregates=[_sum(), {"op": "count"}],
         uses=True),
    _qes(VT, group_by=["legal_entity", "vendor_account"], aggregates=[_sum(), {"op": "count"}],
         order_by=[{"field": "sum_amount_acct"}], top=5, uses=True),
    _qes(VT, group_by=["vendor_account"], aggregates=[_sum("amount_cur"),
         {"op": "count", "field": "voucher"}, {"op": "min", "field": "txn_type"}],
         order_by=[{"field": "count_voucher", "descending": True}], top=7, skip=3, uses=True),
    _qes(VT, legal_entity="USMF", filters=[{"field": "txn_type", "op": "eq", "value": "invoice"}],
         group_by=["vendor_account"], aggregates=[{"op": "count"}, _sum("open_amount_acct")],
         order_by=[{"field": "count", "descending": True}], top=10, uses=True),
    _qes(CT, filters=[{"field": "txn_type", "op": "in", "value": ["payment", "credit_note"]},
         {"field": "posted", "op": "eq", "value": True}], group_by=["currency"],
         aggregates=[_sum("amount_cur"), {"op": "max", "field": "txn_type"}], uses=True),
    _qes(CT, aggregates=[_sum("open_amount_acct"), {"op": "count"}], uses=True),
    _qes(CT, filters=[{"field": "txn_type", "op": "eq", "value": "nothing"}],
         aggregates=[_sum(), {"op": "count"}], uses=True),
    _qes(CT, legal_entity="GBSI", group_by=["customer_account"], count_only=True, uses=True),
    _qes(CT, legal_entity="DEMF", filters=[{"field": "txn_type", "op": "eq", "value": "payment"},
         {"field": "customer_account", "op": "startswith", "value": "SYNCUS-00"}],
         group_by=["customer_account", "txn_type"], aggregates=[_sum()],
         order_by=[{"field": "sum_amount_acct"}], top=20, skip=5, uses=True),
    _qes(CT, legal_entity="USMF", filters=[{"field": "txn_type", "op": "eq",
         "value": "sales_invoice"}], group_by=["customer_account"], aggregates=[_sum()],
         top=10, skip=100_000, uses=True),
    _qes(CT, group_by=["txn_type"], aggregates=[{"op": "max", "field": "amount_acct"}], uses=False),
    _qes(CT, group_by=["customer_account"], filters=[{"field": "txn_date", "op": "ge",
         "value": "2026-01-01"}], aggregates=[_sum()], uses=False),
    _qes(CT, group_by=["currency", "customer_account"], aggregates=[_sum()], uses=False),
    _qes(VT, group_by=["vendor_account"], aggregates=[{"op": "count", "field": "due_date"}],
         uses=False),
    _qes("customer-settlements", group_by=["customer_account"], top=3, uses=False),
    # transaction-date filters and groups: the per-day sums (summary_ledger_day)
    *(("query_entity_set", {"entity_set": entity_set, **query}, uses)
      for entity_set, query, uses in DATE_QUERIES),
]  # fmt: skip


def _without_summaries(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    with sqlite3.connect(target) as conn:
        for table in SUMMARY_TABLES:
            conn.execute(f'DROP TABLE "{table.name}"')
    return target


@pytest.fixture(scope="module")
def erp_path(erp_db_url: str) -> Path:
    return Path(erp_db_url.removeprefix("sqlite:///"))


@pytest.fixture(scope="module")
def bare_url(erp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = _without_summaries(erp_path, tmp_path_factory.mktemp("bare") / "erp.db")
    return f"sqlite:///{path}"


SUMMARY_NAMES = {table.name for table in SUMMARY_TABLES}


def _summaries_read(seen: list[str]) -> set[str]:
    return {name for statement in seen for name in re.findall(r"summary_[a-z_]+", statement)} & (
        SUMMARY_NAMES
    )


async def _answers(db_url: str, calls) -> list[tuple[dict, set[str]]]:
    """Each call's structured result and the summary tables it read."""
    out = []
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.append(statement)

    async with Client(build_server(db_url, public_url="http://erp.test")) as client:
        await client.call_tool("erp_info", {})
        event.listen(Engine, "before_cursor_execute", record)
        try:
            for name, args, _ in calls:
                seen.clear()
                result = await client.call_tool(name, args, raise_on_error=False)
                assert not result.is_error, (name, args, result.content[0].text)
                out.append((result.structured_content, _summaries_read(seen)))
        finally:
            event.remove(Engine, "before_cursor_execute", record)
    return out


async def test_aggregates_answer_the_same_with_and_without_summaries(erp_db_url, bare_url):
    summed = await _answers(erp_db_url, CALLS)
    raw = await _answers(bare_url, CALLS)
    wrong_path, different = [], []
    for (name, args, expected), (with_summary, used), (without, used_raw) in zip(
        CALLS, summed, raw, strict=True
    ):
        assert not used_raw, (name, args)
        if bool(used) != expected:
            wrong_path.append((name, args, used))
        if with_summary != without:
            different.append((name, args))
    assert wrong_path == []
    assert different == []
    # the comparison is not vacuous: the results hold rows
    assert all(result.get("rows") or result.get("items") or result.get("customers")
               for result, _ in summed[:8])  # fmt: skip


async def test_get_aging_picks_its_page_of_parties_from_the_per_party_sums(erp_db_url):
    """Each page read off summary_open_party is one the raw query also gives (the comparison
    above), and it is read there exactly where the sums hold in that order."""
    assert len(PARTY_PAGES) == len(PAGE_FROM_SUMMARY)
    calls = [("get_aging", args, True) for args in PARTY_PAGES]
    answers = await _answers(erp_db_url, calls)
    read = [("summary_open_party" in tables) for _, tables in answers]
    assert read == PAGE_FROM_SUMMARY
    for (result, _), args in zip(answers, PARTY_PAGES, strict=True):
        assert result["rows"], args
        assert result["total_rows"] >= len(result["rows"]), args


async def test_a_wrong_summary_row_shows_in_the_answers(erp_path: Path, tmp_path: Path):
    """Each summary a tool reads changes its answer when one of its rows is off by a cent: the
    comparison above would catch a rewrite that read the wrong rows."""
    path = tmp_path / "erp.db"
    shutil.copyfile(erp_path, path)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE summary_party_period SET amount = amount + 1, invoiced = invoiced + 1 "
            "WHERE rowid = (SELECT rowid FROM summary_party_period WHERE legal_entity = 'USMF' "
            "AND measure = 'spend' AND period_start = '2026-01-01' AND period_end = '2026-12-31' "
            "ORDER BY amount DESC LIMIT 1)"
        )
        for table in ("summary_open_items", "summary_open_items_all"):  # by group, over groups
            conn.execute(
                f"UPDATE {table} SET open_acct = open_acct + 1 WHERE rowid = (SELECT rowid FROM "
                f"{table} WHERE party_type = 'customer' AND basis = 'due_date' AND "
                "legal_entity = 'USMF' LIMIT 1)"
            )
        # the 11th largest balance moves to the top: it enters a page of 10
        conn.execute(
            "UPDATE summary_open_party SET open_acct = 1 + (SELECT MAX(open_acct) FROM "
            "summary_open_party WHERE party_type = 'customer') WHERE rowid = (SELECT rowid FROM "
            "summary_open_party WHERE party_type = 'customer' ORDER BY open_acct DESC, "
            "legal_entity, account LIMIT 1 OFFSET 10)"
        )
        # a customer's open items of a past day: every running total of one series (its aging
        # dates' and their Fenwick nodes')
        series = (
            "(SELECT series_id FROM summary_open_series WHERE party_type = 'customer' AND basis = "
            "'due_date' AND family = 'all' AND legal_entity = 'USMF' AND currency = 'USD')"
        )
        for table in ("summary_open_history", "summary_open_tree"):
            conn.execute(f"UPDATE {table} SET open_acct = open_acct + 1 WHERE series_id = {series}")
        conn.execute(
            "UPDATE summary_open_party_total SET open_acct = open_acct + 1, parties = parties + 1 "
            "WHERE party_type = 'customer' AND legal_entity = 'USMF'"
        )
        # a past day's parties: the 11th largest stretch in force moves to the top, and more
        # customers are counted
        day = "'2026-01-15'"
        in_force = f"event_date <= {day} AND (next_event IS NULL OR next_event > {day})"
        conn.execute(
            "UPDATE summary_party_history SET open_acct = 1 + (SELECT MAX(open_acct) FROM "
            "summary_party_history) WHERE rowid = (SELECT rowid FROM summary_party_history WHERE "
            f"party_type = 'customer' AND {in_force} ORDER BY open_acct DESC, legal_entity, "
            "account LIMIT 1 OFFSET 10)"
        )
        conn.execute(
            "UPDATE summary_party_count SET parties = parties + 1 WHERE party_type = 'customer'"
        )
    calls = [c for c in CALLS if c[0] in ("get_vendor_spend", "get_aging")][:2]
    calls += [("get_vendor_spend", {"legal_entity": "USMF", "top_n": 10}, True)]
    calls += [("get_aging", {"limit": 10}, True)]
    calls += [("get_aging", {"group_by": "legal_entity", "as_of": "2026-01-15"}, True)]
    calls += [("get_aging", {"group_by": "group", "legal_entity": "USMF"}, True)]
    calls += [("get_aging", {"limit": 10, "as_of": "2026-01-15"}, True)]
    calls += [("rank_parties", {"measure": "open", "top_n": 3}, True)]
    good = await _answers(f"sqlite:///{erp_path}", calls)
    bad = await _answers(f"sqlite:///{path}", calls)
    assert [g for g, _ in good] != [b for b, _ in bad]
    assert good[0][0] != bad[0][0] and good[2][0] != bad[2][0]
    assert good[4][0] != bad[4][0]
    good_page = [row["account"] for row in good[3][0]["rows"]]
    bad_page = [row["account"] for row in bad[3][0]["rows"]]
    assert good_page != bad_page
    assert good[5][0] != bad[5][0]
    good_past, bad_past = good[6][0], bad[6][0]
    assert bad_past["total_rows"] > good_past["total_rows"]
    assert [r["account"] for r in good_past["rows"]] != [r["account"] for r in bad_past["rows"]]
    good_open, bad_open = good[7][0], bad[7][0]
    # the totals and counts per legal entity (one row each), apart from the ranked parties
    assert {k: v for k, v in good_open.items() if k != "rows"} != {
        k: v for k, v in bad_open.items() if k != "rows"
    }


async def test_a_wrong_ledger_day_row_shows_in_the_date_filtered_answers(
    erp_path: Path, tmp_path: Path
):
    """One series' day (a customer type and currency of USMF on 2025-11-20) a cent off: its
    day's sum, and its running sums from that day on. A date range sums the running sums on its
    last day less those before its first, so the ranges holding the day show the cent and those
    before or after it do not; the sums per day show it on that day only."""
    path = tmp_path / "erp.db"
    shutil.copyfile(erp_path, path)
    with sqlite3.connect(path) as conn:
        series = conn.execute(
            "SELECT txn_type, posted, currency FROM summary_ledger_day WHERE party_type = "
            "'customer' AND legal_entity = 'USMF' AND txn_date = '2025-11-20' ORDER BY txn_type, "
            "currency, posted LIMIT 1"
        ).fetchone()
        same_series = (
            "party_type = 'customer' AND legal_entity = 'USMF' AND txn_type = ? AND posted = ? "
            "AND currency = ?"
        )
        conn.execute(
            f"UPDATE summary_ledger_day SET amount_acct = amount_acct + 1 WHERE {same_series} "
            "AND txn_date = '2025-11-20'",
            series,
        )
        conn.execute(
            f"UPDATE summary_ledger_day SET run_amount_acct = run_amount_acct + 1 WHERE "
            f"{same_series} AND txn_date >= '2025-11-20'",
            series,
        )
    query = {"group_by": ["legal_entity"], "aggregates": [_sum()]}
    ranges = [[_date("ge", "2025-10-01")], [_date("eq", "2025-11-20")],
              [_date("gt", "2025-10-01"), _date("le", "2025-11-20")],
              [_date("gt", "2025-11-20")], [_date("lt", "2025-11-20")]]  # fmt: skip
    calls = [_qes(CT, filters=filters, **query, uses=True) for filters in ranges]
    per_day = {"group_by": ["legal_entity", "txn_date"], "aggregates": [_sum()], "top": 500}
    calls.append(_qes(CT, filters=[_date("ge", "2025-11-01"), _date("le", "2025-11-30")],
                      **per_day, uses=True))  # fmt: skip
    good = await _answers(f"sqlite:///{erp_path}", calls)
    bad = await _answers(f"sqlite:///{path}", calls)
    range_tables = {"summary_ledger_type", "summary_ledger_day"}
    assert [used for _, used in good] == [range_tables] * 5 + [{"summary_ledger_day"}]

    def usmf(result: dict) -> float:
        (item,) = [i for i in result["items"] if i["legal_entity"] == "USMF"]
        return item["sum_amount_acct"]

    for holds_the_day in range(3):
        assert usmf(bad[holds_the_day][0]) == pytest.approx(
            usmf(good[holds_the_day][0]) + 0.01, abs=1e-6
        )
    assert bad[3][0] == good[3][0] and bad[4][0] == good[4][0]
    changed = [
        (g["legal_entity"], g["txn_date"])
        for g, b in zip(good[5][0]["items"], bad[5][0]["items"], strict=True)
        if g != b
    ]
    assert changed == [("USMF", "2025-11-20")]


async def test_due_date_ranges_read_the_running_sums_of_dated_lines_only(
    erp_path: Path, tmp_path: Path
):
    """Vendors' due dates: a cent more in every running sum of one series from 2026-03-31 on
    shows in a range holding that day and not in one after it; the series' row of lines without
    a due date (its own running sums, every one off here) shows only where null is asked for."""
    path = tmp_path / "erp.db"
    shutil.copyfile(erp_path, path)
    series = ("party_type = 'vendor' AND legal_entity = 'USMF' AND txn_type = 'invoice' AND "
              "posted AND currency = 'USD'")  # fmt: skip
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE summary_ledger_due_day SET run_amount_acct = run_amount_acct + 1 WHERE "
            f"{series} AND due_date >= '2026-03-31'"
        )
        changed = conn.execute(
            "UPDATE summary_ledger_due_day SET amount_acct = amount_acct + 1, run_amount_acct = "
            "run_amount_acct + 1, run_n = run_n + 5 WHERE party_type = 'vendor' AND "
            "legal_entity = 'USMF' AND due_date IS NULL"
        ).rowcount
    assert changed > 0
    query = {"group_by": ["legal_entity"], "aggregates": [_sum(), {"op": "count"}]}
    calls = [
        _qes(VT, filters=[_due("ge", "2026-03-01"), _due("le", "2026-03-31")], **query, uses=True),
        _qes(VT, filters=[_due("gt", "2026-03-31")], **query, uses=True),
        _qes(VT, filters=[_due("eq", None)], **query, uses=True),
    ]
    good = await _answers(f"sqlite:///{erp_path}", calls)
    bad = await _answers(f"sqlite:///{path}", calls)

    def usmf(result: dict) -> dict:
        (item,) = [i for i in result["items"] if i["legal_entity"] == "USMF"]
        return item

    holding, after, undated = (usmf(b[0]) for b in bad)
    assert holding["sum_amount_acct"] == pytest.approx(
        usmf(good[0][0])["sum_amount_acct"] + 0.01, abs=1e-6
    )
    assert holding["count"] == usmf(good[0][0])["count"]
    assert after == usmf(good[1][0])
    assert undated["sum_amount_acct"] == pytest.approx(
        usmf(good[2][0])["sum_amount_acct"] + 0.01 * changed, abs=1e-6
    )


def test_summaries_are_derived_data_outside_the_snapshot_hash(erp_path: Path, tmp_path: Path):
    """Generation writes them; ``summarize`` rebuilds the same rows on an ERP without them, and
    the snapshot hash is the same with, without and after."""
    bare = _without_summaries(erp_path, tmp_path / "bare.db")
    with sqlite3.connect(bare) as conn:  # as an ERP built before the index existed
        conn.execute("DROP INDEX ix_vendinv_register")
    report = summarize(f"sqlite:///{bare}")
    assert report.rows["summary_party_period"] > 0 and report.rows["summary_open_items"] > 0
    assert report.indexes_added == ["ix_vendinv_register"]
    assert summarize(f"sqlite:///{bare}").indexes_added == []
    hashes = []
    contents = []
    for path in (erp_path, bare):
        engine = open_engine(f"sqlite:///{path}", read_only=True)
        try:
            hashes.append(snapshot_hash(engine))
        finally:
            engine.dispose()
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            contents.append(
                {
                    table.name: sorted(conn.execute(f'SELECT * FROM "{table.name}"').fetchall())
                    for table in SUMMARY_TABLES
                }
            )
    assert hashes[0] == hashes[1]
    assert contents[0] == contents[1]
    with sqlite3.connect(f"file:{erp_path}?mode=ro", uri=True) as conn:
        (stored,) = conn.execute(
            "SELECT value FROM erp_meta WHERE key = 'snapshot_hash'"
        ).fetchone()
    assert stored == hashes[0]


def test_summaries_of_an_erp_are_sums_of_its_cents(erp_path: Path):
    """Spot checks straight from the raw rows: a party's invoiced amount in a year, today's open
    items of a legal entity, a type's total."""
    with sqlite3.connect(f"file:{erp_path}?mode=ro", uri=True) as conn:
        one = conn.execute
        (want,) = one(
            "SELECT CAST(ROUND(SUM(amount_acct) * 100) AS INTEGER) FROM customer_transaction "
            "WHERE legal_entity = 'USMF' AND txn_type IN ('sales_invoice', 'free_text_invoice') "
            "AND txn_date BETWEEN '2025-01-01' AND '2025-12-31' AND posted"
        ).fetchone()
        (got,) = one(
            "SELECT amount FROM summary_period_total WHERE party_type = 'customer' AND "
            "legal_entity = 'USMF' AND measure = 'invoiced' AND period_start = '2025-01-01' "
            "AND period_end = '2025-12-31'"
        ).fetchone()
        assert got == want
        want = one(
            "SELECT COUNT(*), CAST(ROUND(SUM(open_amount_acct) * 100) AS INTEGER) FROM "
            "vendor_transaction WHERE legal_entity = 'USMF' AND closed_date IS NULL AND posted "
            "AND open_amount_cur != 0"
        ).fetchone()
        got = one(
            "SELECT SUM(n), SUM(open_acct) FROM summary_open_items WHERE party_type = 'vendor' "
            "AND basis = 'txn_date' AND legal_entity = 'USMF'"
        ).fetchone()
        assert got == want
        meta = dict(one("SELECT key, value FROM summary_meta").fetchall())
        (today,) = one("SELECT value FROM erp_meta WHERE key = 'as_of'").fetchone()
        assert meta["as_of"] == today
        assert dt.date.fromisoformat(meta["open_items_max_txn_date"]) <= dt.date.fromisoformat(
            today
        )


def test_summarize_cli_upgrades_an_old_erp_and_refuses_a_missing_one(tmp_path: Path, capsys):
    from synthetic_erp._cli import main

    url = f"sqlite:///{tmp_path / 'small.db'}"
    generate_erp(url, customers=20, vendors=20, seed=3)
    _without_summaries(tmp_path / "small.db", tmp_path / "old.db")
    assert main(["summarize", "--db", f"sqlite:///{tmp_path / 'old.db'}"]) == 0
    assert "summary_open_items" in capsys.readouterr().out
    assert main(["summarize", "--db", f"sqlite:///{tmp_path / 'none.db'}"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_summaries_of_another_version_or_snapshot_are_ignored(erp_path: Path, tmp_path: Path):
    from erp_mcp._runtime import ErpRuntime

    warnings: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("erp_mcp").addHandler(handler)
    try:
        for key, value, why in (
            ("version", "0", "version 0, this server reads version"),
            ("as_of", "2026-03-01", "built for another snapshot"),
        ):
            path = tmp_path / f"{key}.db"
            shutil.copyfile(erp_path, path)
            with sqlite3.connect(path) as conn:
                conn.execute("UPDATE summary_meta SET value = ? WHERE key = ?", (value, key))
            warnings.clear()
            runtime = ErpRuntime.open(f"sqlite:///{path}", None)
            try:
                assert runtime.summaries is None, key
            finally:
                runtime.close()
            # the server says why its aggregates are slow and how to fix it
            assert len(warnings) == 1 and why in warnings[0], warnings
            assert "python -m synthetic_erp summarize" in warnings[0]
        warnings.clear()
        runtime = ErpRuntime.open(f"sqlite:///{erp_path}", None)
        try:
            assert runtime.summaries is not None
            assert runtime.summaries.open_items_hold(runtime.today)
            assert not runtime.summaries.open_items_hold(runtime.today - dt.timedelta(days=1))
        finally:
            runtime.close()
        assert warnings == []  # an ERP with today's summaries opens quietly
    finally:
        logging.getLogger("erp_mcp").removeHandler(handler)


def _summarized_by_older_code(source: Path, target: Path) -> Path:
    """A copy as summarised before the per-day tables: the core summary tables only (the
    version-2 ones), no ``day_tables`` key nor any key added since, none of the tables added
    with them."""
    shutil.copyfile(source, target)
    core = {"summary_meta", "summary_ledger_type", "summary_ledger_party", "summary_period",
            "summary_party_period", "summary_period_total", "summary_open_items",
            "summary_open_customer", "summary_open_party"}  # fmt: skip
    with sqlite3.connect(target) as conn:
        for table in SUMMARY_TABLES:
            if table.name not in core:
                conn.execute(f'DROP TABLE "{table.name}"')
        conn.execute(
            "DELETE FROM summary_meta WHERE key NOT IN ('version', 'as_of', "
            "'open_items_max_txn_date')"
        )
    return target


async def test_an_erp_summarised_by_older_code_answers_as_the_raw_ledger(
    erp_path: Path, bare_url: str, tmp_path: Path
):
    """An ERP file summarised before the per-day tables (an upgrade keeps the user's file)
    reads none of the newer tables: every aggregate answers as over the raw ledger, never an
    internal error (get_aging without a group once read summary_open_items_all there)."""
    older = _summarized_by_older_code(erp_path, tmp_path / "older.db")
    calls = [call for call in CALLS if call[0] != QES]
    calls += [_qes(entity_set, **query, uses=False) for entity_set, query, _ in DATE_QUERIES]
    answered = await _answers(f"sqlite:///{older}", calls)
    raw = await _answers(bare_url, calls)
    newer = {"summary_open_items_all", "summary_open_history", "summary_party_history",
             "summary_settlement_day", "summary_discount_day", "summary_open_tree",
             "summary_open_party_total", "summary_ledger_day",
             "summary_ledger_due_day"}  # fmt: skip
    assert not any(used & newer for _, used in answered)
    assert [result for result, _ in answered] == [result for result, _ in raw]


async def test_an_erp_without_the_ledger_days_key_reads_the_ledger_for_dates(
    erp_path: Path, bare_url: str, tmp_path: Path
):
    """The per-day sums are read only where ``summary_meta`` vouches for them (key
    ``ledger_days``): with the table present but the key gone, date-filtered aggregates read
    the raw ledger and answer as it does."""
    path = tmp_path / "no_key.db"
    shutil.copyfile(erp_path, path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM summary_meta WHERE key = 'ledger_days'")
    calls = [_qes(entity_set, **query, uses=False) for entity_set, query, _ in DATE_QUERIES]
    answered = await _answers(f"sqlite:///{path}", calls)
    raw = await _answers(bare_url, calls)
    assert not any(used & {"summary_ledger_day", "summary_ledger_due_day"} for _, used in answered)
    assert [result for result, _ in answered] == [result for result, _ in raw]
