"""Aged Balance (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    BUCKETS,
    Answer,
    OracleContext,
    Party,
    UnknownParty,
    _aging,
    _amount,
    _bucket_facts,
    _bucket_text,
    _count,
    _none,
    _party_txn_refs,
    _sum,
    due_between,
    is_open_invoice,
    ledger_open_items,
    long_date,
    money,
    no_records,
    overdue_days,
    parties_named,
    party_open_items,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft, fake_party_name
from synthetic_erp.scenarios._keys import ListKey, Ranking, Total, ledger_answer, top_totals

template = registrar("Aged Balance", "AR")


def _due_line(row: s.CustomerTransaction, currency: str) -> str:
    return (
        f"{row.document_number} due {long_date(row.due_date)}, open "
        f"{money(row.open_amount_cur, currency)}"
    )


def _choose_balance_all_entities(c: Chooser) -> Draft:
    names = c.view.twin_names or sorted({p.name for p in c.view.parties[("customer", "USMF")]})
    name = c.rng.choice(names)
    if c.rng.random() < 0.3:
        name = fake_party_name(c.view, c.rng)
        return Draft("", {"name": name}, {**c.base(None), "who": name}, "nonexistent")
    return Draft("", {"name": name}, {**c.base(None), "who": name})


def _choose_top_past_due_group(c: Chooser) -> Draft:
    le, n, days, group = (
        c.view.pick_le(c.rng),
        c.rng.choice((5, 10)),
        c.rng.choice((30, 60, 90)),
        c.group(),
    )
    return c.le_draft(
        {"legal_entity": le, "group_id": group, "days": days, "n": n},
        group_id=group,
        days=str(days),
        n=str(n),
    )


def _choose_past_due_total_entity(c: Chooser) -> Draft:
    return c.days_threshold((30, 60, 90, 180))


def _coming_due_extra(c: Chooser) -> tuple[dict[str, Any], dict[str, str]]:
    days = c.rng.choice((7, 14, 30))
    return {"days": days}, c.horizon(days)


@template(
    party="customer",
    phrasings=(
        "How is the balance of {who} {where} spread across the aging buckets {asof}?",
        "Break down what {who} owes us {where} by days past due {asof}: current, 1-30, "
        "31-60, 61-90 and 90+.",
        "Can you age the open receivables of {who} {where} {asof}?",
    ),
)
def aging_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    items = party_open_items(ctx, p)
    if not items:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open transactions as of "
            f"{long_date(ctx.today)}: the balance is {money(0, p.currency)}.",
            facts=[_none("open_items"), _amount("balance", 0, p.currency, "debit")],
            refs=[p.path],
        )
    buckets = _aging(ctx, items)
    total = _sum(buckets.values())
    return Answer(
        text=f"{p.label} in {p.legal_entity} has an open balance of {money(total, p.currency)} "
        f"as of {long_date(ctx.today)}, aged by days overdue: {_bucket_text(buckets, p.currency)}.",
        facts=[
            _amount("balance", total, p.currency, "debit"),
            *_bucket_facts(buckets, p.currency, "debit"),
        ],
        refs=_party_txn_refs(p, items),
        records=1,
    )


@template(
    choose=_choose_balance_all_entities,
    phrasings=(
        "Add up what {who} owes us {where} {asof}.",
        "What does {who} owe {where}, company by company, {asof}?",
        "Give me the open balance of {who} summed {where} {asof}.",
    ),
)
def balance_all_entities(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    found = parties_named(ctx, "customer", params["name"])
    if not found:
        raise UnknownParty("customer", params["name"], None)
    lines, facts, refs = [], [], []
    for p in found:
        balance = _sum(row.open_amount_cur for row in party_open_items(ctx, p))
        lines.append(f"{p.label} in {p.legal_entity}: {money(balance, p.currency)}")
        facts.append(_amount(f"balance_{p.legal_entity}_{p.account}", balance, p.currency, "debit"))
        refs.append(p.path)
    currencies = {p.currency for p in found}
    text = f"Open balances for customers named {found[0].name} across all legal entities as of "
    text += f"{long_date(ctx.today)}: " + "; ".join(lines) + "."
    if len(found) > 1 and len(currencies) == 1:
        total = _sum(Decimal(str(f.value)) for f in facts)
        currency = currencies.pop()
        text += f" Combined: {money(total, currency)}."
        facts.append(_amount("balance_combined", total, currency, "debit"))
    elif len(found) > 1:
        text += " The balances are in different currencies, so they are not added up."
    return Answer(text=text, facts=facts, refs=refs, records=len(found))


PAST_DUE = Ranking("customer", "past_due", side="debit")


@template(
    choose=_choose_top_past_due_group,
    phrasings=(
        "In customer group {group_id} {where}, which {n} customers have the most invoice "
        "value more than {days} days late {asof}?",
        "Rank the customers of group {group_id} {where} by unpaid invoices over {days} days "
        "late and give me the top {n} {asof}.",
    ),
)
def top_past_due_group(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, group, days, n = params["legal_entity"], params["group_id"], params["days"], params["n"]
    c = s.Customer
    accounts = set(
        ctx.session.scalars(select(c.account).where(c.legal_entity == le, c.group_id == group))
    )
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for row in ledger_open_items(ctx, "customer", le):
        overdue = overdue_days(ctx.today, row) > days
        if row.customer_account in accounts and is_open_invoice(row) and overdue:
            totals[row.customer_account] += row.open_amount_acct
    qualifying = {a: v for a, v in totals.items() if v > 0}
    ranked = top_totals(qualifying, n)
    if not ranked:
        return no_records(
            f"No customer in group {group} in {le} has unpaid invoices more than {days} "
            f"days past due as of {long_date(ctx.today)}.",
            "customers",
            counted=False,
        )
    return PAST_DUE.answer(
        ctx,
        le,
        ranked,
        f"Top {len(ranked)} customers in group {group} in {le} by unpaid invoices more than "
        f"{days} days past due as of {long_date(ctx.today)} (accounting currency)",
        complete=len(ranked) == len(qualifying),
    )


@template(
    choose=Chooser.entity_only,
    phrasings=(
        "Summarise our receivables {where} by aging bucket {asof}.",
        "How do the open customer balances {where} split into current, 1-30, 31-60, 61-90 "
        "and 90+ days {asof}?",
    ),
)
def aging_totals_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    items = ledger_open_items(ctx, "customer", le)
    buckets = _aging(ctx, items, "open_amount_acct")
    total = _sum(buckets.values())
    currency = ctx.currency(le)
    return Answer(
        text=f"Open customer balances in {le} as of {long_date(ctx.today)} by days overdue "
        f"(accounting currency): {_bucket_text(buckets, currency)}; "
        f"total {money(total, currency)}.",
        facts=[
            _amount("total", total, currency, "debit"),
            *_bucket_facts(buckets, currency, "debit"),
        ],
        refs=[],
        records=len(BUCKETS),
    )


@template(
    choose=_choose_past_due_total_entity,
    phrasings=(
        "How much of our receivables {where} is more than {days} days overdue {asof}?",
        "Total up the customer invoices {where} that are over {days} days late {asof}.",
    ),
)
def past_due_total_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, days = params["legal_entity"], params["days"]
    items = [
        row
        for row in ledger_open_items(ctx, "customer", le)
        if is_open_invoice(row) and overdue_days(ctx.today, row) > days
    ]
    total = _sum(row.open_amount_acct for row in items)
    currency = ctx.currency(le)
    customers = len({row.customer_account for row in items})
    return Answer(
        text=f"Unpaid customer invoices in {le} more than {days} days past due as of "
        f"{long_date(ctx.today)} total {money(total, currency)} (accounting currency) across "
        f"{len(items)} open invoice(s) of {customers} customer(s).",
        facts=[_amount("total_past_due", total, currency, "debit"), _count("invoices", len(items))],
        records=1,
    )


COMING_DUE = ListKey(
    "transactions_due",
    none="No open transactions of {who} fall due between {window}.",
    found="{n} open transaction(s) of {who} fall due between {window}, totalling {total}",
    total=Total("total_due", "open_amount_cur", side="debit"),
    counted=False,
    ids=("documents", "document_number"),
)


@template(
    party="customer",
    extra=_coming_due_extra,
    phrasings=(
        "Which open items of {who} {where} fall due {horizon}?",
        "Is anything from {who} {where} coming due {horizon}?",
        "List what {who} {where} has to pay us {horizon}.",
    ),
)
def coming_due_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    end = ctx.today + dt.timedelta(days=params["days"])
    items = [
        row
        for row in party_open_items(ctx, p)
        if row.open_amount_cur > 0 and due_between(row, ctx.today, end)
    ]
    items.sort(key=lambda row: (row.due_date, row.voucher))
    span = f"{long_date(ctx.today)} and {long_date(end)}"
    return ledger_answer(COMING_DUE, p, items, _due_line, window=span)
