"""AP Invoices (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    LIST_LIMIT,
    Answer,
    OracleContext,
    _amount,
    _count,
    _d,
    _fact,
    _le_filter,
    _open_ap_due,
    _sum,
    _top,
    _txn_path,
    _where,
    listed,
    long_date,
    money,
    no_records,
    party,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft, _iso

template = registrar("AP Invoices", "AP")


def _choose_invoices_by_status_entity(c: Chooser) -> Draft:
    status = c.rng.choice(("pending_approval", "unposted", "approved"))
    le = None if c.rng.random() < 0.15 else c.view.pick_le(c.rng)
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
    day = c.today - dt.timedelta(days=c.rng.randrange(0, 20))
    return c.le_draft({"legal_entity": c.view.pick_le(c.rng), "date": _iso(day)}, day=c.day(day))


def _vendor_invoices(ctx: OracleContext, *conditions) -> list[s.VendorInvoice]:
    vi = s.VendorInvoice
    query = select(vi).where(vi.invoice_date <= ctx.today, *conditions)
    return list(ctx.session.scalars(query.order_by(vi.legal_entity, vi.invoice_id)))


def _vi_line(row: s.VendorInvoice) -> str:
    return (
        f"{row.invoice_id} (vendor invoice {row.vendor_invoice_number}, {row.vendor_account}) "
        f"{money(row.amount, row.currency)} dated {long_date(row.invoice_date)}"
    )


def _vi_path(row: s.VendorInvoice) -> str:
    return record_path("vendor-invoices", row.legal_entity, row.invoice_id)


@template(
    "pending_approval_vendor",
    party="vendor",
    phrasings=(
        "Are there invoices from {who} waiting for approval {where} {asof}?",
        "Which invoices of {who} {where} still need approval {asof}?",
    ),
)
def pending_approval_vendor(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    vi = s.VendorInvoice
    rows = _vendor_invoices(
        ctx,
        vi.legal_entity == p.legal_entity,
        vi.vendor_account == p.account,
        vi.status == "pending_approval",
    )
    if not rows:
        return no_records(
            f"There are no vendor invoices pending approval for {p.label} in {p.legal_entity}.",
            "invoices",
            [p.path],
        )
    total = _sum(r.amount for r in rows)
    lines = [_vi_line(r) + (f", approver {r.approver}" if r.approver else "") for r in rows]
    return listed(
        rows,
        lines,
        f"{len(rows)} invoice(s) from {p.label} in {p.legal_entity} are pending approval, "
        f"{money(total, p.currency)} in total",
        [
            _count("invoices", len(rows)),
            _amount("total", total),
            _top("invoices", [r.invoice_id for r in rows], ordered=False),
        ],
        [p.path, *(_vi_path(r) for r in rows[:LIST_LIMIT])],
    )


@template(
    "invoices_by_status_entity",
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
    label = status.replace("_", " ")
    if not rows:
        return no_records(f"There are no {label} vendor invoices {_where(le)}.", "invoices")
    facts = [_count("invoices", len(rows))]
    text = f"There are {len(rows)} {label} vendor invoice(s) {_where(le)}"
    currencies = {r.currency for r in rows}
    if len(currencies) == 1:
        total = _sum(r.amount for r in rows)
        facts.append(_amount("total", total))
        text += f" worth {money(total, currencies.pop())}"
    else:
        by_cur: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
        for r in rows:
            by_cur[r.currency] += r.amount
        text += " worth " + ", ".join(money(v, c) for c, v in sorted(by_cur.items()))
        facts += [_amount(f"total_{c}", v) for c, v in sorted(by_cur.items())]
    lines = [_vi_line(r) for r in rows]
    return listed(rows, lines, text + "", facts, [_vi_path(r) for r in rows[:LIST_LIMIT]])


@template(
    "ap_due_in_window",
    choose=_choose_ap_due_in_window,
    phrasings=(
        "Which vendor invoices {where} are due for payment {horizon}?",
        "List the open vendor invoices {where} falling due {horizon}.",
    ),
)
def ap_due_in_window(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, start, end = params["legal_entity"], _d(params["start"]), _d(params["end"])
    rows = _open_ap_due(ctx, le, start, end)
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return no_records(f"No open vendor invoices in {le} fall due {window}.", "invoices")
    currency = ctx.currency(le)
    total = _sum(r.open_amount_acct for r in rows)
    lines = [
        f"{r.document_number} ({r.vendor_account}) due {long_date(r.due_date)}, open "
        f"{money(r.open_amount_cur, r.currency)}"
        for r in rows
    ]
    return listed(
        rows,
        lines,
        f"{len(rows)} open vendor invoice(s) in {le} fall due {window}, "
        f"{money(total, currency)} in accounting currency",
        [_count("invoices", len(rows)), _amount("total_due", total)],
        [_txn_path("vendor", r) for r in rows[:LIST_LIMIT]],
    )


@template(
    "ap_posted_on_date",
    choose=_choose_ap_posted_on_date,
    phrasings=(
        "How many vendor invoices were posted {day} {where}, and for how much?",
        "What did the vendor invoices posted {day} {where} add up to?",
    ),
)
def ap_posted_on_date(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, day = params["legal_entity"], _d(params["date"])
    t = s.VendorTransaction
    rows = ctx.rows(
        select(t)
        .where(t.legal_entity == le, t.posted.is_(True), t.txn_type == "invoice", t.txn_date == day)
        .order_by(t.voucher)
    )
    if not rows:
        return no_records(
            f"No vendor invoices were posted in {le} on {long_date(day)}.", "invoices"
        )
    currency = ctx.currency(le)
    total = _sum(r.amount_acct for r in rows)
    lines = [
        f"{r.document_number} ({r.vendor_account}) {money(r.amount_cur, r.currency)}" for r in rows
    ]
    return listed(
        rows,
        lines,
        f"{len(rows)} vendor invoice(s) were posted in {le} on {long_date(day)}, "
        f"{money(total, currency)} in accounting currency",
        [_count("invoices", len(rows)), _amount("total", total)],
        [_txn_path("vendor", r) for r in rows[:LIST_LIMIT]],
    )


@template(
    "latest_invoice_match_vendor",
    party="vendor",
    phrasings=(
        "Did the most recent invoice of {who} pass three-way matching {where} {asof}?",
        "How did the latest invoice from {who} {where} come out of the three-way match?",
    ),
)
def latest_invoice_match_vendor(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "vendor", params)
    vi = s.VendorInvoice
    rows = _vendor_invoices(ctx, vi.legal_entity == p.legal_entity, vi.vendor_account == p.account)
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
        refs=[p.path, _vi_path(latest)],
        records=1,
    )
