"""Collections: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

from typing import Any

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    Context,
    Party,
    doc_link,
    links,
    listing,
    long_date,
    md_link,
    money,
    name_link,
    plural,
    recognised_by,
    verb,
    when,
    where,
)
from harnesses.scripted._shared import (
    party_record,
)

__all__ = [
    "collections_agent_customer",
    "last_letter_customer",
    "letters_customer",
    "unassigned_pool_count",
]


@recognised_by(r"collections agent")
async def collections_agent_customer(ctx: Context) -> str:
    party, data = await party_record(ctx, "customer")
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


@recognised_by(r"collections pool")
async def unassigned_pool_count(ctx: Context) -> str:
    items, data = await ctx.query(
        "customers", ("collections_pool_id", "eq", None), select=["account", "name"]
    )
    count = int(data.get("total_count", len(items)))
    if not count:
        return f"There are no customers without a collections pool {where(ctx)} {when(ctx)}."
    head = (
        f"**{plural(count, 'customer')}** {where(ctx)} {verb(count, 'is', 'are')} not "
        f"assigned to any collections pool {when(ctx)}: " + listing([name_link(i) for i in items])
    )
    return head + "."


async def _sent_letters(ctx: Context) -> tuple[Party, list[dict[str, Any]]]:
    """The customer the question names and the collection letters sent to it, oldest first."""
    party = await ctx.party("customer")
    items = await ctx.party_items("list_collection_letters", party, date_to=ctx.as_of)
    return party, sorted(items, key=lambda i: (str(i.get("sent_date")), i.get("letter_id")))


def _no_letters(ctx: Context, party: Party) -> str:
    return f"No collection letters have been sent to {party.link} {when(ctx)}."


LETTERS = col.Table(
    {
        "Letter": col.link("letter_id"),
        "Sequence": col.text("sequence"),
        "Level": col.text("level"),
        "Sent": col.date("sent_date"),
        "Amount": col.amount("amount"),
    }
)


@recognised_by(r"last collection letter|letter level")
async def last_letter_customer(ctx: Context) -> str:
    party, letters = await _sent_letters(ctx)
    if not letters:
        return _no_letters(ctx, party)
    last = letters[-1]
    return (
        f"The last collection letter to {party.link} was **{doc_link(last, 'letter_id')}**, sent "
        f"on **{long_date(last.get('sent_date'))}**; the customer is at collection letter level "
        f"**{last.get('level')}** ({last.get('sequence')}, {money(last.get('amount'))})."
    )


@recognised_by(r"collection letters")
async def letters_customer(ctx: Context) -> str:
    party, letters = await _sent_letters(ctx)
    if not letters:
        return _no_letters(ctx, party)
    head = f"**{plural(len(letters), 'collection letter')}** were sent to {party.link}: "
    return LETTERS.answer(head + links(letters, "letter_id") + ".", letters)
