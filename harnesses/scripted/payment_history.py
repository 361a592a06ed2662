"""Payment History: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from typing import Any

from harnesses.scripted._base import (
    Context,
    _customer_txns,
    _txn_rows,
    doc_link,
    long_date,
    money,
    plural,
    when,
    where,
    window,
    with_table,
)


def _txn_line(item: dict[str, Any]) -> str:
    amount = money(abs(float(item.get("amount_cur") or 0)), item.get("currency"))
    return f"{doc_link(item, 'document_number')} on {long_date(item.get('txn_date'))}, {amount}"


def _by_size(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        items,
        key=lambda i: (-abs(float(i.get("amount_cur") or 0)), i.get("txn_date"), i.get("voucher")),
    )


async def largest_payment(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = _by_size(await _customer_txns(ctx, party, ["payment"]))
    if not items:
        return f"{party.link} has made no payments {where(ctx, party.legal_entity)} {when(ctx)}."
    top = items[0]
    return (
        f"The largest payment by {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{_txn_line(top)}** (voucher {top.get('voucher')})."
    )


async def top_payments(ctx: Context) -> str:
    party = await ctx.party("customer")
    n = ctx.question.n or 10
    items = _by_size(await _customer_txns(ctx, party, ["payment"]))[:n]
    if not items:
        return f"{party.link} has made no payments {where(ctx, party.legal_entity)} {when(ctx)}."
    head = (
        f"The {plural(len(items), 'largest payment')} by {party.link} {when(ctx)}: "
        + "; ".join(_txn_line(i) for i in items)
        + "."
    )
    return with_table(head, ["Payment", "Date", "Amount"], _txn_rows(items))


async def payments_in_range(ctx: Context) -> str:
    party = await ctx.party("customer")
    q = ctx.question
    items = await _customer_txns(ctx, party, ["payment"], date_from=q.start, date_to=q.end)
    if not items:
        return f"{party.link} made no payments {window(ctx)}."
    total = sum(-float(i.get("amount_cur") or 0) for i in items)
    head = (
        f"{party.link} made **{plural(len(items), 'payment')}** {window(ctx)}, totalling "
        f"**{money(total, items[0].get('currency'))}**."
    )
    return with_table(head, ["Payment", "Date", "Amount"], _txn_rows(items))


async def last_payment(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await _customer_txns(ctx, party, ["payment"])
    if not items:
        return f"{party.link} has made no payments {where(ctx, party.legal_entity)} {when(ctx)}."
    last_day = max(str(i["txn_date"]) for i in items)
    last = [i for i in items if str(i["txn_date"]) == last_day]
    total = sum(-float(i.get("amount_cur") or 0) for i in last)
    return (
        f"The most recent payment by {party.link} was on **{long_date(last_day)}**: "
        + "; ".join(_txn_line(i) for i in last)
        + (f" (total {money(total, last[0].get('currency'))})." if len(last) > 1 else ".")
    )
