"""Cash Discounts (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from typing import Any

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _amount,
    _count,
    _sum,
    between,
    is_open_invoice,
    ledger_open_items,
    long_date,
    money,
    no_records,
    party_open_items,
    registrar,
    window,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft
from synthetic_erp.scenarios._keys import ListKey, party_records, record_refs, txn_refs

template = registrar("Cash Discounts", "AR")


def _discount_invoice(row: s.CustomerTransaction) -> bool:
    """An open customer invoice that carries a cash discount date."""
    return is_open_invoice(row) and row.cash_discount_date is not None


def _choose_discounts_expiring_entity(c: Chooser) -> Draft:
    return c.days_ahead((3, 5, 7, 10))


EXPIRING = ListKey(
    "invoices",
    none="No open customer invoices in {le} have a cash discount expiring {window}.",
    found="{n} open customer invoice(s) in {le} have a cash discount expiring {window}",
    ids=("invoices", "document_number"),
)


@template(
    choose=_choose_discounts_expiring_entity,
    phrasings=(
        "List customer invoices {where} whose cash discount runs out {horizon}.",
        "Which open customer invoices {where} lose their early-payment discount {horizon}?",
    ),
)
def discounts_expiring_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    end = ctx.today + dt.timedelta(days=days)
    rows = [
        row
        for row in ledger_open_items(ctx, "customer", le)
        if _discount_invoice(row) and ctx.today <= row.cash_discount_date <= end
    ]
    rows.sort(key=lambda row: (row.cash_discount_date, row.voucher))
    lines = [
        f"{r.document_number} ({r.customer_account}) discount "
        f"{money(r.cash_discount_amount or 0, r.currency)} until {long_date(r.cash_discount_date)}"
        for r in rows
    ]
    return EXPIRING.answer(
        rows,
        lines,
        txn_refs("customer", rows),
        le=le,
        window=between(ctx.today, end),
    )


@template(
    party="customer",
    extra=Chooser.period_extra,
    phrasings=(
        "Did {who} take any cash discounts {period} {where}? How much?",
        "How often did {who} {where} pay early enough to earn the cash discount {period}?",
    ),
)
def discounts_taken_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    start, end = window(params)
    st = s.CustomerSettlement
    taken = (st.cash_discount_taken > 0, st.settled_date >= start, st.settled_date <= end)
    rows = party_records(ctx, st, p, *taken, order_by=(st.settled_date, st.settlement_id))
    span = between(start, end)
    if not rows:
        return no_records(
            f"{p.label} in {p.legal_entity} took no cash discounts {span}: no payment "
            "was made within a discount window.",
            "discounts_taken",
            [p.path],
        )
    total = _sum(r.cash_discount_taken for r in rows)
    return Answer(
        text=f"{p.label} in {p.legal_entity} paid within the discount window {len(rows)} time(s) "
        f"{span}, taking {money(total, p.currency)} in cash discounts.",
        facts=[
            _count("discounts_taken", len(rows)),
            _amount("discount_total", total, p.currency, "credit"),
        ],
        refs=[p.path, *record_refs("customer-settlements", rows, "settlement_id")],
        records=1,
    )


STILL_AVAILABLE = ListKey(
    "invoices",
    none="None of the open invoices of {who} has a cash discount still available as of {today}.",
    found="{n} open invoice(s) of {who} still carry an available cash discount",
    counted=False,
    ids=("invoices", "document_number"),
)


@template(
    party="customer",
    phrasings=(
        "Which open invoices of {who} still qualify for a cash discount {where} {asof}?",
        "Can {who} {where} still take an early-payment discount on any open invoice {asof}?",
    ),
)
def open_discount_invoices_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    rows = [
        row
        for row in party_open_items(ctx, p)
        if _discount_invoice(row) and row.cash_discount_date >= ctx.today
    ]
    lines = [
        f"{r.document_number}: {money(r.cash_discount_amount or 0, p.currency)} if paid by "
        f"{long_date(r.cash_discount_date)}"
        for r in rows
    ]
    return STILL_AVAILABLE.answer(
        rows,
        lines,
        txn_refs("customer", rows),
        party=p,
        today=long_date(ctx.today),
    )
