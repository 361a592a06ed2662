"""Every generated answer key, recomputed a second way: pandas over the raw tables.

The oracle (the keys in synthetic_erp.scenarios) queries with SQLAlchemy; this module re-derives
the same facts from DataFrames with its own code, template by template, following the definitions
in docs/conventions.md. Any disagreement is a bug in one of the two.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import create_engine

from ledgerbench_core.dataset import Dataset
from synthetic_erp._questions import generate_questions

pytestmark = pytest.mark.timeout(300)

AR_INVOICES = ("sales_invoice", "free_text_invoice")
OPEN_ACTIVITY = ("open", "in_progress")

Fact = tuple[str, str, Any]


class Frames:
    """All ERP tables as DataFrames (money as float, dates as datetime.date)."""

    TABLES = (
        "erp_meta", "legal_entity", "customer", "vendor", "customer_transaction",
        "customer_settlement", "customer_dispute", "sales_order", "collection_letter",
        "collection_case", "collection_activity", "collections_agent", "vendor_transaction",
        "vendor_invoice", "purchase_order", "payment_journal", "payment_journal_line",
        "payment_terms", "cash_discount", "method_of_payment", "vendor_group",
    )  # fmt: skip
    DATE_COLUMNS = (
        "txn_date", "due_date", "cash_discount_date", "settled_date", "opened_date", "sent_date",
        "created_date", "order_date", "invoice_date", "closed_date", "resolved_date",
    )  # fmt: skip

    def __init__(self, url: str):
        engine = create_engine(url)
        self.t: dict[str, pd.DataFrame] = {}
        with engine.connect() as connection:
            for name in self.TABLES:
                frame = pd.read_sql_table(name, connection)
                for column in frame.columns:
                    if column in self.DATE_COLUMNS:
                        frame[column] = pd.Series(
                            [_as_date(v) for v in frame[column]], index=frame.index, dtype=object
                        )
                    elif (
                        frame[column].dtype == object and len(frame) and _is_decimal(frame[column])
                    ):
                        frame[column] = frame[column].astype(float)
                self.t[name] = frame
        engine.dispose()
        meta = dict(zip(self.t["erp_meta"]["key"], self.t["erp_meta"]["value"], strict=True))
        self.today = dt.date.fromisoformat(meta["as_of"])
        le = self.t["legal_entity"].set_index("code")
        self.acct_currency = le["accounting_currency"].to_dict()
        self.fy_month = le["fiscal_year_start_month"].to_dict()

    def fy_start(self, le: str) -> dt.date:
        month = self.fy_month[le]
        year = self.today.year if self.today.month >= month else self.today.year - 1
        return dt.date(year, month, 1)

    def open_items(self, table: str, le: str | None = None) -> pd.DataFrame:
        frame = self.t[table]
        mask = frame.posted & (frame.open_amount_cur != 0) & (frame.txn_date <= self.today)
        if le:
            mask &= frame.legal_entity == le
        return frame[mask].copy()

    def days_overdue(self, frame: pd.DataFrame) -> pd.Series:
        reference = frame.due_date.where(frame.due_date.notna(), frame.txn_date)
        return reference.map(lambda day: (self.today - day).days)

    def posted_txns(self, table: str, party: pd.Series) -> pd.DataFrame:
        frame = self.t[table]
        column = "customer_account" if table == "customer_transaction" else "vendor_account"
        mask = (
            (frame.legal_entity == party.legal_entity)
            & (frame[column] == party.account)
            & frame.posted
            & (frame.txn_date <= self.today)
        )
        return frame[mask]


def _as_date(value: Any) -> dt.date | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _is_decimal(column: pd.Series) -> bool:
    from decimal import Decimal

    return isinstance(column.dropna().iloc[0] if column.notna().any() else None, Decimal)


class Missing(Exception):
    def __init__(self, kind: str):
        self.kind = kind


def find_party(f: Frames, kind: str, params: dict[str, Any]) -> pd.Series:
    frame = f.t[kind]
    frame = frame[frame.legal_entity == params["legal_entity"]]
    if params.get("account"):
        rows = frame[frame.account == params["account"]]
    else:
        rows = frame[frame.name.str.lower() == params["name"].lower()]
    if rows.empty:
        raise Missing(kind)
    return rows.sort_values("account").iloc[0]


def none(name: str) -> Fact:
    return ("no_records", name, True)


def amount(name: str, value: float) -> Fact:
    return ("amount", name, round(float(value), 2))


def count(name: str, value: int) -> Fact:
    return ("count", name, int(value))


def top(name: str, values, ordered: bool = True) -> Fact:
    values = [str(v) for v in values]
    return ("top_n", name, values if ordered else sorted(values))


def bucket(days: int) -> str:
    if days <= 0:
        return "current"
    if days <= 30:
        return "1-30"
    if days <= 60:
        return "31-60"
    if days <= 90:
        return "61-90"
    return "over 90"


def aging_facts(f: Frames, items: pd.DataFrame, column: str) -> list[Fact]:
    if items.empty:
        return []
    sums = items.groupby(f.days_overdue(items).map(bucket))[column].sum()
    return [amount(f"aging_{name}", value) for name, value in sums.items() if round(value, 2) != 0]


def party_open(f: Frames, table: str, p: pd.Series) -> pd.DataFrame:
    items = f.open_items(table, p.legal_entity)
    column = "customer_account" if table == "customer_transaction" else "vendor_account"
    return items[items[column] == p.account]


def window(params: dict[str, Any]) -> tuple[dt.date, dt.date]:
    return dt.date.fromisoformat(params["start"]), dt.date.fromisoformat(params["end"])


def in_window(series: pd.Series, start: dt.date, end: dt.date) -> pd.Series:
    return series.map(lambda d: d is not None and start <= d <= end).astype(bool)


def sort_desc(frame: pd.DataFrame, value: pd.Series, *ties: str) -> pd.DataFrame:
    frame = frame.assign(_key=-value.round(2))
    return frame.sort_values(["_key", *ties], kind="mergesort")


CHECKS: dict[str, Callable[[Frames, dict[str, Any]], list[Fact]]] = {}


def check(name: str):
    def register(function):
        CHECKS[name] = function
        return function

    return register


# ---- AR ------------------------------------------------------------------------------------------


@check("aging_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    items = party_open(f, "customer_transaction", c)
    if items.empty:
        return [none("open_items"), amount("balance", 0)]
    return [
        amount("balance", items.open_amount_cur.sum()),
        *aging_facts(f, items, "open_amount_cur"),
    ]


@check("balance_all_entities")
def _(f, p):
    cust = f.t["customer"]
    found = cust[cust.name.str.lower() == p["name"].lower()].sort_values(
        ["legal_entity", "account"]
    )
    if found.empty:
        return [none("customer")]
    facts, total = [], 0.0
    for _, c in found.iterrows():
        value = party_open(f, "customer_transaction", c).open_amount_cur.sum()
        facts.append(amount(f"balance_{c.legal_entity}_{c.account}", value))
        total += round(value, 2)
    if len(found) > 1 and found.currency.nunique() == 1:
        facts.append(amount("balance_combined", total))
    return facts


@check("top_past_due_group")
def _(f, p):
    cust = f.t["customer"]
    members = cust[(cust.legal_entity == p["legal_entity"]) & (cust.group_id == p["group_id"])]
    items = f.open_items("customer_transaction", p["legal_entity"])
    items = items[
        items.customer_account.isin(members.account)
        & items.txn_type.isin(AR_INVOICES)
        & (items.open_amount_cur > 0)
    ]
    items = items[f.days_overdue(items) > p["days"]]
    sums = items.groupby("customer_account").open_amount_acct.sum().round(2)
    sums = sums[sums > 0]
    if sums.empty:
        return [none("customers")]
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))[: p["n"]]
    return [top("customers", [a for a, _ in ranked])] + [
        amount(f"past_due_{a}", v) for a, v in ranked[:3]
    ]


@check("aging_totals_entity")
def _(f, p):
    items = f.open_items("customer_transaction", p["legal_entity"])
    return [
        amount("total", items.open_amount_acct.sum()),
        *aging_facts(f, items, "open_amount_acct"),
    ]


@check("past_due_total_entity")
def _(f, p):
    items = f.open_items("customer_transaction", p["legal_entity"])
    items = items[
        items.txn_type.isin(AR_INVOICES)
        & (items.open_amount_cur > 0)
        & (f.days_overdue(items) > p["days"])
    ]
    return [amount("total_past_due", items.open_amount_acct.sum()), count("invoices", len(items))]


@check("coming_due_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    items = party_open(f, "customer_transaction", c)
    end = f.today + dt.timedelta(days=p["days"])
    items = items[(items.open_amount_cur > 0) & in_window(items.due_date, f.today, end)]
    if items.empty:
        return [none("transactions_due")]
    return [
        count("transactions_due", len(items)),
        amount("total_due", items.open_amount_cur.sum()),
        top("documents", items.document_number, ordered=False),
    ]


@check("unpaid_invoices_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    items = party_open(f, "customer_transaction", c)
    items = items[items.txn_type.isin(AR_INVOICES) & (items.open_amount_cur > 0)]
    if items.empty:
        return [none("unpaid_invoices")]
    ranked = sort_desc(items, items.open_amount_cur, "voucher")
    return [
        count("unpaid_invoices", len(items)),
        amount("unpaid_total", items.open_amount_cur.sum()),
        top("largest_unpaid", ranked.document_number.head(3)),
    ]


def _balance_facts(f: Frames, table: str, party: pd.Series) -> list[Fact]:
    items = party_open(f, table, party)
    total = items.open_amount_cur.sum()
    facts = [amount("balance", total)]
    if f.acct_currency[party.legal_entity] != party.currency and round(total, 2) != 0:
        facts.append(amount("balance_accounting", items.open_amount_acct.sum()))
    if items.empty:
        facts.append(none("open_items"))
    return facts


@check("customer_balance")
def _(f, p):
    return _balance_facts(f, "customer_transaction", find_party(f, "customer", p))


def _customer_balance(f: Frames, c: pd.Series) -> float:
    """In accounting currency: credit limits are set in it (docs/conventions.md)."""
    return round(party_open(f, "customer_transaction", c).open_amount_acct.sum(), 2)


@check("credit_limit")
def _(f, p):
    c = find_party(f, "customer", p)
    balance = _customer_balance(f, c)
    return [
        amount("credit_limit", c.credit_limit),
        amount("balance", balance),
        amount("available_credit", c.credit_limit - balance),
    ]


@check("credit_utilization")
def _(f, p):
    c = find_party(f, "customer", p)
    balance = _customer_balance(f, c)
    if c.credit_limit == 0:
        return [amount("credit_limit", 0), amount("balance", balance)]
    return [
        ("percent", "utilization", round(balance / c.credit_limit * 100, 2)),
        amount("credit_limit", c.credit_limit),
        amount("balance", balance),
    ]


@check("credit_hold_list")
def _(f, p):
    cust = f.t["customer"]
    rows = cust[cust.credit_hold.astype(bool)]
    if p.get("legal_entity"):
        rows = rows[rows.legal_entity == p["legal_entity"]]
    if rows.empty:
        return [none("customers")]
    return [count("customers_on_hold", len(rows)), top("customers", rows.account, ordered=False)]


@check("over_limit_group_top")
def _(f, p):
    cust = f.t["customer"]
    members = cust[(cust.legal_entity == p["legal_entity"]) & (cust.group_id == p["group_id"])]
    items = f.open_items("customer_transaction", p["legal_entity"])
    balances = items.groupby("customer_account").open_amount_acct.sum()
    excess = {
        row.account: round(balances.get(row.account, 0.0) - row.credit_limit, 2)
        for row in members.itertuples()
    }
    ranked = sorted(((a, v) for a, v in excess.items() if v > 0), key=lambda kv: (-kv[1], kv[0]))
    ranked = ranked[: p["n"]]
    if not ranked:
        return [none("customers")]
    return [top("customers", [a for a, _ in ranked])] + [
        amount(f"excess_{a}", v) for a, v in ranked[:3]
    ]


@check("credit_rating")
def _(f, p):
    return [("text", "credit_rating", find_party(f, "customer", p).credit_rating)]


def _customers_where(f: Frames, p: dict[str, Any], **equal: Any) -> list[Fact]:
    cust = f.t["customer"]
    mask = cust.legal_entity == p["legal_entity"]
    for column, value in equal.items():
        mask &= cust[column] == value
    n = int(mask.sum())
    return [none("customers"), count("customers", 0)] if n == 0 else [count("customers", n)]


@check("rating_count_group")
def _(f, p):
    return _customers_where(f, p, group_id=p["group_id"], credit_rating=p["rating"])


@check("customers_in_group")
def _(f, p):
    return _customers_where(f, p, group_id=p["group_id"])


@check("customers_by_currency")
def _(f, p):
    return _customers_where(f, p, currency=p["currency"])


@check("payment_terms_customer")
def _(f, p):
    return [("id", "payment_terms", find_party(f, "customer", p).payment_terms)]


@check("contact_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    return [
        ("text", "phone", c.contact_phone),
        ("text", "email", c.contact_email),
        ("name", "contact_name", c.contact_name),
    ]


@check("method_of_payment_customer")
def _(f, p):
    method = find_party(f, "customer", p).method_of_payment
    if method is None or pd.isna(method) or not method:
        return [none("method_of_payment")]
    return [("id", "method_of_payment", method)]


def _payments(f: Frames, c: pd.Series, start=None, end=None) -> pd.DataFrame:
    rows = f.posted_txns("customer_transaction", c)
    rows = rows[rows.txn_type == "payment"]
    if start:
        rows = rows[in_window(rows.txn_date, start, end or f.today)]
    return rows


@check("largest_payment")
def _(f, p):
    c = find_party(f, "customer", p)
    rows = _payments(f, c)
    if rows.empty:
        return [none("payments")]
    best = sort_desc(rows, rows.amount_cur.abs(), "txn_date", "voucher").iloc[0]
    return [
        ("id", "payment", best.document_number),
        amount("amount", -best.amount_cur),
        ("date", "payment_date", best.txn_date.isoformat()),
    ]


@check("top_payments")
def _(f, p):
    c = find_party(f, "customer", p)
    rows = _payments(f, c)
    if rows.empty:
        return [none("payments")]
    ranked = sort_desc(rows, rows.amount_cur.abs(), "txn_date", "voucher").head(p["n"])
    return [
        top("payments", ranked.document_number),
        amount("largest_amount", -ranked.amount_cur.iloc[0]),
    ]


@check("payments_in_range")
def _(f, p):
    c = find_party(f, "customer", p)
    rows = _payments(f, c, *window(p))
    if rows.empty:
        return [none("payments"), count("payments", 0)]
    return [count("payments", len(rows)), amount("total_paid", -rows.amount_cur.sum())]


@check("last_payment")
def _(f, p):
    rows = _payments(f, find_party(f, "customer", p))
    if rows.empty:
        return [none("payments")]
    last = rows.txn_date.max()
    return [
        ("date", "last_payment_date", last.isoformat()),
        amount("amount", -rows[rows.txn_date == last].amount_cur.sum()),
    ]


@check("collected_fiscal_year")
def _(f, p):
    c = find_party(f, "customer", p)
    rows = _payments(f, c, f.fy_start(c.legal_entity), f.today)
    if rows.empty:
        return [none("payments"), amount("total_collected", 0)]
    return [amount("total_collected", -rows.amount_cur.sum()), count("payments", len(rows))]


def _invoices(f: Frames, c: pd.Series, start=None, end=None) -> pd.DataFrame:
    rows = f.posted_txns("customer_transaction", c)
    rows = rows[rows.txn_type.isin(AR_INVOICES)]
    if start:
        rows = rows[in_window(rows.txn_date, start, end)]
    return rows


@check("invoices_in_range_customer")
def _(f, p):
    rows = _invoices(f, find_party(f, "customer", p), *window(p))
    if rows.empty:
        return [none("invoices"), count("invoices", 0)]
    return [count("invoices", len(rows)), amount("total_invoiced", rows.amount_cur.sum())]


@check("invoice_count_customer")
def _(f, p):
    rows = _invoices(f, find_party(f, "customer", p))
    if rows.empty:
        return [none("invoices"), count("invoices", 0)]
    return [count("invoices", len(rows)), amount("total_invoiced", rows.amount_cur.sum())]


def _entity_invoices(f: Frames, p: dict[str, Any]) -> pd.DataFrame:
    ct = f.t["customer_transaction"]
    start, end = window(p)
    mask = (ct.legal_entity == p["legal_entity"]) & ct.posted & ct.txn_type.isin(AR_INVOICES)
    return ct[mask & in_window(ct.txn_date, start, end)]


@check("largest_invoice_entity")
def _(f, p):
    rows = _entity_invoices(f, p)
    if rows.empty:
        return [none("invoices")]
    best = sort_desc(rows, rows.amount_acct, "txn_date", "voucher").iloc[0]
    return [
        ("id", "invoice", best.document_number),
        ("id", "customer_account", best.customer_account),
        amount("amount", best.amount_cur),
    ]


@check("top_invoiced_customer_entity")
def _(f, p):
    rows = _entity_invoices(f, p)
    if rows.empty:
        return [none("invoices")]
    sums = rows.groupby("customer_account").amount_acct.sum().round(2)
    account, value = sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return [("id", "customer_account", account), amount("total_invoiced", value)]


def _orders(
    f: Frames, le: str | None = None, account: str | None = None, order_type: str = "sales"
) -> pd.DataFrame:
    """A "sales order" is an order of type sales; return orders only when asked for by name."""
    so = f.t["sales_order"]
    so = so[(so.order_date <= f.today) & (so.order_type == order_type)]
    if le:
        so = so[so.legal_entity == le]
    if account:
        so = so[so.customer_account == account]
    return so


@check("open_orders_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    rows = _orders(f, c.legal_entity, c.account)
    rows = rows[rows.status == "open"]
    if rows.empty:
        return [none("open_orders"), count("open_orders", 0)]
    return [count("open_orders", len(rows)), top("orders", rows.sales_id, ordered=False)]


@check("order_count_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    rows = _orders(f, c.legal_entity, c.account)
    if rows.empty:
        return [none("orders"), count("orders", 0)]
    by_status = rows.status.value_counts()
    return [count("orders", len(rows))] + [count(f"orders_{s}", n) for s, n in by_status.items()]


@check("do_not_process_orders")
def _(f, p):
    rows = _orders(f, p.get("legal_entity"))
    rows = rows[rows.do_not_process.astype(bool)]
    if rows.empty:
        return [none("orders"), count("orders", 0)]
    return [count("orders", len(rows)), top("orders", rows.sales_id, ordered=False)]


@check("most_open_orders_entity")
def _(f, p):
    rows = _orders(f, p["legal_entity"])
    counts = rows[rows.status == "open"].customer_account.value_counts()
    if counts.empty:
        return [none("orders")]
    best = int(counts.max())
    return [
        count("open_orders", best),
        top("customers", counts[counts == best].index, ordered=False),
    ]


@check("largest_orders_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    rows = _orders(f, c.legal_entity, c.account)
    rows = rows[rows.status != "canceled"]
    if rows.empty:
        return [none("orders")]
    ranked = sort_desc(rows, rows.total_amount, "sales_id").head(p["n"])
    return [top("orders", ranked.sales_id), amount("largest_amount", ranked.total_amount.iloc[0])]


@check("return_orders_entity")
def _(f, p):
    n = len(_orders(f, p["legal_entity"], order_type="return"))
    return [none("orders")] if n == 0 else [count("return_orders", n)]


@check("orders_by_release_status")
def _(f, p):
    rows = _orders(f, p["legal_entity"])
    n = int(((rows.release_status == p["release_status"]) & (rows.status == "open")).sum())
    return [none("orders"), count("orders", 0)] if n == 0 else [count("orders", n)]


def _letters(f: Frames, c: pd.Series) -> pd.DataFrame:
    cl = f.t["collection_letter"]
    rows = cl[
        (cl.legal_entity == c.legal_entity)
        & (cl.customer_account == c.account)
        & (cl.sent_date <= f.today)
    ]
    return rows.sort_values(["sent_date", "letter_id"])


@check("last_letter_customer")
def _(f, p):
    rows = _letters(f, find_party(f, "customer", p))
    if rows.empty:
        return [none("collection_letters")]
    last = rows.iloc[-1]
    return [
        ("date", "sent_date", last.sent_date.isoformat()),
        count("level", last.level),
        ("id", "letter", last.letter_id),
    ]


@check("letters_customer")
def _(f, p):
    rows = _letters(f, find_party(f, "customer", p))
    if rows.empty:
        return [none("collection_letters"), count("collection_letters", 0)]
    return [count("collection_letters", len(rows)), top("letters", rows.letter_id, ordered=False)]


@check("unassigned_pool_count")
def _(f, p):
    cust = f.t["customer"]
    n = int(((cust.legal_entity == p["legal_entity"]) & cust.collections_pool_id.isna()).sum())
    return (
        [none("customers"), count("unassigned_customers", 0)]
        if n == 0
        else [count("unassigned_customers", n)]
    )


@check("collections_agent_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    agent, pool = c.collections_agent_id, c.collections_pool_id
    has_agent, has_pool = isinstance(agent, str) and agent, isinstance(pool, str) and pool
    if not has_agent and not has_pool:
        return [none("collections_agent")]
    facts = []
    if has_agent:
        agents = f.t["collections_agent"]
        match = agents[(agents.legal_entity == c.legal_entity) & (agents.agent_id == agent)]
        facts.append(("name", "agent", match.name.iloc[0] if len(match) else agent))
    if has_pool:
        facts.append(("id", "pool", pool))
    return facts


@check("open_activities_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    ca = f.t["collection_activity"]
    rows = ca[
        (ca.legal_entity == c.legal_entity)
        & (ca.customer_account == c.account)
        & ca.status.isin(OPEN_ACTIVITY)
        & (ca.created_date <= f.today)
    ]
    if rows.empty:
        return [none("activities"), count("open_activities", 0)]
    return [count("open_activities", len(rows)), top("activities", rows.activity_id, ordered=False)]


@check("open_cases_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    cc = f.t["collection_case"]
    rows = cc[
        (cc.legal_entity == c.legal_entity)
        & (cc.customer_account == c.account)
        & (cc.status == "open")
        & (cc.opened_date <= f.today)
    ]
    if rows.empty:
        return [none("cases"), count("open_cases", 0)]
    return [count("open_cases", len(rows)), top("cases", rows.case_id, ordered=False)]


@check("agent_worklist")
def _(f, p):
    ca = f.t["collection_activity"]
    day = dt.date.fromisoformat(p["date"])
    rows = ca[
        (ca.legal_entity == p["legal_entity"])
        & (ca.owner_agent_id == p["agent_id"])
        & (ca.due_date == day)
        & ca.status.isin(OPEN_ACTIVITY)
    ]
    if rows.empty:
        return [none("activities"), count("activities", 0)]
    return [
        count("activities", len(rows)),
        top("customers", rows.customer_account.unique(), ordered=False),
    ]


@check("open_tasks_due_entity")
def _(f, p):
    ca = f.t["collection_activity"]
    start, end = window(p)
    rows = ca[
        (ca.legal_entity == p["legal_entity"])
        & (ca.category == "task")
        & ca.status.isin(OPEN_ACTIVITY)
        & in_window(ca.due_date, start, end)
    ]
    return [none("tasks"), count("tasks", 0)] if rows.empty else [count("tasks", len(rows))]


@check("discounts_expiring_entity")
def _(f, p):
    items = f.open_items("customer_transaction", p["legal_entity"])
    end = f.today + dt.timedelta(days=p["days"])
    items = items[
        items.txn_type.isin(AR_INVOICES)
        & (items.open_amount_cur > 0)
        & in_window(items.cash_discount_date, f.today, end)
    ]
    if items.empty:
        return [none("invoices"), count("invoices", 0)]
    return [count("invoices", len(items)), top("invoices", items.document_number, ordered=False)]


@check("discounts_taken_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    st = f.t["customer_settlement"]
    start, end = window(p)
    rows = st[
        (st.legal_entity == c.legal_entity)
        & (st.customer_account == c.account)
        & (st.cash_discount_taken > 0)
        & in_window(st.settled_date, start, end)
    ]
    if rows.empty:
        return [none("discounts_taken"), count("discounts_taken", 0)]
    return [
        count("discounts_taken", len(rows)),
        amount("discount_total", rows.cash_discount_taken.sum()),
    ]


@check("open_discount_invoices_customer")
def _(f, p):
    c = find_party(f, "customer", p)
    items = party_open(f, "customer_transaction", c)
    keep = (
        (items.open_amount_cur > 0)
        & items.txn_type.isin(AR_INVOICES)
        & items.cash_discount_date.map(lambda d: d is not None and d >= f.today).astype(bool)
    )
    items = items[keep]
    if items.empty:
        return [none("invoices")]
    return [count("invoices", len(items)), top("invoices", items.document_number, ordered=False)]


def _disputes(f: Frames, p: dict[str, Any], kind: str) -> list[Fact]:
    c = find_party(f, "customer", p)
    d = f.t["customer_dispute"]
    rows = d[
        (d.legal_entity == c.legal_entity)
        & (d.customer_account == c.account)
        & (d.kind == kind)
        & (d.status == "open")
        & (d.opened_date <= f.today)
    ]
    plural = "disputes" if kind == "dispute" else "deductions"
    if rows.empty:
        return [none(plural), count(plural, 0)]
    return [
        count(plural, len(rows)),
        amount(f"{plural}_total", rows.amount.sum()),
        top(plural, rows.dispute_id, ordered=False),
    ]


@check("open_disputes_customer")
def _(f, p):
    return _disputes(f, p, "dispute")


@check("open_deductions_customer")
def _(f, p):
    return _disputes(f, p, "deduction")


@check("unapplied_credit_notes_customer")
def _(f, p):
    items = party_open(f, "customer_transaction", find_party(f, "customer", p))
    items = items[items.txn_type == "credit_note"]
    if items.empty:
        return [none("credit_notes"), count("credit_notes", 0)]
    return [
        count("credit_notes", len(items)),
        amount("unapplied_total", -items.open_amount_cur.sum()),
    ]


# ---- AP ------------------------------------------------------------------------------------------


@check("vendor_balance")
def _(f, p):
    return _balance_facts(f, "vendor_transaction", find_party(f, "vendor", p))


def _ap_by_group(f: Frames, le: str) -> pd.Series:
    items = f.open_items("vendor_transaction", le)
    vendors = f.t["vendor"]
    groups = vendors[vendors.legal_entity == le].set_index("account").group_id
    return items.groupby(items.vendor_account.map(groups).fillna("?")).open_amount_acct.sum()


@check("ap_by_group_entity")
def _(f, p):
    sums = _ap_by_group(f, p["legal_entity"])
    if sums.empty:
        return [none("balances")]
    return [amount("total", sums.sum())] + [amount(f"group_{g}", v) for g, v in sums.items()]


@check("ap_group_balance")
def _(f, p):
    value = round(_ap_by_group(f, p["legal_entity"]).get(p["group_id"], 0.0), 2)
    return [amount("balance", value)] + ([none("open_items")] if value == 0 else [])


@check("ap_by_currency_entity")
def _(f, p):
    items = f.open_items("vendor_transaction", p["legal_entity"])
    if items.empty:
        return [none("balances")]
    by_currency = items.groupby("currency").open_amount_cur.sum()
    return [amount("total_accounting", items.open_amount_acct.sum())] + [
        amount(f"balance_{cur}", v) for cur, v in by_currency.items()
    ]


@check("ap_overdue_entity")
def _(f, p):
    items = f.open_items("vendor_transaction", p["legal_entity"])
    items = items[
        (items.txn_type == "invoice") & (items.open_amount_cur > 0) & (f.days_overdue(items) > 0)
    ]
    if items.empty:
        return [none("overdue_invoices"), amount("total_overdue", 0)]
    return [
        amount("total_overdue", items.open_amount_acct.sum()),
        count("overdue_invoices", len(items)),
    ]


@check("ap_due_next_month_top")
def _(f, p):
    first = dt.date(f.today.year + (f.today.month == 12), f.today.month % 12 + 1, 1)
    after = dt.date(first.year + (first.month == 12), first.month % 12 + 1, 1)
    last = after - dt.timedelta(days=1)
    items = f.open_items("vendor_transaction", p["legal_entity"])
    items = items[
        (items.txn_type == "invoice")
        & (items.open_amount_cur > 0)
        & in_window(items.due_date, first, last)
    ]
    if items.empty:
        return [none("balances")]
    sums = items.groupby("vendor_account").open_amount_acct.sum().round(2)
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))[: p["n"]]
    return [top("vendors", [a for a, _ in ranked])] + [amount(f"due_{a}", v) for a, v in ranked[:3]]


@check("payment_terms_vendor")
def _(f, p):
    return [("id", "payment_terms", find_party(f, "vendor", p).payment_terms)]


@check("vendor_cash_discount")
def _(f, p):
    v = find_party(f, "vendor", p)
    terms = f.t["payment_terms"]
    row = terms[(terms.legal_entity == v.legal_entity) & (terms.terms_id == v.payment_terms)]
    code = row.cash_discount_code.iloc[0] if len(row) else None
    discounts = f.t["cash_discount"]
    match = discounts[(discounts.legal_entity == v.legal_entity) & (discounts.code == code)]
    if not isinstance(code, str) or match.empty:
        return [("boolean", "offers_discount", False)]
    return [
        ("boolean", "offers_discount", True),
        ("percent", "discount_percent", round(float(match.percent.iloc[0]), 2)),
        count("discount_days", match.days.iloc[0]),
    ]


@check("vendors_on_hold")
def _(f, p):
    vendors = f.t["vendor"]
    rows = vendors[vendors.payment_hold.astype(bool)]
    if p.get("legal_entity"):
        rows = rows[rows.legal_entity == p["legal_entity"]]
    if rows.empty:
        return [none("vendors")]
    return [count("vendors_on_hold", len(rows)), top("vendors", rows.account, ordered=False)]


@check("vendors_created_in_month")
def _(f, p):
    vendors = f.t["vendor"]
    keep = (vendors.legal_entity == p["legal_entity"]) & vendors.created_date.map(
        lambda d: (d.year, d.month) == (p["year"], p["month"])
    )
    n = int(keep.sum())
    return [none("vendors"), count("vendors", 0)] if n == 0 else [count("vendors", n)]


@check("vendors_terms_longer_than")
def _(f, p):
    terms = f.t["payment_terms"]
    long_terms = terms[(terms.legal_entity == p["legal_entity"]) & (terms.net_days > p["days"])]
    vendors = f.t["vendor"]
    keep = (vendors.legal_entity == p["legal_entity"]) & vendors.payment_terms.isin(
        long_terms.terms_id
    )
    n = int(keep.sum())
    return [none("vendors"), count("vendors", 0)] if n == 0 else [count("vendors", n)]


def _vendor_invoices(f: Frames, le: str | None, **equal: Any) -> pd.DataFrame:
    vi = f.t["vendor_invoice"]
    mask = vi.invoice_date <= f.today
    if le:
        mask &= vi.legal_entity == le
    for column, value in equal.items():
        mask &= vi[column] == value
    return vi[mask]


@check("pending_approval_vendor")
def _(f, p):
    v = find_party(f, "vendor", p)
    rows = _vendor_invoices(f, v.legal_entity, vendor_account=v.account, status="pending_approval")
    if rows.empty:
        return [none("invoices"), count("invoices", 0)]
    return [
        count("invoices", len(rows)),
        amount("total", rows.amount.sum()),
        top("invoices", rows.invoice_id, ordered=False),
    ]


@check("invoices_by_status_entity")
def _(f, p):
    rows = _vendor_invoices(f, p.get("legal_entity"), status=p["status"])
    if rows.empty:
        return [none("invoices"), count("invoices", 0)]
    facts = [count("invoices", len(rows))]
    if rows.currency.nunique() == 1:
        facts.append(amount("total", rows.amount.sum()))
    else:
        facts += [amount(f"total_{c}", v) for c, v in rows.groupby("currency").amount.sum().items()]
    return facts


def _ap_due(f: Frames, le: str, start: dt.date, end: dt.date) -> pd.DataFrame:
    items = f.open_items("vendor_transaction", le)
    return items[
        (items.txn_type == "invoice")
        & (items.open_amount_cur > 0)
        & in_window(items.due_date, start, end)
    ]


@check("ap_due_in_window")
def _(f, p):
    rows = _ap_due(f, p["legal_entity"], *window(p))
    if rows.empty:
        return [none("invoices"), count("invoices", 0)]
    return [count("invoices", len(rows)), amount("total_due", rows.open_amount_acct.sum())]


@check("ap_posted_on_date")
def _(f, p):
    vt = f.t["vendor_transaction"]
    day = dt.date.fromisoformat(p["date"])
    rows = vt[
        (vt.legal_entity == p["legal_entity"])
        & vt.posted
        & (vt.txn_type == "invoice")
        & (vt.txn_date == day)
    ]
    if rows.empty:
        return [none("invoices"), count("invoices", 0)]
    return [count("invoices", len(rows)), amount("total", rows.amount_acct.sum())]


@check("latest_invoice_match_vendor")
def _(f, p):
    v = find_party(f, "vendor", p)
    rows = _vendor_invoices(f, v.legal_entity, vendor_account=v.account)
    if rows.empty:
        return [none("invoices")]
    latest = rows.sort_values(["invoice_date", "invoice_id"]).iloc[-1]
    return [
        ("id", "invoice", latest.invoice_id),
        ("text", "match_status", latest.match_status.replace("_", " ")),
    ]


@check("payment_accounts_methods")
def _(f, p):
    m = f.t["method_of_payment"]
    m = m[(m.legal_entity == p["legal_entity"]) & (m.party_type == "vendor")].set_index("code")
    return [
        ("id", f"payment_account_{code}", m.payment_account[code])
        if code in m.index
        else none(f"method_{code}")
        for code in p["codes"]
    ]


@check("proposal_vendors_on_date")
def _(f, p):
    j = f.t["payment_journal"]
    day = dt.date.fromisoformat(p["date"])
    journals = j[
        (j.legal_entity == p["legal_entity"]) & (j.source == "proposal") & (j.created_date == day)
    ]
    if journals.empty:
        return [none("vendors")]
    lines = f.t["payment_journal_line"]
    lines = lines[
        (lines.legal_entity == p["legal_entity"]) & lines.journal_id.isin(journals.journal_id)
    ]
    vendors = lines.vendor_account.unique()
    return [count("vendors", len(vendors)), top("vendors", vendors, ordered=False)]


@check("ap_obligation_next_days")
def _(f, p):
    end = f.today + dt.timedelta(days=p["days"])
    rows = _ap_due(f, p["legal_entity"], dt.date.min, end)  # overdue invoices included
    if rows.empty:
        return [none("invoices"), amount("total_due", 0)]
    overdue = rows[rows.due_date.map(lambda d: d < f.today).astype(bool)]
    return [
        amount("total_due", rows.open_amount_acct.sum()),
        amount("overdue", overdue.open_amount_acct.sum()),
        count("invoices", len(rows)),
    ]


def _vendor_docs(f: Frames, v: pd.Series, txn_type: str, start=None, end=None) -> pd.DataFrame:
    rows = f.posted_txns("vendor_transaction", v)
    rows = rows[rows.txn_type == txn_type]
    if start:
        rows = rows[in_window(rows.txn_date, start, end)]
    return rows


@check("vendor_payments_range")
def _(f, p):
    rows = _vendor_docs(f, find_party(f, "vendor", p), "payment", *window(p))
    if rows.empty:
        return [none("payments"), count("payments", 0)]
    return [count("payments", len(rows)), amount("total_paid", -rows.amount_cur.sum())]


@check("payment_journal_total")
def _(f, p):
    j = f.t["payment_journal"]
    row = j[(j.legal_entity == p["legal_entity"]) & (j.journal_id == p["journal_id"])]
    if row.empty:
        return [none("journal")]
    return [amount("total", row.total_amount.iloc[0]), count("lines", row.line_count.iloc[0])]


def _notes(f: Frames, p: dict[str, Any], txn_type: str) -> list[Fact]:
    bounds = window(p) if p.get("start") else (None, None)
    rows = _vendor_docs(f, find_party(f, "vendor", p), txn_type, *bounds)
    if rows.empty:
        return [none(f"{txn_type}s"), count(f"{txn_type}s", 0)]
    return [count(f"{txn_type}s", len(rows)), amount("total", -rows.amount_cur.sum())]


@check("vendor_credit_notes")
def _(f, p):
    return _notes(f, p, "credit_note")


@check("vendor_debit_notes")
def _(f, p):
    return _notes(f, p, "debit_note")


@check("vendor_spend_fiscal_year")
def _(f, p):
    """Net spend: invoices less credit and debit notes, accounting currency."""
    v = find_party(f, "vendor", p)
    rows = f.posted_txns("vendor_transaction", v)
    rows = rows[
        rows.txn_type.isin(["invoice", "credit_note", "debit_note"])
        & in_window(rows.txn_date, f.fy_start(v.legal_entity), f.today)
    ]
    invoices = int((rows.txn_type == "invoice").sum())
    facts = [amount("spend", rows.amount_acct.sum()), count("invoices", invoices)]
    return ([none("invoices")] if rows.empty else []) + facts


@check("open_pos_vendor")
def _(f, p):
    v = find_party(f, "vendor", p)
    po = f.t["purchase_order"]
    rows = po[
        (po.legal_entity == v.legal_entity)
        & (po.vendor_account == v.account)
        & (po.status == "open")
        & (po.order_date <= f.today)
    ]
    if rows.empty:
        return [none("purchase_orders"), count("purchase_orders", 0)]
    return [
        count("purchase_orders", len(rows)),
        top("purchase_orders", rows.po_number, ordered=False),
    ]


# ---- comparison ----------------------------------------------------------------------------------


def recompute(frames: Frames, template: str, params: dict[str, Any]) -> list[Fact]:
    try:
        return CHECKS[template](frames, params)
    except Missing as missing:
        return [none(missing.kind)]


def normalise(facts) -> list[Fact]:
    out = []
    for fact in facts:
        if isinstance(fact, tuple):
            kind, name, value = fact
        else:
            kind, name, value = fact.kind, fact.field, fact.value
            if kind == "top_n" and not fact.ordered:
                value = sorted(str(v) for v in value)
        if kind in ("amount", "percent"):
            value = round(float(value), 2)
        out.append((kind, name, value))
    return sorted(out, key=lambda fact: (fact[0], fact[1]))


def mismatches(frames: Frames, dataset: Dataset) -> list[str]:
    problems = []
    for item in dataset.items:
        template, params = item.metadata["template"], item.metadata["params"]
        expected = normalise(item.expected)
        actual = normalise(recompute(frames, template, params))
        if not _same(expected, actual):
            problems.append(
                f"{item.id} ({template} {params}): oracle {expected} != pandas {actual}"
            )
    return problems


def _same(left: list[Fact], right: list[Fact]) -> bool:
    if len(left) != len(right):
        return False
    for (k1, f1, v1), (k2, f2, v2) in zip(left, right, strict=True):
        if (k1, f1) != (k2, f2):
            return False
        if k1 in ("amount", "percent"):
            if abs(v1 - v2) > 0.011:
                return False
        elif v1 != v2:
            return False
    return True


# ---- tests ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_erp_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A second, smaller ERP at another seed, so keys are checked on different data."""
    from synthetic_erp import generate_erp

    url = f"sqlite:///{tmp_path_factory.mktemp('erp7') / 'erp.db'}"
    generate_erp(url, seed=7, scale=0.3)
    return url


