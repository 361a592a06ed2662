"""Collections: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from typing import Any

from harnesses.scripted._base import (
    Context,
    Party,
    _customer,
    doc_link,
    listing,
    long_date,
    md_link,
    money,
    plural,
    when,
    where,
    with_table,
)


async def collections_agent_customer(ctx: Context) -> str:
    party, data = await _customer(ctx)
    agent = data.get("collections_agent") or {}
    pool = data.get("collections_pool") or {}
    if not agent and not pool:
        return (
            f"{party.link} in {party.legal_entity} has no collections agent and no collections "
            "pool assigned: no records were found."
        )
    parts = []
    if agent:
        agent_text = f"{agent.get('name')} ({agent.get('agent_id')})"
        parts.append(f"collections agent **{md_link(agent_text, agent.get('url'))}**")
    else:
        parts.append("no collections agent")
    if pool:
        parts.append(f"collections pool **{md_link(pool.get('pool_id'), pool.get('url'))}**")
    return f"{party.link} in {party.legal_entity} is handled by " + " in ".join(parts) + "."


async def unassigned_pool_count(ctx: Context) -> str:
    items, data = await ctx.query(
        "customers", ("collections_pool_id", "eq", None), select=["account", "name"]
    )
    count = int(data.get("total_count", len(items)))
    if not count:
        return f"There are no customers without a collections pool {where(ctx)} {when(ctx)}."
    head = (
        f"**{plural(count, 'customer')}** {where(ctx)} {'is' if count == 1 else 'are'} not "
        f"assigned to any collections pool {when(ctx)}: "
        + listing([md_link(f"{i.get('name')} ({i.get('account')})", i.get("url")) for i in items])
    )
    return head + "."


async def _letters(ctx: Context, party: Party) -> list[dict[str, Any]]:
    items, _ = await ctx.all_items(
        "list_collection_letters",
        account=party.account,
        legal_entity=party.legal_entity,
        date_to=ctx.as_of,
    )
    return sorted(items, key=lambda i: (str(i.get("sent_date")), i.get("letter_id")))


def _letter_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(i, "letter_id"),
            i.get("sequence", ""),
            i.get("level", ""),
            long_date(i.get("sent_date")),
            money(i.get("amount")),
        ]
        for i in items
    ]


async def last_letter_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    letters = await _letters(ctx, party)
    if not letters:
        return f"No collection letters have been sent to {party.link} {when(ctx)}."
    last = letters[-1]
    return (
        f"The last collection letter to {party.link} was **{doc_link(last, 'letter_id')}**, sent "
        f"on **{long_date(last.get('sent_date'))}**; the customer is at collection letter level "
        f"**{last.get('level')}** ({last.get('sequence')}, {money(last.get('amount'))})."
    )


async def letters_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    letters = await _letters(ctx, party)
    if not letters:
        return f"No collection letters have been sent to {party.link} {when(ctx)}."
    head = f"**{plural(len(letters), 'collection letter')}** were sent to {party.link}: " + listing(
        [doc_link(i, "letter_id") for i in letters]
    )
    return with_table(
        head + ".", ["Letter", "Sequence", "Level", "Sent", "Amount"], _letter_rows(letters)
    )
