"""Collections Tasks: the scripted agent's solvers for this scenario's questions."""

from __future__ import annotations

import re

from harnesses.scripted import _columns as col
from harnesses.scripted._base import (
    OPEN_ACTIVITY,
    Context,
    links,
    long_date,
    plural,
    recognised_by,
    verb,
    when,
    where,
    window,
)

__all__ = [
    "agent_worklist",
    "open_activities_customer",
    "open_cases_customer",
    "open_tasks_due_entity",
]

ACTIVITIES = col.Table(
    {
        "Activity": col.link("activity_id"),
        "Customer": col.text("customer_account"),
        "Kind": lambda a: f"{a.get('category', '')} {a.get('activity_type', '')}",
        "Purpose": col.text("purpose"),
        "Status": col.text("status"),
        "Due": col.date("due_date"),
    }
)


@recognised_by(r"collections (?:activities|tasks)|open activities")
async def open_activities_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await ctx.party_items("list_collection_activities", party, status=OPEN_ACTIVITY)
    items = [a for a in items if str(a.get("created_date", "")) <= ctx.as_of.isoformat()]
    if not items:
        return f"{party.link} has no open collections activities {when(ctx)}."
    count = plural(len(items), "open collections activity", "open collections activities")
    head = f"{party.link} has **{count}**: "
    return ACTIVITIES.answer(head + links(items, "activity_id") + ".", items)


CASES = col.Table(
    {
        "Case": col.link("case_id"),
        "Description": col.text("description"),
        "Opened": col.date("opened_date"),
    }
)


@recognised_by(r"collections cases?|collections case")
async def open_cases_customer(ctx: Context) -> str:
    party = await ctx.party("customer")
    items = await ctx.party_items("list_collection_cases", party, status="open")
    items = [c for c in items if str(c.get("opened_date", "")) <= ctx.as_of.isoformat()]
    if not items:
        return f"{party.link} has no open collections cases {when(ctx)}."
    head = f"{party.link} has **{plural(len(items), 'open collections case')}**: "
    return CASES.answer(head + links(items, "case_id") + ".", items)


@recognised_by(r"worklist|activities due on")
async def agent_worklist(ctx: Context) -> str:
    q = ctx.question
    agent = re.search(r"\bagent\s+([A-Z]{1,4}\d{2,5})\b", q.text)
    day = q.single_date or q.as_of or ctx.today
    agent_id = agent.group(1) if agent else None
    items = await ctx.entity_items(
        "list_collection_activities",
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
    return ACTIVITIES.answer(head, items)


@recognised_by(r"collections tasks", r"due (?:between|from)")
async def open_tasks_due_entity(ctx: Context) -> str:
    q = ctx.question
    items = await ctx.entity_items(
        "list_collection_activities",
        category="task",
        status=OPEN_ACTIVITY,
        due_from=q.start,
        due_to=q.end,
    )
    if not items:
        return f"There are no open collections tasks due {window(ctx)} {where(ctx)}."
    head = f"**{plural(len(items), 'open collections task')}** {verb(len(items), 'is', 'are')}"
    return ACTIVITIES.answer(head + f" due {window(ctx)} {where(ctx)}.", items)
