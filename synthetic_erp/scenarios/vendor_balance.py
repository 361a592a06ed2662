"""Vendor Balance (AP): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _amount,
    _balance_answer,
    _count,
    _none,
    _open_ap_due,
    _sum,
    between,
    is_open_invoice,
    ledger_open_items,
    long_date,
    money,
    no_records,
    overdue_days,
    party_open_items,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft, _iso
from synthetic_erp.scenarios._keys import Ranking, top_totals

template = registrar("Vendor Balance", "AP")


def _no_open_balances(le: str) -> Answer:
    return Answer(text=f"There are no open AP balances in {le}.", facts=[_none("balances")])


def _choose_ap_group_balance(c: Chooser) -> Draft:
    group = c.group("vendor")
    return c.le_draft({"legal_entity": c.view.pick_le(c.rng), "group_id": group}, group_id=group)


def _choose_ap_due_next_month_top(c: Chooser) -> Draft:
    n = c.rng.choice((3, 5))
    start = (c.today.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
    end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    label = c.rng.choice(("next month", f"in {start:%B} {start.year}"))
    return c.le_draft(
        {"legal_entity": c.view.pick_le(c.rng), "n": n, "start": _iso(start), "end": _iso(end)},
        n=str(n),
        next_month=label,
    )


def _vendor_group_totals(ctx: OracleContext, le: str) -> dict[str, Decimal]:
    v = s.Vendor
    groups = dict(
        (a, g)
        for a, g in ctx.session.execute(select(v.account, v.group_id).where(v.legal_entity == le))
    )
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in ledger_open_items(ctx, "vendor", le):
        totals[groups.get(row.vendor_account, "?")] += row.open_amount_acct
    return dict(sorted(totals.items()))


@template(
    party="vendor",
    phrasings=(
        "How much do we owe {who} {where} {asof}?",
        "What is our open payable to {who} {where} {asof}?",
        "What's the outstanding AP balance with {who} {where} {asof}?",
    ),
)
def vendor_balance(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    return _balance_answer(ctx, p, party_open_items(ctx, p), "The open AP balance owed to")


@template(
    choose=Chooser.entity_only,
    phrasings=(
        "Break down our open AP balance by vendor group {where} {asof}.",
        "How is what we owe vendors {where} split across vendor groups {asof}?",
    ),
)
def ap_by_group_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    totals = _vendor_group_totals(ctx, le)
    currency = ctx.currency(le)
    if not totals:
        return _no_open_balances(le)
    lines = [f"group {g}: {money(v, currency)}" for g, v in totals.items()]
    grand = _sum(totals.values())
    return Answer(
        text=f"Open AP balance in {le} by vendor group as of {long_date(ctx.today)} (accounting "
        f"currency): " + "; ".join(lines) + f"; total {money(grand, currency)}.",
        facts=[_amount("total", grand, currency, "credit")]
        + [_amount(f"group_{g}", v, currency, "credit") for g, v in totals.items()],
        refs=[record_path("vendor-groups", le, g) for g in totals if g != "?"],
        records=len(totals),
    )


@template(
    choose=_choose_ap_group_balance,
    phrasings=(
        "How much do we owe the vendors of group {group_id} in total {where} {asof}?",
        "Sum the open payables for vendor group {group_id} {where} {asof}.",
    ),
)
def ap_group_balance(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, group = params["legal_entity"], params["group_id"]
    value = _vendor_group_totals(ctx, le).get(group, Decimal("0.00"))
    currency = ctx.currency(le)
    g = s.VendorGroup
    name = ctx.session.scalar(select(g.name).where(g.legal_entity == le, g.group_id == group))
    label = f"vendor group {group}" + (f" ({name})" if name else "")
    facts = [_amount("balance", value, currency, "credit")]
    if not value:
        facts.append(_none("open_items"))
    return Answer(
        text=f"The combined open AP balance of all vendors in {label} in {le} as of "
        f"{long_date(ctx.today)} is {money(value, currency)} (accounting currency).",
        facts=facts,
        refs=[record_path("vendor-groups", le, group)] if name else [],
        records=1 if value else 0,
    )


@template(
    choose=Chooser.entity_only,
    phrasings=(
        "Split our open vendor balance by transaction currency {where} {asof}.",
        "In which currencies do we owe vendors money {where}, and how much in each {asof}?",
    ),
)
def ap_by_currency_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    by_cur: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal("0.00"), Decimal("0.00")])
    for row in ledger_open_items(ctx, "vendor", le):
        by_cur[row.currency][0] += row.open_amount_cur
        by_cur[row.currency][1] += row.open_amount_acct
    if not by_cur:
        return _no_open_balances(le)
    acct = ctx.currency(le)
    lines = [
        f"{cur}: {money(v[0], cur)} ({money(v[1], acct)} accounting)"
        for cur, v in sorted(by_cur.items())
    ]
    grand = _sum(v[1] for v in by_cur.values())
    return Answer(
        text=f"Open AP balance in {le} by transaction currency as of {long_date(ctx.today)}: "
        + "; ".join(lines)
        + f"; total {money(grand, acct)} in accounting currency.",
        facts=[_amount("total_accounting", grand, acct, "credit")]
        + [_amount(f"balance_{cur}", v[0], cur, "credit") for cur, v in sorted(by_cur.items())],
        records=len(by_cur),
    )


@template(
    choose=Chooser.entity_only,
    phrasings=(
        "How much in vendor invoices is past due {where} {asof}?",
        "What do we owe vendors {where} that is already overdue {asof}?",
    ),
)
def ap_overdue_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    rows = [
        row
        for row in ledger_open_items(ctx, "vendor", le)
        if is_open_invoice(row) and overdue_days(ctx.today, row) > 0
    ]
    total = _sum(row.open_amount_acct for row in rows)
    currency = ctx.currency(le)
    if not rows:
        return Answer(
            text=f"No vendor invoices in {le} are overdue as of {long_date(ctx.today)}.",
            facts=[_none("overdue_invoices"), _amount("total_overdue", 0, currency, "credit")],
        )
    return Answer(
        text=f"Overdue AP in {le} as of {long_date(ctx.today)} totals {money(total, currency)} "
        f"(accounting currency) across {len(rows)} open vendor invoice(s) of "
        f"{len({r.vendor_account for r in rows})} vendor(s).",
        facts=[
            _amount("total_overdue", total, currency, "credit"),
            _count("overdue_invoices", len(rows)),
        ],
        records=1,
    )


DUE_NEXT_MONTH = Ranking("vendor", "due", side="credit")


@template(
    choose=_choose_ap_due_next_month_top,
    phrasings=(
        "Which {n} vendors have the most open invoice value falling due {next_month} {where}?",
        "Rank vendors {where} by open invoices due {next_month} and give me the top {n}.",
    ),
)
def ap_due_next_month_top(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, n = params["legal_entity"], params["n"]
    start = (ctx.today.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
    end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in _open_ap_due(ctx, le, start, end):
        totals[row.vendor_account] += row.open_amount_acct
    ranked = top_totals(totals, n)
    span = between(start, end)
    if not ranked:
        return no_records(
            f"No open vendor invoices in {le} fall due next month ({span}).",
            "balances",
            counted=False,
        )
    lead = f"The largest AP balances in {le} due next month ({span}), accounting currency"
    return DUE_NEXT_MONTH.answer(ctx, le, ranked, lead, complete=len(ranked) == len(totals))
