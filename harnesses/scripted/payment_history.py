"""Payment History: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    Party,
    doc_link,
    long_date,
    money,
    plural,
    recognised_by,
    summed,
    when,
    where,
)
from harnesses.scripted._shared import (
    customer_txns,
    documents_in_window,
)

__all__ = ["largest_payment", "last_payment", "payments_in_range", "top_payments"]

PAYMENTS = col.txn_table("Payment")


def _txn_line(item: dict[str, Any]) -> str:
    amount = money(abs(float(item.get("amount_cur") or 0)), item.get("currency"))
    return f"{doc_link(item, 'document_number')} on {long_date(item.get('txn_date'))}, {amount}"


def _by_size(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        items,
        key=lambda i: (-abs(float(i.get("amount_cur") or 0)), i.get("txn_date"), i.get("voucher")),
    )


def _no_payments(ctx: Context, party: Party) -> str:
    return f"{party.link} has made no payments {where(ctx, party.legal_entity)} {when(ctx)}."


@recognised_by(r"largest payment(?!s)|biggest single payment")
async def largest_payment(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = _by_size(await customer_txns(ctx, party, ["payment"]))
    if not items:
        return _no_payments(ctx, party)
    top = items[0]
    return (
        f"The largest payment by {party.link} {where(ctx, party.legal_entity)} {when(ctx)} is "
        f"**{_txn_line(top)}** (voucher {top.get('voucher')})."
    )


@recognised_by(r"payments", r"top|largest")
async def top_payments(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = _by_size(await customer_txns(ctx, party, ["payment"]))[: ctx.question.n or 10]
    if not items:
        return _no_payments(ctx, party)
    head = (
        f"The {plural(len(items), 'largest payment')} by {party.link} {when(ctx)}: "
        + "; ".join(_txn_line(i) for i in items)
        + "."
    )
    return PAYMENTS.answer(head, items)


payments_in_range = recognised_by(
    r"payments?", r"between|from .* to|in \d{4}\b|payments (?:has|have)"
)(
    documents_in_window(
        "customer",
        ["payment"],
        "payment",
        -1.0,
        "{who} made no payments {window}.",
        "{who} made **{count}** {window}, totalling **{total}**.",
    )
)


@recognised_by(r"last pay|most recent payment")
async def last_payment(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await customer_txns(ctx, party, ["payment"])
    if not items:
        return _no_payments(ctx, party)
    last_day = max(str(i["txn_date"]) for i in items)
    last = [i for i in items if str(i["txn_date"]) == last_day]
    return (
        f"The most recent payment by {party.link} was on **{long_date(last_day)}**: "
        + "; ".join(_txn_line(i) for i in last)
        + (f" (total {summed(last, 'amount_cur', -1.0)})." if len(last) > 1 else ".")
    )
