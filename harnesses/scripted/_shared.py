"""Solver pieces several scenarios share: the party's records, balances and setup, and the
handlers that differ only by data (``party_balance("customer", ...)``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    Handler,
    Party,
    doc_link,
    listing,
    md_link,
    money,
    name_link,
    plural,
    summed,
    total,
    when,
    where,
    window,
)


async def aging_row(ctx: Context, party: Party) -> dict[str, Any]:
    data = await ctx.call(
        "get_aging",
        party_type=party.party_type,
        account=party.account,
        legal_entity=party.legal_entity,
        as_of=ctx.as_of,
        bucket_edges=[30, 60, 90],
    )
    rows = data.get("rows") or []
    return rows[0] if rows else {}


def party_balance(kind: str, empty: str, lead: str) -> Handler:
    """One party's open balance; ``empty`` and ``lead`` word it ({who}, {where}, {when}, {zero})."""

    async def solve(ctx: Context) -> str:
        party = await ctx.party(kind)
        row = await aging_row(ctx, party)
        currency = row.get("currency")
        count = int(row.get("open_transaction_count", 0) or 0)
        words = {"who": party.link, "where": where(ctx, party.legal_entity), "when": when(ctx)}
        if not count:
            return empty.format(**words, zero=money(0, currency))
        text = lead.format(**words) + f" **{money(row.get('balance_cur'), currency)}**"
        acct = ctx.accounting_currency(party.legal_entity)
        if acct and acct != currency:
            text += f" ({money(row.get('balance_acct'), acct)} in accounting currency)"
        return text + f", over {plural(count, 'open transaction')}."

    return solve


async def party_record(ctx: Context, kind: str) -> tuple[Party, dict[str, Any]]:
    """The customer or vendor the question names and its ``get_customer``/``get_vendor`` data."""
    party = await ctx.party(kind)
    data = await ctx.call(f"get_{kind}", account=party.account, legal_entity=party.legal_entity)
    record = data.get(kind, {})
    party.url = record.get("url") or party.url
    party.name = record.get("name") or party.name
    return party, data


def payment_terms(kind: str) -> Handler:
    """The payment terms of the customer or vendor the question names."""

    async def solve(ctx: Context) -> str:
        party, data = await party_record(ctx, kind)
        terms = data.get("payment_terms") or {}
        description = f" ({terms.get('description')})" if terms.get("description") else ""
        link = md_link(str(data[kind].get("payment_terms")), terms.get("url"))
        return f"{party.link} in {party.legal_entity} has payment terms **{link}**{description}."

    return solve


async def party_list(
    ctx: Context, kind: str, label: str, filters: tuple[tuple[str, str, Any], ...], shown: col.Table
) -> str:
    """The customers or vendors ``label`` describes: how many, their links, then a table."""
    items, data = await ctx.query(f"{kind}s", *filters)
    count = int(data.get("total_count", len(items)))
    if not count:
        return f"There are no {kind}s {label}."
    head = f"**{plural(count, kind)}** {label}: " + listing([name_link(i) for i in items])
    return shown.answer(head + ".", items)


CUSTOMERS = col.Table(
    {
        "Account": col.link("account"),
        "Name": col.text("name", None),
        "Legal entity": col.text("legal_entity", None),
        "Group": col.text("group_id", None),
    }
)


async def customer_list(ctx: Context, label: str, *filters: tuple[str, str, Any]) -> str:
    return await party_list(
        ctx, "customer", f"{label} {where(ctx)} {when(ctx)}", filters, CUSTOMERS
    )


async def customer_txns(
    ctx: Context, party: Party, txn_types: list[str], **extra: Any
) -> list[dict[str, Any]]:
    """The party's customer transactions of these types dated up to the as-of date."""
    items = await ctx.party_items("list_customer_transactions", party, txn_type=txn_types, **extra)
    return [i for i in items if str(i.get("txn_date", "")) <= ctx.as_of.isoformat()]


async def vendor_txns(ctx: Context, party: Party, txn_types: list[str]) -> list[dict[str, Any]]:
    """The party's vendor transactions of these types in the question's window (up to as-of)."""
    q = ctx.question
    return await ctx.party_items(
        "list_vendor_transactions",
        party,
        txn_type=txn_types,
        date_from=q.start,
        date_to=q.end or ctx.as_of,
    )


def documents_in_window(
    kind: str, txn_types: list[str], noun: str, sign: float, none: str, some: str
) -> Handler:
    """A party's documents of these types in the question's window: how many, their total (times
    ``sign``: the ERP stores payments negative), then the list. ``none`` and ``some`` word it
    ({who}, {window}; ``some`` also {count} and {total})."""
    shown = col.txn_table(noun.capitalize())

    async def solve(ctx: Context) -> str:
        party = await ctx.party(kind)
        if kind == "vendor":
            items = await vendor_txns(ctx, party, txn_types)
        else:
            q = ctx.question
            items = await customer_txns(ctx, party, txn_types, date_from=q.start, date_to=q.end)
        words = {"who": party.link, "window": window(ctx)}
        if not items:
            return none.format(**words)
        count = plural(len(items), noun)
        head = some.format(**words, count=count, total=summed(items, "amount_cur", sign))
        return shown.answer(head, items)

    return solve


DISPUTES = col.Table(
    {
        "Dispute": col.link("dispute_id"),
        "Invoice": lambda i: md_link(i.get("voucher", ""), i.get("invoice_url")),
        "Reason": col.text("reason"),
        "Amount": col.amount("amount"),
        "Opened": col.date("opened_date"),
    }
)


def open_disputes(kind: str) -> Handler:
    """The customer's open disputes of one kind (``dispute`` or ``deduction``)."""

    async def solve(ctx: Context) -> str:
        party = await ctx.party("customer")
        items = await ctx.party_items(
            "list_disputes", party, kind=kind, status="open", opened_to=ctx.as_of
        )
        if not items:
            return f"{party.link} has no open {kind}s {when(ctx)}: no records were found."
        acct = ctx.accounting_currency(party.legal_entity)
        each = [
            f"{doc_link(i, 'dispute_id')} ({i.get('reason')}, {money(i.get('amount'))})"
            for i in items
        ]
        head = (
            f"{party.link} has **{plural(len(items), 'open ' + kind)}** totalling "
            f"**{money(total(items, 'amount'), acct)}**: " + listing(each) + "."
        )
        return DISPUTES.answer(head, items)

    return solve


async def open_ap(ctx: Context, **args: Any) -> list[dict[str, Any]]:
    """Open vendor invoices with something left to pay, dated up to the as-of date."""
    items = await ctx.entity_items(
        "list_vendor_transactions", status="open", txn_type=["invoice"], **args
    )
    return [
        i
        for i in items
        if float(i.get("open_amount_cur") or 0) > 0
        and str(i.get("txn_date", "")) <= ctx.as_of.isoformat()
    ]


OPEN_AP = col.Table(
    {
        "Invoice": col.link("document_number"),
        "Vendor": col.text("vendor_account"),
        "Due": col.date("due_date"),
        "Open amount": col.amount("open_amount_cur", "currency"),
    }
)


def due_window(ctx: Context) -> tuple[dt.date, dt.date]:
    q = ctx.question
    if q.start and q.end:
        return q.start, q.end
    if q.has(r"next month"):
        start = (ctx.as_of.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        return start, (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
    return ctx.as_of, ctx.as_of + dt.timedelta(days=q.days or 7)
