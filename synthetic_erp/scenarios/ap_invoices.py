"""AP Invoices (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _amount,
    _d,
    _fact,
    _le_filter,
    _open_ap_due,
    _where,
    between,
    long_date,
    money,
    no_records,
    party_conditions,
    registrar,
    window,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft, _iso
from synthetic_erp.scenarios._keys import (
    ListKey,
    Total,
    by_currency_totals,
    entity_records,
    record_refs,
    txn_refs,
)

template = registrar("AP Invoices", "AP")


def _choose_invoices_by_status_entity(c: Chooser) -> Draft:
    status = c.rng.choice(("pending_approval", "unposted", "approved"))
    le = c.some_entity(0.15)
    label = {
        "pending_approval": "pending approval",
        "unposted": "unposted (in the invoice register)",
        "approved": "approved but not yet posted",
    }[status]
    return c.le_draft({"legal_entity": le, "status": status}, status_label=label)


def _choose_ap_due_in_window(c: Chooser) -> Draft:
    days = c.rng.choice((6, 13))
    start = c.today + dt.timedelta(days=c.rng.choice((0, 7)))
    end = start + dt.timedelta(days=days)
    params = {"legal_entity": c.view.pick_le(c.rng), "start": _iso(start), "end": _iso(end)}
    if start == c.today:
        return c.le_draft(params, **c.horizon(days))
    return c.le_draft(params, horizon=f"between {long_date(start)} and {long_date(end)}")


def _choose_ap_posted_on_date(c: Chooser) -> Draft:
    return c.on_day(c.today - dt.timedelta(days=c.rng.randrange(0, 20)))


def _vendor_invoices(ctx: OracleContext, *conditions) -> list[s.VendorInvoice]:
    vi = s.VendorInvoice
    query = select(vi).where(vi.invoice_date <= ctx.today, *conditions)
    return list(ctx.session.scalars(query.order_by(vi.legal_entity, vi.invoice_id)))


def _vi_line(row: s.VendorInvoice) -> str:
    return (
        f"{row.invoice_id} (vendor invoice {row.vendor_invoice_number}, {row.vendor_account}) "
        f"{money(row.amount, row.currency)} dated {long_date(row.invoice_date)}"
    )


def _vi_refs(rows: list[s.VendorInvoice]) -> list[str]:
    return record_refs("vendor-invoices", rows, "invoice_id")


PENDING_APPROVAL = ListKey(
    "invoices",
    none="There are no vendor invoices pending approval for {who}.",
    found="{n} invoice(s) from {who} are pending approval, {total} in total",
    total=Total("total", "amount", side="credit"),
    ids=("invoices", "invoice_id"),
)


@template(
    party="vendor",
    phrasings=(
        "Are there invoices from {who} waiting for approval {where} {asof}?",
        "Which invoices of {who} {where} still need approval {asof}?",
    ),
)
def pending_approval_vendor(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    vi = s.VendorInvoice
    rows = _vendor_invoices(ctx, *party_conditions(vi, p), vi.status == "pending_approval")
    lines = [_vi_line(r) + (f", approver {r.approver}" if r.approver else "") for r in rows]
    return PENDING_APPROVAL.answer(rows, lines, _vi_refs(rows), party=p, currency=p.currency)


BY_STATUS = ListKey(
    "invoices",
    none="There are no {status} vendor invoices {where}.",
    found="There are {n} {status} vendor invoice(s) {where} worth {worth}",
)


@template(
    choose=_choose_invoices_by_status_entity,
    phrasings=(
        "How many vendor invoices are {status_label} {where} {asof}, and what are they worth?",
        "Count the vendor invoices {where} that are {status_label} {asof}, and total their value.",
    ),
)
def invoices_by_status_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, status = params.get("legal_entity"), params["status"]
    vi = s.VendorInvoice
    rows = _vendor_invoices(ctx, vi.status == status, *_le_filter(vi, le))
    totals = by_currency_totals(rows, "amount")
    names = ["total"] if len(totals) == 1 else [f"total_{currency}" for currency in totals]
    return BY_STATUS.answer(
        rows,
        [_vi_line(r) for r in rows],
        _vi_refs(rows),
        facts=[
            _amount(name, value, currency, "credit")
            for name, (currency, value) in zip(names, totals.items(), strict=True)
        ],
        status=status.replace("_", " "),
        where=_where(le),
        worth=", ".join(money(value, currency) for currency, value in totals.items()),
    )


DUE_IN_WINDOW = ListKey(
    "invoices",
    none="No open vendor invoices in {le} fall due {window}.",
    found="{n} open vendor invoice(s) in {le} fall due {window}, {total} in accounting currency",
    total=Total("total_due", "open_amount_acct", side="credit"),
)


@template(
    choose=_choose_ap_due_in_window,
    phrasings=(
        "Which vendor invoices {where} are due for payment {horizon}?",
        "List the open vendor invoices {where} falling due {horizon}.",
    ),
)
def ap_due_in_window(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, (start, end) = params["legal_entity"], window(params)
    rows = _open_ap_due(ctx, le, start, end)
    lines = [
        f"{r.document_number} ({r.vendor_account}) due {long_date(r.due_date)}, open "
        f"{money(r.open_amount_cur, r.currency)}"
        for r in rows
    ]
    return DUE_IN_WINDOW.answer(
        rows,
        lines,
        txn_refs("vendor", rows),
        currency=ctx.currency(le),
        le=le,
        window=between(start, end),
    )


POSTED_ON_DATE = ListKey(
    "invoices",
    none="No vendor invoices were posted in {le} on {day}.",
    found="{n} vendor invoice(s) were posted in {le} on {day}, {total} in accounting currency",
    total=Total("total", "amount_acct", side="credit"),
)


@template(
    choose=_choose_ap_posted_on_date,
    phrasings=(
        "How many vendor invoices were posted {day} {where}, and for how much?",
        "What did the vendor invoices posted {day} {where} add up to?",
    ),
)
def ap_posted_on_date(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, day = params["legal_entity"], _d(params["date"])
    t = s.VendorTransaction
    conditions = (t.posted.is_(True), t.txn_type == "invoice", t.txn_date == day)
    rows = entity_records(ctx, t, le, *conditions, order_by=(t.voucher,))
    lines = [
        f"{r.document_number} ({r.vendor_account}) {money(r.amount_cur, r.currency)}" for r in rows
    ]
    return POSTED_ON_DATE.answer(
        rows, lines, txn_refs("vendor", rows), currency=ctx.currency(le), le=le, day=long_date(day)
    )


@template(
    party="vendor",
    phrasings=(
        "Did the most recent invoice of {who} pass three-way matching {where} {asof}?",
        "How did the latest invoice from {who} {where} come out of the three-way match?",
    ),
)
def latest_invoice_match_vendor(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    vi = s.VendorInvoice
    rows = _vendor_invoices(ctx, *party_conditions(vi, p))
    if not rows:
        return no_records(
            f"{p.label} in {p.legal_entity} has no vendor invoices.",
            "invoices",
            [p.path],
            counted=False,
        )
    latest = max(rows, key=lambda r: (r.invoice_date, r.invoice_id))
    reason = f" ({latest.match_failure_reason})" if latest.match_failure_reason else ""
    status = latest.match_status.replace("_", " ")
    return Answer(
        text=f"The latest invoice of {p.label} in {p.legal_entity} is {_vi_line(latest)}; its "
        f"three-way match status is {status}{reason}.",
        facts=[
            _fact("id", "invoice", latest.invoice_id),
            _fact("text", "match_status", status),
        ],
        refs=[p.path, *_vi_refs([latest])],
        records=1,
    )
