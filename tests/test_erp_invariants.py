"""Invariants of generated ERP data, checked at the default scale and at several small seeds."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from synthetic_erp import _schema as s
from synthetic_erp import generate_erp
from synthetic_erp._db import open_engine

CENT = Decimal("0.01")
pytestmark = pytest.mark.timeout(120)


def rows(engine: Engine, model) -> list:
    with engine.connect() as conn:
        return list(conn.execute(select(model.__table__)))


def to_acct(amount: Decimal, rate: Decimal) -> Decimal:
    return (amount * rate).quantize(CENT, rounding=ROUND_HALF_UP)


def aging_bucket(as_of: dt.date, reference: dt.date) -> str:
    """The documented aging buckets: days past due (credits use their transaction date)."""
    days = (as_of - reference).days
    if days <= 0:
        return "current"
    if days <= 30:
        return "1-30"
    if days <= 60:
        return "31-60"
    if days <= 90:
        return "61-90"
    return "90+"


def ledger_violations(engine: Engine, side: str) -> list[str]:
    """Every broken ledger invariant of the AR (``side='ar'``) or AP ledger, as messages."""
    if side == "ar":
        txn_model, settle_model, party_model, party_col = (
            s.CustomerTransaction, s.CustomerSettlement, s.Customer, "customer_account",
        )  # fmt: skip
    else:
        txn_model, settle_model, party_model, party_col = (
            s.VendorTransaction, s.VendorSettlement, s.Vendor, "vendor_account",
        )  # fmt: skip
    meta = {r.key: r.value for r in rows(engine, s.ErpMeta)}
    as_of = dt.date.fromisoformat(meta["as_of"])
    accounting = {le.code: le.accounting_currency for le in rows(engine, s.LegalEntity)}
    rates = {
        (r.from_currency, r.to_currency, r.rate_date): r.rate for r in rows(engine, s.ExchangeRate)
    }
    parties = {(p.legal_entity, p.account): p for p in rows(engine, party_model)}
    txns = {(t.legal_entity, t.voucher): t for t in rows(engine, txn_model)}
    problems: list[str] = []
    applied: dict[tuple, Decimal] = defaultdict(Decimal)
    for st in rows(engine, settle_model):
        debit = txns.get((st.legal_entity, st.debit_voucher))
        credit = txns.get((st.legal_entity, st.credit_voucher))
        if debit is None or credit is None:
            problems.append(f"settlement {st.settlement_id} points at a missing voucher")
            continue
        if not st.amount_cur > 0 or st.cash_discount_taken < 0:
            problems.append(f"settlement {st.settlement_id} amount not positive")
        if st.amount_cur > debit.amount_cur:
            problems.append(f"settlement {st.settlement_id} exceeds its debit document")
        if st.amount_cur - st.cash_discount_taken > -credit.amount_cur:
            problems.append(f"settlement {st.settlement_id} exceeds its credit document")
        if debit.amount_cur <= 0 or credit.amount_cur >= 0:
            problems.append(f"settlement {st.settlement_id} has the wrong document signs")
        party = getattr(st, party_col)
        if getattr(debit, party_col) != party or getattr(credit, party_col) != party:
            problems.append(f"settlement {st.settlement_id} crosses parties")
        if not max(debit.txn_date, credit.txn_date) <= st.settled_date <= as_of:
            problems.append(f"settlement {st.settlement_id} dated outside its documents/as_of")
        applied[(st.legal_entity, st.debit_voucher)] += st.amount_cur
        applied[(st.legal_entity, st.credit_voucher)] -= st.amount_cur - st.cash_discount_taken
    for key, t in txns.items():
        expected_open = t.amount_cur - applied.get(key, Decimal(0))
        if t.open_amount_cur != expected_open:
            problems.append(
                f"{t.voucher}: open {t.open_amount_cur} != amount - settled {expected_open}"
            )
        if t.amount_cur == 0 or (
            t.open_amount_cur != 0 and (t.open_amount_cur > 0) != (t.amount_cur > 0)
        ):
            problems.append(f"{t.voucher}: open amount has the wrong sign")
        rate = Decimal(1) if t.currency == accounting[t.legal_entity] else rates.get(
            (t.currency, accounting[t.legal_entity], t.txn_date)
        )  # fmt: skip
        if rate is None or t.exchange_rate != rate:
            problems.append(f"{t.voucher}: exchange rate {t.exchange_rate} != dated rate {rate}")
        elif t.amount_acct != to_acct(t.amount_cur, rate):
            problems.append(f"{t.voucher}: amount_acct {t.amount_acct} != amount x rate")
        elif t.open_amount_acct != to_acct(t.open_amount_cur, rate):
            problems.append(f"{t.voucher}: open_amount_acct != open x rate")
        if (t.closed_date is None) != (t.open_amount_cur != 0):
            problems.append(f"{t.voucher}: closed_date does not match the open amount")
        party = parties.get((t.legal_entity, getattr(t, party_col)))
        if party is None:
            problems.append(f"{t.voucher}: unknown party")
        elif t.txn_date < party.created_date:
            problems.append(f"{t.voucher}: dated before its party was created")
        if not as_of - dt.timedelta(days=365) <= t.txn_date <= as_of:
            problems.append(f"{t.voucher}: dated outside the year up to as_of")
        if t.due_date is not None and t.due_date < t.txn_date:
            problems.append(f"{t.voucher}: due before its date")
        if t.closed_date is not None and not t.txn_date <= t.closed_date <= as_of:
            problems.append(f"{t.voucher}: closed outside its date..as_of")
        if not t.posted:
            problems.append(f"{t.voucher}: unposted document in the ledger")
    return problems


def balances_and_aging(engine: Engine, side: str) -> tuple[dict, dict]:
    """Per party: balance = sum of open amounts (accounting currency), and its aging buckets."""
    model, party_col = (
        (s.CustomerTransaction, "customer_account") if side == "ar"
        else (s.VendorTransaction, "vendor_account")
    )  # fmt: skip
    as_of = dt.date.fromisoformat({r.key: r.value for r in rows(engine, s.ErpMeta)}["as_of"])
    balance: dict[tuple, Decimal] = defaultdict(Decimal)
    aging: dict[tuple, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for t in rows(engine, model):
        if t.open_amount_cur == 0:
            continue
        key = (t.legal_entity, getattr(t, party_col))
        balance[key] += t.open_amount_acct
        aging[key][aging_bucket(as_of, t.due_date or t.txn_date)] += t.open_amount_acct
    return balance, aging


def document_violations(engine: Engine) -> list[str]:
    problems: list[str] = []
    meta = {r.key: r.value for r in rows(engine, s.ErpMeta)}
    as_of = dt.date.fromisoformat(meta["as_of"])
    so_lines: dict[tuple, list] = defaultdict(list)
    for line in rows(engine, s.SalesOrderLine):
        so_lines[(line.legal_entity, line.sales_id)].append(line)
        if line.quantity * line.unit_price != line.line_amount:
            problems.append(f"{line.sales_id}/{line.line_number}: qty x price != line amount")
    orders = {(o.legal_entity, o.sales_id): o for o in rows(engine, s.SalesOrder)}
    for key, order in orders.items():
        if sum(line.line_amount for line in so_lines[key]) != order.total_amount:
            problems.append(f"{order.sales_id}: total != sum of lines")
        if (order.total_amount < 0) != (order.order_type == "return"):
            problems.append(f"{order.sales_id}: return orders and only they are negative")
        if order.order_date > as_of:
            problems.append(f"{order.sales_id}: ordered after as_of")
    for t in rows(engine, s.CustomerTransaction):
        if t.sales_id is not None:
            order = orders.get((t.legal_entity, t.sales_id))
            if order is None or abs(order.total_amount) != abs(t.amount_cur):
                problems.append(f"{t.voucher}: amount differs from its order {t.sales_id}")
    po_lines: dict[tuple, list] = defaultdict(list)
    for line in rows(engine, s.PurchaseOrderLine):
        po_lines[(line.legal_entity, line.po_number)].append(line)
        if line.quantity_ordered * line.unit_price != line.line_amount:
            problems.append(f"{line.po_number}/{line.line_number}: qty x price != line amount")
        if not line.quantity_invoiced <= line.quantity_received <= line.quantity_ordered:
            problems.append(f"{line.po_number}/{line.line_number}: invoiced > received > ordered")
    received: dict[tuple, Decimal] = defaultdict(Decimal)
    for receipt in rows(engine, s.ProductReceipt):
        received[(receipt.legal_entity, receipt.po_number, receipt.line_number)] += receipt.quantity
        if receipt.receipt_date > as_of:
            problems.append(f"{receipt.receipt_id}: received after as_of")
    for po in rows(engine, s.PurchaseOrder):
        lines = po_lines[(po.legal_entity, po.po_number)]
        if sum(line.line_amount for line in lines) != po.total_amount:
            problems.append(f"{po.po_number}: total != sum of lines")
        for line in lines:
            got = received.get((po.legal_entity, po.po_number, line.line_number), Decimal(0))
            if got != line.quantity_received:
                problems.append(f"{po.po_number}/{line.line_number}: receipts != received qty")
    ledger = {(t.legal_entity, t.voucher): t for t in rows(engine, s.VendorTransaction)}
    for invoice in rows(engine, s.VendorInvoice):
        posted = invoice.status == "posted"
        if posted != (invoice.voucher is not None):
            problems.append(f"{invoice.invoice_id}: voucher iff posted")
        if posted:
            txn = ledger.get((invoice.legal_entity, invoice.voucher))
            if txn is None or txn.amount_cur != invoice.amount or txn.txn_type != "invoice":
                problems.append(f"{invoice.invoice_id}: ledger voucher does not match")
        if (invoice.match_status == "failed") != (invoice.match_failure_reason is not None):
            problems.append(f"{invoice.invoice_id}: failure reason iff failed match")
        if (invoice.match_status == "not_required") != (invoice.po_number is None):
            problems.append(f"{invoice.invoice_id}: match required iff a PO")
    journal_lines: dict[tuple, list] = defaultdict(list)
    for line in rows(engine, s.PaymentJournalLine):
        journal_lines[(line.legal_entity, line.journal_id)].append(line)
    for journal in rows(engine, s.PaymentJournal):
        lines = journal_lines[(journal.legal_entity, journal.journal_id)]
        if len(lines) != journal.line_count or sum(x.amount for x in lines) != journal.total_amount:
            problems.append(f"{journal.journal_id}: totals do not match its lines")
    agents = {(a.legal_entity, a.agent_id): a for a in rows(engine, s.CollectionsAgent)}
    for customer in rows(engine, s.Customer):
        if customer.collections_agent_id is not None:
            agent = agents.get((customer.legal_entity, customer.collections_agent_id))
            if agent is None or agent.pool_id != customer.collections_pool_id:
                problems.append(f"{customer.account}: agent not in the customer's pool")
        if customer.created_date > as_of:
            problems.append(f"{customer.account}: created after as_of")
    for activity in rows(engine, s.CollectionActivity):
        if (activity.legal_entity, activity.owner_agent_id) not in agents:
            problems.append(f"{activity.activity_id}: unknown owner")
        if activity.created_date > as_of or activity.created_date > activity.due_date:
            problems.append(f"{activity.activity_id}: created after as_of or its due date")
    for letter in rows(engine, s.CollectionLetter):
        if letter.sent_date > as_of or letter.amount <= 0 or not 1 <= letter.level <= 4:
            problems.append(f"{letter.letter_id}: bad date, amount or level")
    return problems


def dating_violations(engine: Engine) -> list[str]:
    """Dates consistent with as_of and with party creation; terms and discounts as documented."""
    problems: list[str] = []
    as_of = dt.date.fromisoformat({r.key: r.value for r in rows(engine, s.ErpMeta)}["as_of"])
    net_days = {(t.legal_entity, t.terms_id): t.net_days for t in rows(engine, s.PaymentTerms)}
    discounts = {(d.legal_entity, d.code): d for d in rows(engine, s.CashDiscount)}
    terms_discount = {
        (t.legal_entity, t.terms_id): t.cash_discount_code for t in rows(engine, s.PaymentTerms)
    }
    customers = {(c.legal_entity, c.account): c for c in rows(engine, s.Customer)}
    vendors = {(v.legal_entity, v.account): v for v in rows(engine, s.Vendor)}
    invoice_types = {"sales_invoice", "free_text_invoice", "invoice"}
    for model, parties, column in (
        (s.CustomerTransaction, customers, "customer_account"),
        (s.VendorTransaction, vendors, "vendor_account"),
    ):
        for t in rows(engine, model):
            if t.txn_type not in invoice_types:
                continue
            party = parties[(t.legal_entity, getattr(t, column))]
            terms = (t.legal_entity, party.payment_terms)
            if (t.due_date - t.txn_date).days != net_days[terms]:
                problems.append(f"{t.voucher}: due date is not date + net days of its terms")
            code = terms_discount[terms]
            if code is None:
                if t.cash_discount_date is not None:
                    problems.append(f"{t.voucher}: cash discount without discount terms")
                continue
            discount = discounts[(t.legal_entity, code)]
            expected = (t.amount_cur * discount.percent / 100).quantize(CENT, ROUND_HALF_UP)
            if (t.cash_discount_date - t.txn_date).days != discount.days or (
                t.cash_discount_amount != expected
            ):
                problems.append(f"{t.voucher}: cash discount date/amount off its code {code}")
    for order in rows(engine, s.SalesOrder):
        created = customers[(order.legal_entity, order.customer_account)].created_date
        if not created <= order.order_date <= as_of:
            problems.append(f"{order.sales_id}: ordered outside created..as_of")
    orders = {(o.legal_entity, o.po_number): o for o in rows(engine, s.PurchaseOrder)}
    for po in orders.values():
        created = vendors[(po.legal_entity, po.vendor_account)].created_date
        if not created <= po.order_date <= as_of:
            problems.append(f"{po.po_number}: ordered outside created..as_of")
    receipts: dict[tuple, list] = defaultdict(list)
    for receipt in rows(engine, s.ProductReceipt):
        receipts[(receipt.legal_entity, receipt.po_number)].append(receipt.receipt_date)
        if receipt.receipt_date < orders[(receipt.legal_entity, receipt.po_number)].order_date:
            problems.append(f"{receipt.receipt_id}: received before it was ordered")
    for invoice in rows(engine, s.VendorInvoice):
        if invoice.invoice_date > as_of:
            problems.append(f"{invoice.invoice_id}: invoiced after as_of")
        matched = invoice.status == "posted" and invoice.match_status == "matched"
        received = receipts.get((invoice.legal_entity, invoice.po_number), [])
        if matched and (not received or max(received) > invoice.invoice_date):
            problems.append(f"{invoice.invoice_id}: matched before its goods were received")
    ledger = {(t.legal_entity, t.voucher): t for t in rows(engine, s.CustomerTransaction)}
    for dispute in rows(engine, s.CustomerDispute):
        invoice = ledger[(dispute.legal_entity, dispute.voucher)]
        if not invoice.txn_date <= dispute.opened_date <= as_of:
            problems.append(f"{dispute.dispute_id}: opened outside invoice date..as_of")
        if (dispute.status == "resolved") != (dispute.resolved_date is not None):
            problems.append(f"{dispute.dispute_id}: resolved date iff resolved")
        if dispute.kind == "dispute" and dispute.status == "open" and invoice.open_amount_cur == 0:
            problems.append(f"{dispute.dispute_id}: open dispute on a settled invoice")
    for case in rows(engine, s.CollectionCase):
        created = customers[(case.legal_entity, case.customer_account)].created_date
        if not created <= case.opened_date <= as_of:
            problems.append(f"{case.case_id}: opened outside created..as_of")
        if (case.status == "closed") != (case.closed_date is not None):
            problems.append(f"{case.case_id}: closed date iff closed")
    return problems


def payment_journal_violations(engine: Engine) -> list[str]:
    """Posted journal lines are exactly the vendor payments, per vendor and invoice paid."""
    journals = {(j.legal_entity, j.journal_id): j for j in rows(engine, s.PaymentJournal)}
    paid_by_lines: dict[tuple, Decimal] = defaultdict(Decimal)
    for line in rows(engine, s.PaymentJournalLine):
        if journals[(line.legal_entity, line.journal_id)].status == "posted":
            paid_by_lines[(line.legal_entity, line.vendor_account)] += line.amount
    paid_by_ledger: dict[tuple, Decimal] = defaultdict(Decimal)
    for t in rows(engine, s.VendorTransaction):
        if t.txn_type == "payment":
            paid_by_ledger[(t.legal_entity, t.vendor_account)] -= t.amount_cur
    return [
        f"{key}: journals paid {paid_by_lines.get(key)} but the ledger {paid_by_ledger.get(key)}"
        for key in set(paid_by_lines) | set(paid_by_ledger)
        if paid_by_lines.get(key, 0) != paid_by_ledger.get(key, 0)
    ]


def assert_all_invariants(url: str) -> None:
    engine = open_engine(url, read_only=True)
    try:
        problems = ledger_violations(engine, "ar") + ledger_violations(engine, "ap")
        problems += document_violations(engine) + dating_violations(engine)
        problems += payment_journal_violations(engine)
        assert not problems, f"{len(problems)} violations, first: {problems[:5]}"
        for side in ("ar", "ap"):
            balance, aging = balances_and_aging(engine, side)
            for key, total in balance.items():
                assert sum(aging[key].values()) == total, key
    finally:
        engine.dispose()


def test_default_scale_invariants(erp_db_url: str) -> None:
    assert_all_invariants(erp_db_url)


@pytest.mark.parametrize("seed", [1, 7, 2026])
def test_invariants_hold_at_other_seeds(tmp_path: Path, seed: int) -> None:
    url = f"sqlite:///{tmp_path / 'erp.db'}"
    report = generate_erp(url, customers=150, vendors=150, seed=seed)
    assert report.customers == 150 and report.vendors == 150
    assert_all_invariants(url)


def test_default_scale_meets_published_sizes(erp_db_url: str) -> None:
    engine = open_engine(erp_db_url, read_only=True)
    try:
        customers = rows(engine, s.Customer)
        vendors = rows(engine, s.Vendor)
        assert len(customers) == 1000 and len(vendors) == 1000
        assert customers[0].account == "SYNCUS-0001" and vendors[-1].account == "SYNVEN-1000"
        assert len(rows(engine, s.CustomerTransaction)) >= 3400
        assert len(rows(engine, s.VendorTransaction)) >= 3400
        dates = [t.txn_date for t in rows(engine, s.CustomerTransaction)]
        assert min(dates) <= dt.date(2025, 3, 15) and max(dates) == dt.date(2026, 3, 2)
        meta = {r.key: r.value for r in rows(engine, s.ErpMeta)}
        expected = {"as_of", "seed", "scale", "customers", "vendors", "generator_version",
                    "faker_version", "source", "snapshot_hash"}  # fmt: skip
        assert expected <= set(meta)
        assert meta["source"] == "generated" and meta["as_of"] == "2026-03-02"
        by_le = defaultdict(int)
        for customer in customers:
            by_le[customer.legal_entity] += 1
        assert set(by_le) == {"USMF", "USPI", "DEMF", "GBSI"}
        assert by_le["USMF"] > 500
    finally:
        engine.dispose()
