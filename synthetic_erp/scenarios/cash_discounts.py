"""Cash Discounts (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    AR_INVOICE_TYPES,
    LIST_LIMIT,
    Answer,
    OracleContext,
    _amount,
    _count,
    _cust_items,
    _d,
    _party_txn_refs,
    _sum,
    _top,
    _txn_path,
    ledger_open_items,
    listed,
    long_date,
    money,
    no_records,
    party,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft

template = registrar("Cash Discounts", "AR")


def _choose_discounts_expiring_entity(c: Chooser) -> Draft:
    days = c.rng.choice((3, 5, 7, 10))
    return c.le_draft({"legal_entity": c.view.pick_le(c.rng), "days": days}, **c.horizon(days))


@template(
    "discounts_expiring_entity",
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
        if row.open_amount_cur > 0
        and row.txn_type in AR_INVOICE_TYPES
        and row.cash_discount_date is not None
        and ctx.today <= row.cash_discount_date <= end
    ]
    rows.sort(key=lambda row: (row.cash_discount_date, row.voucher))
    window = f"between {long_date(ctx.today)} and {long_date(end)}"
    if not rows:
        return no_records(
            f"No open customer invoices in {le} have a cash discount expiring {window}.", "invoices"
        )
    lines = [
        f"{r.document_number} ({r.customer_account}) discount "
        f"{money(r.cash_discount_amount or 0, r.currency)} until {long_date(r.cash_discount_date)}"
        for r in rows
    ]
    return listed(
        rows,
        lines,
        f"{len(rows)} open customer invoice(s) in {le} have a cash discount expiring {window}",
        [
            _count("invoices", len(rows)),
            _top("invoices", [r.document_number for r in rows], ordered=False),
        ],
        [_txn_path("customer", r) for r in rows[:LIST_LIMIT]],
    )


@template(
    "discounts_taken_customer",
    party="customer",
    extra=Chooser.period_extra,
    phrasings=(
        "Did {who} take any cash discounts {period} {where}? How much?",
        "How often did {who} {where} pay early enough to earn the cash discount {period}?",
    ),
)
def discounts_taken_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    start, end = _d(params["start"]), _d(params["end"])
    st = s.CustomerSettlement
    rows = ctx.rows(
        select(st)
        .where(
            st.legal_entity == p.legal_entity,
            st.customer_account == p.account,
            st.cash_discount_taken > 0,
            st.settled_date >= start,
            st.settled_date <= end,
        )
        .order_by(st.settled_date, st.settlement_id)
    )
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return no_records(
            f"{p.label} in {p.legal_entity} took no cash discounts {window}: no payment "
            "was made within a discount window.",
            "discounts_taken",
            [p.path],
        )
    total = _sum(r.cash_discount_taken for r in rows)
    return Answer(
        text=f"{p.label} in {p.legal_entity} paid within the discount window {len(rows)} time(s) "
        f"{window}, taking {money(total, p.currency)} in cash discounts.",
        facts=[_count("discounts_taken", len(rows)), _amount("discount_total", total)],
        refs=[p.path]
        + [record_path("customer-settlements", p.legal_entity, r.settlement_id) for r in rows[:10]],
        records=1,
    )


@template(
    "open_discount_invoices_customer",
    party="customer",
    phrasings=(
        "Which open invoices of {who} still qualify for a cash discount {where} {asof}?",
        "Can {who} {where} still take an early-payment discount on any open invoice {asof}?",
    ),
)
def open_discount_invoices_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    rows = [
        row
        for row in _cust_items(ctx, p)
        if row.open_amount_cur > 0
        and row.txn_type in AR_INVOICE_TYPES
        and row.cash_discount_date is not None
        and row.cash_discount_date >= ctx.today
    ]
    if not rows:
        return no_records(
            f"None of the open invoices of {p.label} in {p.legal_entity} has a cash discount "
            f"still available as of {long_date(ctx.today)}.",
            "invoices",
            [p.path],
            counted=False,
        )
    lines = [
        f"{r.document_number}: {money(r.cash_discount_amount or 0, p.currency)} if paid by "
        f"{long_date(r.cash_discount_date)}"
        for r in rows
    ]
    return listed(
        rows,
        lines,
        f"{len(rows)} open invoice(s) of {p.label} in {p.legal_entity} still carry an "
        f"available cash discount",
        [
            _count("invoices", len(rows)),
            _top("invoices", [r.document_number for r in rows], ordered=False),
        ],
        _party_txn_refs(p, rows),
    )
