"""Invoicing History (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    AR_INVOICE_TYPES,
    Answer,
    OracleContext,
    Party,
    _amount,
    _count,
    _fact,
    _names,
    _none,
    _sum,
    _txn_path,
    between,
    long_date,
    money,
    no_records,
    party_txns,
    registrar,
    window,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft, _iso
from synthetic_erp.scenarios._keys import ListKey, Total, ledger_answer

template = registrar("Invoicing History", "AR")


def _choose_largest_invoice_entity(c: Chooser) -> Draft:
    start, end, words = c.period()
    return c.le_draft(
        {"legal_entity": c.view.pick_le(c.rng), "start": _iso(start), "end": _iso(end)}, **words
    )


def _invoices(ctx: OracleContext, p: Party, **window: dt.date) -> list[s.CustomerTransaction]:
    return party_txns(ctx, p, s.CustomerTransaction.txn_type.in_(AR_INVOICE_TYPES), **window)


INVOICES_IN_WINDOW = ListKey(
    "invoices",
    none="No invoices were issued to {who} {window}.",
    found="{n} invoice(s) were issued to {who} {window}, totalling {total}",
    total=Total("total_invoiced", side="debit"),
)


@template(
    party="customer",
    extra=Chooser.period_extra,
    phrasings=(
        "Which invoices did we issue to {who} {where} {period}?",
        "How many invoices did we send {who} {period} {where}, and for how much?",
    ),
)
def invoices_in_range_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    start, end = window(params)
    span = between(start, end)
    invoices = _invoices(ctx, p, start=start, end=end)
    return ledger_answer(INVOICES_IN_WINDOW, p, invoices, window=span)


@template(
    party="customer",
    phrasings=(
        "How many invoices have been posted for {who} {where} {asof}?",
        "Count the invoices we have billed {who} {where} {asof}.",
    ),
)
def invoice_count_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    rows = _invoices(ctx, p)
    if not rows:
        return no_records(
            f"{p.label} in {p.legal_entity} has no invoices as of {long_date(ctx.today)}.",
            "invoices",
            [p.path],
        )
    total = _sum(row.amount_cur for row in rows)
    return Answer(
        text=f"{p.label} in {p.legal_entity} has {len(rows)} posted invoice(s) as of "
        f"{long_date(ctx.today)}, totalling {money(total, p.currency)}.",
        facts=[
            _count("invoices", len(rows)),
            _amount("total_invoiced", total, p.currency, "debit"),
        ],
        refs=[p.path],
        records=1,
    )


def _invoiced_in(params: dict[str, Any]) -> tuple[str, str, list[Any]]:
    """An entity-wide invoicing question's legal entity, its window in words and the conditions
    selecting the customer invoices posted there in that window."""
    le, (start, end) = params["legal_entity"], window(params)
    t = s.CustomerTransaction
    in_window = (t.txn_date >= start, t.txn_date <= end)
    invoiced = [t.legal_entity == le, t.posted.is_(True), t.txn_type.in_(AR_INVOICE_TYPES)]
    return le, between(start, end), [*invoiced, *in_window]


def _no_invoices(le: str, span: str) -> Answer:
    return Answer(text=f"No invoices were posted in {le} {span}.", facts=[_none("invoices")])


@template(
    choose=_choose_largest_invoice_entity,
    phrasings=(
        "What was our biggest customer invoice {where} {period}?",
        "Which single customer invoice {where} had the highest amount {period}?",
    ),
)
def largest_invoice_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, span, invoiced = _invoiced_in(params)
    t = s.CustomerTransaction
    largest_first = (t.amount_acct.desc(), t.txn_date, t.voucher)
    row = ctx.session.scalars(select(t).where(*invoiced).order_by(*largest_first)).first()
    if row is None:
        return _no_invoices(le, span)
    name = _names(ctx, "customer", le, [row.customer_account])[row.customer_account]
    currency = ctx.currency(le)
    return Answer(
        text=f"The largest customer invoice in {le} {span} is {row.document_number} to {name} "
        f"({row.customer_account}) on {long_date(row.txn_date)}: "
        f"{money(row.amount_cur, row.currency)}"
        + (
            f" ({money(row.amount_acct, currency)} in accounting currency)."
            if row.currency != currency
            else "."
        ),
        facts=[
            _fact("id", "invoice", row.document_number),
            _fact("id", "customer_account", row.customer_account),
            _amount(
                "amount",
                row.amount_cur,
                row.currency,
                "debit",
                equivalents=[(row.amount_acct, currency)],
            ),
        ],
        refs=[_txn_path("customer", row), record_path("customers", le, row.customer_account)],
        records=1,
    )


@template(
    choose=_choose_largest_invoice_entity,
    phrasings=(
        "Who was our top customer by invoiced amount {where} {period}?",
        "Which customer did we bill the most {where} {period}?",
    ),
)
def top_invoiced_customer_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, span, invoiced = _invoiced_in(params)
    t = s.CustomerTransaction
    per_customer = select(t.customer_account, func.sum(t.amount_acct), func.count())
    rows = ctx.session.execute(per_customer.where(*invoiced).group_by(t.customer_account)).all()
    if not rows:
        return _no_invoices(le, span)
    ranked = sorted(
        ((Decimal(total), account, n) for account, total, n in rows), key=lambda x: (-x[0], x[1])
    )
    total, account, count = ranked[0]
    name = _names(ctx, "customer", le, [account])[account]
    currency = ctx.currency(le)
    return Answer(
        text=f"{name} ({account}) has the highest total invoiced in {le} {span}: "
        f"{money(total, currency)} (accounting currency) over {count} invoice(s).",
        facts=[
            _fact("id", "customer_account", account),
            _amount("total_invoiced", total, currency, "debit"),
        ],
        refs=[record_path("customers", le, account)],
        records=1,
    )
