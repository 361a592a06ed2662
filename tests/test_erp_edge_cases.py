"""The deliberate edge cases every question scenario needs exist in the default-scale ERP."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from decimal import Decimal

import pytest
from sqlalchemy import Engine

from synthetic_erp import _schema as s
from synthetic_erp._db import open_engine
from synthetic_erp._generate import CUSTOMER_NAME_PAIRS, VENDOR_NAME_PAIRS
from tests.test_erp_invariants import aging_bucket, balances_and_aging, rows

AS_OF = dt.date(2026, 3, 2)
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def engine(erp_db_url: str):
    engine = open_engine(erp_db_url, read_only=True)
    yield engine
    engine.dispose()


def test_over_credit_limit_and_credit_hold(engine: Engine) -> None:
    balance, _ = balances_and_aging(engine, "ar")
    over = [
        c for c in rows(engine, s.Customer)
        if balance.get((c.legal_entity, c.account), 0) > c.credit_limit
    ]  # fmt: skip
    assert any(c.credit_hold for c in over if c.legal_entity == "USMF")
    assert any(c.credit_hold for c in rows(engine, s.Customer) if c not in over)


def test_vendor_payment_hold_with_open_invoices(engine: Engine) -> None:
    held = {(v.legal_entity, v.account) for v in rows(engine, s.Vendor) if v.payment_hold}
    assert all(v.hold_reason for v in rows(engine, s.Vendor) if v.payment_hold)
    open_held = [
        t for t in rows(engine, s.VendorTransaction)
        if (t.legal_entity, t.vendor_account) in held and t.open_amount_cur > 0
    ]  # fmt: skip
    assert open_held


@pytest.mark.parametrize("model", [s.CustomerTransaction, s.VendorTransaction])
def test_overdue_items_in_every_aging_bucket(engine: Engine, model) -> None:
    buckets = Counter(
        aging_bucket(AS_OF, t.due_date)
        for t in rows(engine, model)
        if t.legal_entity == "USMF" and t.open_amount_cur > 0
    )
    for bucket in ("current", "1-30", "31-60", "61-90", "90+"):
        assert buckets[bucket] >= 3, (bucket, buckets)


def test_partial_payments_unapplied_credits_disputes_and_deductions(engine: Engine) -> None:
    txns = rows(engine, s.CustomerTransaction)
    settled = {x.debit_voucher for x in rows(engine, s.CustomerSettlement)}
    assert any(0 < t.open_amount_cur < t.amount_cur and t.voucher in settled for t in txns), (
        "partially paid invoice"
    )
    assert any(t.txn_type == "credit_note" and t.open_amount_cur == t.amount_cur for t in txns)
    assert any(t.txn_type == "payment" and t.open_amount_cur < 0 for t in txns), "unapplied payment"
    disputes = rows(engine, s.CustomerDispute)
    kinds = {(d.kind, d.status) for d in disputes}
    assert {("dispute", "open"), ("deduction", "open"), ("dispute", "resolved")} <= kinds
    assert any(x.cash_discount_taken > 0 for x in rows(engine, s.CustomerSettlement))


@pytest.mark.parametrize("model", [s.CustomerTransaction, s.VendorTransaction])
def test_cash_discounts_about_to_expire(engine: Engine, model) -> None:
    expiring = [
        t for t in rows(engine, model)
        if t.open_amount_cur > 0 and t.cash_discount_date is not None
        and AS_OF <= t.cash_discount_date <= AS_OF + dt.timedelta(days=7)
    ]  # fmt: skip
    assert len(expiring) >= 2


def test_vendor_invoice_life_cycle_and_failed_matches(engine: Engine) -> None:
    invoices = rows(engine, s.VendorInvoice)
    assert {i.status for i in invoices} == {"unposted", "pending_approval", "approved", "posted"}
    assert {i.match_status for i in invoices} == {"matched", "failed", "not_required"}
    failed = [i for i in invoices if i.match_status == "failed"]
    assert len({i.match_failure_reason for i in failed}) == 3
    assert all(i.approver for i in invoices if i.status in ("pending_approval", "approved"))


def test_multi_currency_with_dated_rates(engine: Engine) -> None:
    txns = rows(engine, s.CustomerTransaction) + rows(engine, s.VendorTransaction)
    assert {t.currency for t in txns} == {"USD", "EUR", "GBP", "CAD"}
    foreign = [t for t in txns if t.legal_entity == "USMF" and t.currency != "USD"]
    assert len({t.exchange_rate for t in foreign}) > 10
    rates = rows(engine, s.ExchangeRate)
    assert {(r.from_currency, r.to_currency) for r in rates} >= {("EUR", "USD"), ("CAD", "USD")}


def test_parties_names_and_pools(engine: Engine) -> None:
    customers = rows(engine, s.Customer)
    assert any(c.collections_pool_id is None for c in customers if c.legal_entity == "USMF")
    les_by_name = defaultdict(set)
    for c in customers:
        les_by_name[c.name].add(c.legal_entity)
    assert any(len(les) >= 2 for les in les_by_name.values()), "same name in two legal entities"
    usmf_names = {c.name for c in customers if c.legal_entity == "USMF"}
    for pair in CUSTOMER_NAME_PAIRS:
        assert set(pair) <= usmf_names
    vendor_names = {v.name for v in rows(engine, s.Vendor) if v.legal_entity == "USMF"}
    for pair in VENDOR_NAME_PAIRS:
        assert set(pair) <= vendor_names


@pytest.mark.parametrize(
    ("party_model", "txn_model", "column"),
    [(s.Customer, s.CustomerTransaction, "customer_account"),
     (s.Vendor, s.VendorTransaction, "vendor_account")],
)  # fmt: skip
def test_parties_with_nothing_open(engine: Engine, party_model, txn_model, column) -> None:
    open_by_party: dict[str, Decimal] = defaultdict(Decimal)
    has_txns = set()
    for t in rows(engine, txn_model):
        has_txns.add(getattr(t, column))
        open_by_party[getattr(t, column)] += abs(t.open_amount_cur)
    accounts = [p.account for p in rows(engine, party_model)]
    assert any(a not in has_txns for a in accounts), "a party with no transactions"
    assert any(a in has_txns and open_by_party[a] == 0 for a in accounts), "all settled"


def test_sales_orders_in_every_status(engine: Engine) -> None:
    orders = rows(engine, s.SalesOrder)
    assert {o.status for o in orders} == {"open", "delivered", "invoiced", "canceled"}
    assert {o.order_type for o in orders} == {"sales", "return"}
    assert {o.release_status for o in orders} == {"open", "partially_released", "released"}
    assert any(o.do_not_process and o.status == "open" for o in orders)
    returns = {o.status for o in orders if o.order_type == "return"}
    assert {"open", "invoiced"} <= returns


def test_collections_around_as_of(engine: Engine) -> None:
    assert {x.level for x in rows(engine, s.CollectionLetter)} == {1, 2, 3, 4}
    activities = rows(engine, s.CollectionActivity)
    assert any(a.due_date < AS_OF and a.status == "open" for a in activities), "overdue task"
    assert any(a.due_date > AS_OF for a in activities)
    assert any(AS_OF <= a.due_date <= AS_OF + dt.timedelta(days=7) for a in activities)
    assert {a.category for a in activities} == {"activity", "task"}
    assert {c.status for c in rows(engine, s.CollectionCase)} == {"open", "closed"}


def test_payment_journals_and_proposals(engine: Engine) -> None:
    journals = rows(engine, s.PaymentJournal)
    assert {(j.status, j.source) for j in journals} >= {
        ("posted", "manual"), ("posted", "proposal"), ("open", "proposal"), ("open", "manual")
    }  # fmt: skip
    held = {(v.legal_entity, v.account) for v in rows(engine, s.Vendor) if v.payment_hold}
    open_ids = {(j.legal_entity, j.journal_id) for j in journals if j.status == "open"}
    for line in rows(engine, s.PaymentJournalLine):
        if (line.legal_entity, line.journal_id) in open_ids:
            assert (line.legal_entity, line.vendor_account) not in held


@pytest.mark.parametrize("seed", [3, 99])
def test_forced_edge_cases_exist_at_small_scale(tmp_path, seed: int) -> None:
    from synthetic_erp import generate_erp

    url = f"sqlite:///{tmp_path / 'small.db'}"
    generate_erp(url, customers=100, vendors=100, seed=seed)
    small = open_engine(url, read_only=True)
    try:
        balance, _ = balances_and_aging(small, "ar")
        for le in ("USMF", "USPI", "DEMF", "GBSI"):
            customers = [c for c in rows(small, s.Customer) if c.legal_entity == le]
            assert any(
                c.credit_hold and balance.get((le, c.account), 0) > c.credit_limit
                for c in customers
            ), le
            assert any(c.collections_pool_id is None for c in customers), le
            assert any(v.payment_hold for v in rows(small, s.Vendor) if v.legal_entity == le), le
            failed = [i for i in rows(small, s.VendorInvoice) if i.match_status == "failed"]
            assert any(i.legal_entity == le for i in failed), le
        for model in (s.CustomerTransaction, s.VendorTransaction):
            assert any(
                t.legal_entity == "USMF" and t.open_amount_cur > 0
                and t.cash_discount_date is not None
                and AS_OF <= t.cash_discount_date <= AS_OF + dt.timedelta(days=7)
                for t in rows(small, model)
            )  # fmt: skip
        assert any(
            t.legal_entity == "USMF" and t.txn_type == "credit_note"
            and t.open_amount_cur == t.amount_cur
            for t in rows(small, s.CustomerTransaction)
        )  # fmt: skip
    finally:
        small.dispose()
