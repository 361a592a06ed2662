"""A party's AR/AP position on any day up to the ERP's today: what the business briefs key.

The ledger keeps each line's open amount as of today. The open amount on an earlier day D is
rebuilt from the settlements: a line posted by D is open by its amount less what was settled
against it by D (as the debit side), plus what it settled by D (as the credit side: a payment or
credit note, less any cash discount taken). On today this equals the stored open amount.
Aging, overdue and the last payment follow docs/conventions.md: days overdue count from the due
date (the transaction date when there is none); overdue is every aging bucket but current; the
last payment is the party's latest posted payment dated by D (ties: the later voucher).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    BUCKETS,
    Answer,
    OracleContext,
    Party,
    _amount,
    _bucket_facts,
    _bucket_text,
    _fact,
    _party_txn_refs,
    _sum,
    _txn_path,
    balance_side,
    bucket_of,
    long_date,
    money,
    overdue_days,
    party,
)


@dataclass(frozen=True)
class OpenLine:
    """A ledger line of the party and its open amount on the day asked."""

    row: Any
    open_cur: Decimal


def _tables(kind: str) -> tuple[Any, Any]:
    if kind == "customer":
        return s.CustomerTransaction, s.CustomerSettlement
    return s.VendorTransaction, s.VendorSettlement


def _posted_by(p: Party, day: dt.date, *conditions: Any) -> Any:
    """A select of the party's posted transactions dated by ``day`` (and ``conditions``)."""
    txn, _ = _tables(p.kind)
    account = getattr(txn, f"{p.kind}_account")
    return select(txn).where(
        txn.legal_entity == p.legal_entity,
        account == p.account,
        txn.posted.is_(True),
        txn.txn_date <= day,
        *conditions,
    )


def open_lines_on(ctx: OracleContext, p: Party, day: dt.date) -> list[OpenLine]:
    """The party's posted lines dated by ``day`` with a non-zero open amount on ``day``."""
    txn, settlement = _tables(p.kind)
    rows = ctx.rows(_posted_by(p, day).order_by(txn.txn_date, txn.voucher))
    settled_account = getattr(settlement, f"{p.kind}_account")
    settled = ctx.rows(
        select(settlement).where(
            settlement.legal_entity == p.legal_entity,
            settled_account == p.account,
            settlement.settled_date <= day,
        )
    )
    debited: dict[str, Decimal] = defaultdict(Decimal)
    credited: dict[str, Decimal] = defaultdict(Decimal)
    for row in settled:
        debited[row.debit_voucher] += row.amount_cur
        credited[row.credit_voucher] += row.amount_cur - row.cash_discount_taken
    lines = []
    for row in rows:
        open_cur = row.amount_cur - debited[row.voucher] + credited[row.voucher]
        if open_cur != 0:
            lines.append(OpenLine(row, open_cur))
    return lines


def last_payment_on(ctx: OracleContext, p: Party, day: dt.date) -> Any | None:
    """The party's latest posted payment dated by ``day`` (None when it has made none)."""
    txn, _ = _tables(p.kind)
    rows = ctx.rows(
        _posted_by(p, day, txn.txn_type == "payment")
        .order_by(txn.txn_date.desc(), txn.voucher.desc())
        .limit(1)
    )
    return rows[0] if rows else None


def position(ctx: OracleContext, kind: str, params: dict[str, Any], day: dt.date) -> Answer:
    """The key of a party's position on ``day``: open balance, aging buckets, overdue amount and
    the last payment (its date and amount)."""
    p = party(ctx, kind, params)
    lines = open_lines_on(ctx, p, day)
    side = balance_side(kind)
    buckets = {name: Decimal("0.00") for name in BUCKETS}
    for line in lines:
        buckets[bucket_of(overdue_days(day, line.row))] += line.open_cur
    balance = _sum(buckets.values())
    overdue = balance - buckets["current"]
    facts = [_amount("balance", balance, p.currency, side)]
    text = f"{p.label} in {p.legal_entity} as of {long_date(day)}: open balance "
    text += f"{money(balance, p.currency)}"
    if lines:
        facts += _bucket_facts(buckets, p.currency, side)
        text += f", aged by days overdue: {_bucket_text(buckets, p.currency)}"
    if overdue:
        facts.append(_amount("overdue", overdue, p.currency, side))
        text += f"; overdue {money(overdue, p.currency)}"
    paid = last_payment_on(ctx, p, day)
    refs = _party_txn_refs(p, [line.row for line in lines])
    if paid is None:
        text += "; no payment recorded."
    else:
        paid_side = "credit" if kind == "customer" else "debit"
        facts += [
            _fact("date", "last_payment_date", paid.txn_date.isoformat()),
            _amount("last_payment_amount", -paid.amount_cur, p.currency, paid_side),
        ]
        text += (
            f"; last payment {money(-paid.amount_cur, p.currency)} on {long_date(paid.txn_date)}."
        )
        refs.append(_txn_path(kind, paid))
    return Answer(text=text, facts=facts, refs=refs, records=1)
