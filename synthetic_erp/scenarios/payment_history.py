"""Payment History (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _amount,
    _by_amount_desc,
    _fact,
    _only,
    _payments,
    _sum,
    _top,
    _txn_line,
    _txn_path,
    between,
    long_date,
    no_records,
    registrar,
    window,
)
from synthetic_erp.scenarios._drafting import Chooser
from synthetic_erp.scenarios._keys import ListKey, Total, ledger_answer

template = registrar("Payment History", "AR")


def _no_payments(ctx: OracleContext, p: Party) -> Answer:
    return no_records(
        f"{p.label} in {p.legal_entity} has made no payments as of {long_date(ctx.today)}.",
        "payments",
        [p.path],
        counted=False,
    )


@template(
    party="customer",
    phrasings=(
        "Which was the biggest single payment we received from {who} {where} {asof}?",
        "What is the largest amount {who} {where} has paid us in one go {asof}?",
    ),
)
def largest_payment(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    rows = _by_amount_desc(_payments(ctx, p))
    if not rows:
        return _no_payments(ctx, p)
    top = rows[0]
    return Answer(
        text=f"The largest payment by {p.label} in {p.legal_entity} as of {long_date(ctx.today)} "
        f"is {_txn_line(top, p.currency)} (voucher {top.voucher}).",
        facts=[
            _fact("id", "payment", top.document_number),
            _amount("amount", -top.amount_cur, p.currency, "credit"),
            _fact("date", "payment_date", top.txn_date.isoformat()),
        ],
        refs=[p.path, _txn_path("customer", top)],
        records=1,
    )


@template(
    party="customer",
    extra=Chooser.top_n_extra,
    phrasings=(
        "Show the {n} biggest payments we got from {who} {where} {asof}.",
        "List the top {n} receipts from {who} {where} by amount {asof}.",
    ),
)
def top_payments(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    n = params["n"]
    every = _by_amount_desc(_payments(ctx, p))
    rows = every[:n]
    if not rows:
        return _no_payments(ctx, p)
    lines = [_txn_line(row, p.currency) for row in rows]
    return Answer(
        text=f"The {len(rows)} largest payment(s) by {p.label} in {p.legal_entity} as of "
        f"{long_date(ctx.today)}{_only(n, len(rows), 'payments')}: " + "; ".join(lines) + ".",
        facts=[
            _top("payments", [row.document_number for row in rows], complete=len(every) <= n),
            _amount("largest_amount", -rows[0].amount_cur, p.currency, "credit"),
        ],
        refs=[p.path, *(_txn_path("customer", row) for row in rows)],
        records=len(rows),
    )


PAYMENTS_IN_WINDOW = ListKey(
    "payments",
    none="{who} made no payments {window}.",
    found="{who} made {n} payment(s) {window} totalling {total}",
    total=Total("total_paid", sign=-1, side="credit"),
)


@template(
    party="customer",
    extra=Chooser.period_extra,
    phrasings=(
        "How many payments did {who} {where} make {period}, and what did they add up to?",
        "What has {who} paid us {period} {where}?",
    ),
)
def payments_in_range(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    start, end = window(params)
    span = between(start, end)
    return ledger_answer(PAYMENTS_IN_WINDOW, p, _payments(ctx, p, start, end), window=span)


@template(
    party="customer",
    phrasings=(
        "When did {who} last pay us {where} {asof}, and how much?",
        "What was the most recent payment from {who} {where} {asof}?",
    ),
)
def last_payment(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    rows = _payments(ctx, p)
    if not rows:
        return _no_payments(ctx, p)
    last_day = max(row.txn_date for row in rows)
    last = [row for row in rows if row.txn_date == last_day]
    lines = [_txn_line(row, p.currency) for row in last]
    return Answer(
        text=f"The most recent payment by {p.label} in {p.legal_entity} was on "
        f"{long_date(last_day)}: " + "; ".join(lines) + ".",
        facts=[
            _fact("date", "last_payment_date", last_day.isoformat()),
            _amount("amount", -_sum(row.amount_cur for row in last), p.currency, "credit"),
        ],
        refs=[p.path, *(_txn_path("customer", row) for row in last)],
        records=len(last),
    )
