"""Collections Tasks: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import re
from typing import Any

from harnesses.scripted._base import (
    OPEN_ACTIVITY,
    Context,
    doc_link,
    listing,
    long_date,
    plural,
    when,
    where,
    window,
    with_table,
)


def _activity_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            doc_link(a, "activity_id"),
            a.get("customer_account", ""),
            f"{a.get('category', '')} {a.get('activity_type', '')}",
            a.get("purpose", ""),
            a.get("status", ""),
            long_date(a.get("due_date")),
        ]
        for a in items
    ]


ACTIVITY_HEADERS = ["Activity", "Customer", "Kind", "Purpose", "Status", "Due"]


async def open_activities_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_collection_activities",
        account=party.account,
        legal_entity=party.legal_entity,
        status=OPEN_ACTIVITY,
    )
    items = [a for a in items if str(a.get("created_date", "")) <= ctx.as_of.isoformat()]
    if not items:
        return f"{party.link} has no open collections activities {when(ctx)}."
    count = plural(len(items), "open collections activity", "open collections activities")
    head = f"{party.link} has **{count}**: "
    head += listing([doc_link(a, "activity_id") for a in items]) + "."
    return with_table(head, ACTIVITY_HEADERS, _activity_rows(items))


async def open_cases_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items, _ = await ctx.all_items(
        "list_collection_cases",
        account=party.account,
        legal_entity=party.legal_entity,
        status="open",
    )
    items = [c for c in items if str(c.get("opened_date", "")) <= ctx.as_of.isoformat()]
    if not items:
        return f"{party.link} has no open collections cases {when(ctx)}."
    head = f"{party.link} has **{plural(len(items), 'open collections case')}**: " + listing(
        [doc_link(c, "case_id") for c in items]
    )
    rows = [
        [doc_link(c, "case_id"), c.get("description", ""), long_date(c.get("opened_date"))]
        for c in items
    ]
    return with_table(head + ".", ["Case", "Description", "Opened"], rows)


async def agent_worklist(ctx: Context) -> str:
    q = ctx.question
    agent = re.search(r"\bagent\s+([A-Z]{1,4}\d{2,5})\b", q.text)
    day = q.single_date or q.as_of or ctx.today
    agent_id = agent.group(1) if agent else None
    items, _ = await ctx.all_items(
        "list_collection_activities",
        legal_entity=ctx.legal_entity,
        owner_agent_id=agent_id,
        due_from=day,
        due_to=day,
        status=OPEN_ACTIVITY,
    )
    who = f"agent {agent_id}" if agent_id else "the collections agents"
    if not items:
        return (
            f"There are no open collections activities due on {long_date(day)} for {who} "
            f"{where(ctx)}: the worklist is empty."
        )
    customers = sorted({a.get("customer_account", "") for a in items})
    head = (
        f"The worklist of {who} has **{plural(len(items), 'open activity', 'open activities')}** "
        f"due on {long_date(day)} {where(ctx)}, for {plural(len(customers), 'customer')}: "
        + ", ".join(ctx.link("customers", items[0].get("legal_entity"), c) for c in customers)
        + "."
    )
    return with_table(head, ACTIVITY_HEADERS, _activity_rows(items))


async def open_tasks_due_entity(ctx: Context) -> str:
    q = ctx.question
    items, _ = await ctx.all_items(
        "list_collection_activities",
        legal_entity=ctx.legal_entity,
        category="task",
        status=OPEN_ACTIVITY,
        due_from=q.start,
        due_to=q.end,
    )
    if not items:
        return f"There are no open collections tasks due {window(ctx)} {where(ctx)}."
    head = f"**{plural(len(items), 'open collections task')}** {'is' if len(items) == 1 else 'are'}"
    head += f" due {window(ctx)} {where(ctx)}."
    return with_table(head, ACTIVITY_HEADERS, _activity_rows(items))