def test_every_template_has_an_independent_check() -> None:
    from synthetic_erp.scenarios import TEMPLATES

    assert sorted(TEMPLATES) == sorted(CHECKS)


SETS = {"default_seed_42": ("erp_db_url", 300, 11), "small_seed_7": ("small_erp_url", 500, 5)}
"""ERP fixture, items and question seed per checked set: together they use every phrasing."""


@pytest.fixture(scope="module")
def checked_sets(request: pytest.FixtureRequest) -> dict[str, tuple[str, Dataset]]:
    sets = {}
    for which, (fixture, n, seed) in SETS.items():
        url = request.getfixturevalue(fixture)
        sets[which] = (url, generate_questions(url, n=n, seed=seed))
    return sets


@pytest.mark.parametrize("which", list(SETS))
def test_oracle_matches_pandas_for_every_item(which: str, checked_sets) -> None:
    url, dataset = checked_sets[which]
    frames = Frames(url)
    problems = mismatches(frames, dataset)
    assert not problems, "\n".join(problems[:20])
    templates = {item.metadata["template"] for item in dataset.items}
    assert len(templates) >= 60, f"only {len(templates)} templates exercised"


def test_the_checked_sets_cover_every_template_and_phrasing(checked_sets) -> None:
    from synthetic_erp.scenarios import TEMPLATES

    used = {
        (item.metadata["template"], item.metadata["phrasing"])
        for _, dataset in checked_sets.values()
        for item in dataset.items
    }
    every = {(name, i) for name, t in TEMPLATES.items() for i in range(len(t.phrasings))}
    assert every <= used, sorted(every - used)
