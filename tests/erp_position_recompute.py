"""A brief's AR/AP section recomputed from the raw ERP tables (docs/conventions.md), by another
path than the oracle's (synthetic_erp/scenarios/_position.py).

The oracle rebuilds a line's open amount on day D forwards: its amount, less what was settled
against it by D, plus what it settled by D. This goes backwards from the stored open amount of
today: add back what was settled against the line after D, take off what it settled after D.
Both must give the same open items on D; from them come the balance, the aging buckets, the
overdue amount and the last payment. Plain SQL over sqlite3, nothing imported from the product.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from decimal import Decimal
from typing import Any

CENT = Decimal("0.01")
ERP_PREFIXES = ("customer_", "vendor_")


def _bucket(days: int) -> str:
    for edge, name in ((0, "current"), (30, "1-30"), (60, "31-60"), (90, "61-90")):
        if days <= edge:
            return name
    return "over 90"


def _money(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(CENT)


def _settled_after(
    erp: sqlite3.Connection, party: str, entity: str, voucher: str, day: str
) -> tuple[Decimal, Decimal]:
    """(settled against the voucher after ``day``, settled by it after ``day`` net of discount)."""
    rows = erp.execute(
        f"SELECT debit_voucher, credit_voucher, amount_cur, cash_discount_taken "
        f"FROM {party}_settlement WHERE legal_entity = ? AND settled_date > ? "
        f"AND (debit_voucher = ? OR credit_voucher = ?)",
        (entity, day, voucher, voucher),
    ).fetchall()
    against = sum((_money(r[2]) for r in rows if r[0] == voucher), Decimal(0))
    by = sum((_money(r[2]) - _money(r[3]) for r in rows if r[1] == voucher), Decimal(0))
    return against, by


def position(
    erp: sqlite3.Connection, party: str, subject: str, day: dt.date
) -> dict[str, Decimal | str]:
    """Field (with the party prefix) -> value of one account's position on ``day``."""
    entity, _, account = subject.partition("/")
    rows = erp.execute(
        f"SELECT voucher, txn_date, due_date, open_amount_cur FROM {party}_transaction "
        f"WHERE legal_entity = ? AND {party}_account = ? AND posted = 1 AND txn_date <= ?",
        (entity, account, day.isoformat()),
    ).fetchall()
    buckets: dict[str, Decimal] = {}
    for voucher, txn_date, due_date, open_now in rows:
        against, by = _settled_after(erp, party, entity, voucher, day.isoformat())
        open_then = _money(open_now) + against - by
        if open_then == 0:
            continue
        since = dt.date.fromisoformat(str(due_date or txn_date)[:10])
        name = _bucket((day - since).days)
        buckets[name] = buckets.get(name, Decimal(0)) + open_then
    balance = sum(buckets.values(), Decimal(0))
    out: dict[str, Decimal | str] = {f"{party}_balance": balance}
    out.update({f"{party}_aging_{k}": v for k, v in buckets.items() if v != 0})
    overdue = balance - buckets.get("current", Decimal(0))
    if overdue:
        out[f"{party}_overdue"] = overdue
    paid = erp.execute(
        f"SELECT txn_date, amount_cur FROM {party}_transaction WHERE legal_entity = ? "
        f"AND {party}_account = ? AND posted = 1 AND txn_type = 'payment' AND txn_date <= ? "
        f"ORDER BY txn_date DESC, voucher DESC LIMIT 1",
        (entity, account, day.isoformat()),
    ).fetchone()
    if paid:
        out[f"{party}_last_payment_date"] = str(paid[0])[:10]
        out[f"{party}_last_payment_amount"] = -_money(paid[1])
    return out


def erp_mismatches(erp: sqlite3.Connection, item) -> list[str]:
    """Where a brief's ERP facts differ from the recomputation on its as-of date (every fact of
    every account it names, none missing, none extra)."""
    keyed: dict[tuple[str, str], Any] = {}
    for fact in item.expected:
        if fact.field.startswith(ERP_PREFIXES) and fact.subject:
            value = fact.value if fact.kind == "date" else _money(fact.value)
            keyed[(fact.subject, fact.field)] = value
    mine: dict[tuple[str, str], Any] = {}
    for subject, field in keyed:
        party = field.split("_", 1)[0]
        for name, value in position(erp, party, subject, item.as_of).items():
            mine[(subject, name)] = value
    return [
        f"{item.id} {subject} {field}: key {keyed.get((subject, field))!r}, "
        f"ledger {mine.get((subject, field))!r}"
        for subject, field in sorted(set(keyed) | set(mine))
        if keyed.get((subject, field)) != mine.get((subject, field))
    ]
