"""AP Payments (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    LIST_LIMIT,
    Answer,
    OracleContext,
    Party,
    _amount,
    _count,
    _d,
    _fact,
    _names,
    _none,
    _open_ap_due,
    _sum,
    _top,
    _txn_path,
    between,
    long_date,
    money,
    no_records,
    party_txns,
    registrar,
    window,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft
from synthetic_erp.scenarios._keys import ListKey, Total, ledger_answer

template = registrar("AP Payments", "AP")


def _choose_payment_accounts_methods(c: Chooser) -> Draft:
    codes = sorted(c.rng.sample(("CHECK", "ELECTRONIC", "WIRE"), 2))
    return c.le_draft(
        {"legal_entity": c.view.pick_le(c.rng), "codes": codes}, codes=" and ".join(codes)
    )


def _choose_proposal_vendors_on_date(c: Chooser) -> Draft:
    return c.on_day(c.today - dt.timedelta(days=c.rng.choice((0, 0, 1, 3))))


def _choose_ap_obligation_next_days(c: Chooser) -> Draft:
    return c.days_ahead((7, 14, 30))


def _choose_payment_journal_total(c: Chooser) -> Draft:
    le = c.view.pick_le(c.rng)
    journals = c.view.open_journals.get(le) or ["PJ-9999999"]  # none open: ask a missing one
    missing = f"PJ-{c.rng.randrange(9_000_000, 10_000_000):07d}"
    journal = c.rng.choice(journals) if c.rng.random() < 0.85 else missing
    return c.le_draft({"legal_entity": le, "journal_id": journal}, journal_id=journal)


@template(
    choose=_choose_payment_accounts_methods,
    phrasings=(
        "Which ledger accounts do the vendor payment methods {codes} post to {where}?",
        "For the {codes} methods of payment used with vendors {where}, which payment "
        "accounts are set?",
    ),
)
def payment_accounts_methods(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, codes = params["legal_entity"], params["codes"]
    m = s.MethodOfPayment
    rows = {
        r.code: r
        for r in ctx.session.scalars(
            select(m).where(m.legal_entity == le, m.party_type == "vendor", m.code.in_(codes))
        )
    }
    lines, facts = [], []
    for code in codes:
        row = rows.get(code)
        if row is None:
            lines.append(f"{code}: no such vendor method of payment in {le}")
            facts.append(_none(f"method_{code}"))
        else:
            lines.append(
                f"{code} ({row.description}) posts to payment account {row.payment_account}"
            )
            facts.append(_fact("id", f"payment_account_{code}", row.payment_account))
    return Answer(
        text=f"Vendor methods of payment in {le}: " + "; ".join(lines) + ".",
        facts=facts,
        records=len(rows),
    )


@template(
    choose=_choose_proposal_vendors_on_date,
    phrasings=(
        "Which vendors does the payment proposal created {day} {where} pay?",
        "Who gets paid in the payment proposal we made {day} {where}?",
    ),
)
def proposal_vendors_on_date(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, day = params["legal_entity"], _d(params["date"])
    j, line = s.PaymentJournal, s.PaymentJournalLine
    journals = ctx.rows(
        select(j)
        .where(j.legal_entity == le, j.source == "proposal", j.created_date == day)
        .order_by(j.journal_id)
    )
    if not journals:
        return no_records(
            f"No payment proposal was created in {le} on {long_date(day)}, so no vendors are "
            "in one.",
            "vendors",
            counted=False,
        )
    ids = [x.journal_id for x in journals]
    vendors = sorted(
        set(
            ctx.session.scalars(
                select(line.vendor_account).where(line.legal_entity == le, line.journal_id.in_(ids))
            )
        )
    )
    names = _names(ctx, "vendor", le, vendors)
    who = ", ".join(f"{names.get(a, a)} ({a})" for a in vendors)
    return Answer(
        text=f"Payment proposal journal(s) {', '.join(ids)} created in {le} on {long_date(day)} "
        f"include {len(vendors)} vendor(s): {who}.",
        facts=[
            _count("vendors", len(vendors)),
            _top("vendors", vendors, ordered=False, complete=True),
        ],
        refs=[record_path("payment-journals", le, i) for i in ids],
        records=len(vendors),
    )


@template(
    choose=_choose_ap_obligation_next_days,
    phrasings=(
        "What do we have to pay vendors {where} {horizon}, including anything already overdue?",
        "What is our total AP payment obligation {horizon} {where}, overdue invoices included?",
    ),
)
def ap_obligation_next_days(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    end = ctx.today + dt.timedelta(days=days)
    rows = _open_ap_due(ctx, le, dt.date.min, end)  # overdue invoices are still to be paid
    overdue = _sum(r.open_amount_acct for r in rows if r.due_date < ctx.today)
    window = f"by {long_date(end)}"
    currency = ctx.currency(le)
    if not rows:
        return Answer(
            text=f"There is no AP payment obligation in {le} due {window}, overdue or not.",
            facts=[_none("invoices"), _amount("total_due", 0, currency, "credit")],
        )
    total = _sum(r.open_amount_acct for r in rows)
    return Answer(
        text=f"The AP payment obligation in {le} due {window} is {money(total, currency)} "
        f"(accounting currency, {money(overdue, currency)} of it already overdue) across "
        f"{len(rows)} open vendor invoice(s) of {len({r.vendor_account for r in rows})} vendor(s).",
        facts=[
            _amount("total_due", total, currency, "credit"),
            _amount("overdue", overdue, currency, "credit"),
            _count("invoices", len(rows)),
        ],
        refs=[_txn_path("vendor", r) for r in rows[:LIST_LIMIT]],
        records=1,
    )


PAYMENTS_IN_WINDOW = ListKey(
    "payments",
    none="No payments were made to {who} {window}.",
    found="{n} payment(s) totalling {total} were made to {who} {window}",
    total=Total("total_paid", sign=-1, side="debit"),
)


@template(
    party="vendor",
    extra=Chooser.period_extra,
    phrasings=(
        "How much did we pay {who} {period} {where}?",
        "Which payments went out to {who} {where} {period}?",
    ),
)
def vendor_payments_range(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    start, end = window(params)
    payments = party_txns(ctx, p, s.VendorTransaction.txn_type == "payment", start=start, end=end)
    span = between(start, end)
    return ledger_answer(PAYMENTS_IN_WINDOW, p, payments, window=span)


@template(
    choose=_choose_payment_journal_total,
    phrasings=(
        "How much does payment journal {journal_id} {where} pay out, and over how many lines?",
        "What's the total of the payment lines in journal {journal_id} {where} {asof}?",
    ),
)
def payment_journal_total(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, journal_id = params["legal_entity"], params["journal_id"]
    j = s.PaymentJournal
    row = ctx.session.scalars(
        select(j).where(j.legal_entity == le, j.journal_id == journal_id)
    ).first()
    if row is None:
        return no_records(
            f"There is no payment journal {journal_id} in {le}.", "journal", counted=False
        )
    return Answer(
        text=f"Payment journal {journal_id} in {le} ({row.description}; {row.source}, status "
        f"{row.status}, created {long_date(row.created_date)}) totals "
        f"{money(row.total_amount, row.currency)} over {row.line_count} line(s).",
        facts=[
            _amount("total", row.total_amount, row.currency, "debit"),
            _count("lines", row.line_count),
        ],
        refs=[record_path("payment-journals", le, journal_id)],
        records=1,
    )
