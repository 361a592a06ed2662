"""Collections Tasks (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    LIST_LIMIT,
    OPEN_ACTIVITY_STATUSES,
    Answer,
    OracleContext,
    _count,
    _d,
    _names,
    _none,
    _top,
    listed,
    long_date,
    no_records,
    party,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft, _iso

template = registrar("Collections Tasks", "AR")


def _choose_agent_worklist(c: Chooser) -> Draft:
    le = c.view.pick_le(c.rng)
    agent = c.rng.choice(c.view.agents[le] or ["CA001"])
    day = c.today + dt.timedelta(days=c.rng.choice((0, 0, 1, 2)))
    return c.le_draft(
        {"legal_entity": le, "agent_id": agent, "date": _iso(day)}, agent=agent, day=c.day(day)
    )


def _choose_open_tasks_due_entity(c: Chooser) -> Draft:
    days = c.rng.choice((3, 7, 14, 0))
    le = c.view.pick_le(c.rng)
    if not days:  # this week: Monday to Sunday of the week holding today
        monday = c.today - dt.timedelta(days=c.today.weekday())
        sunday = monday + dt.timedelta(days=6)
        params = {"legal_entity": le, "start": _iso(monday), "end": _iso(sunday)}
        return c.le_draft(params, horizon="this week")
    end = c.today + dt.timedelta(days=days)
    params = {"legal_entity": le, "start": _iso(c.today), "end": _iso(end)}
    return c.le_draft(params, **c.horizon(days))


def _activity_line(row: s.CollectionActivity, name: str | None = None) -> str:
    who = f" for {name} ({row.customer_account})" if name else ""
    return (
        f"{row.activity_id}{who}: {row.category} {row.activity_type} '{row.purpose}', status "
        f"{row.status}, due {long_date(row.due_date)}, owner {row.owner_agent_id}"
    )


@template(
    "open_activities_customer",
    party="customer",
    phrasings=(
        "List the open collections tasks and activities of {who} {where} {asof}.",
        "What collections follow-ups are still open for {who} {where} {asof}?",
    ),
)
def open_activities_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    a = s.CollectionActivity
    rows = ctx.rows(
        select(a)
        .where(
            a.legal_entity == p.legal_entity,
            a.customer_account == p.account,
            a.status.in_(OPEN_ACTIVITY_STATUSES),
            a.created_date <= ctx.today,
        )
        .order_by(a.due_date, a.activity_id)
    )
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open collections activities as of "
            f"{long_date(ctx.today)}.",
            facts=[_none("activities"), _count("open_activities", 0)],
            refs=[p.path],
        )
    lines = [_activity_line(row) for row in rows]
    return listed(
        rows,
        lines,
        f"{p.label} in {p.legal_entity} has {len(rows)} open collections activit"
        f"{'y' if len(rows) == 1 else 'ies'}",
        [
            _count("open_activities", len(rows)),
            _top("activities", [row.activity_id for row in rows], ordered=False),
        ],
        [p.path]
        + [record_path("collection-activities", p.legal_entity, r.activity_id) for r in rows[:10]],
    )


@template(
    "open_cases_customer",
    party="customer",
    phrasings=(
        "Does {who} have any open collections case {where} {asof}?",
        "Is a collections case still running against {who} {where} {asof}?",
    ),
)
def open_cases_customer(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    p = party(ctx, "customer", params)
    c = s.CollectionCase
    rows = ctx.rows(
        select(c)
        .where(
            c.legal_entity == p.legal_entity,
            c.customer_account == p.account,
            c.status == "open",
            c.opened_date <= ctx.today,
        )
        .order_by(c.opened_date, c.case_id)
    )
    if not rows:
        return Answer(
            text=f"{p.label} in {p.legal_entity} has no open collections cases.",
            facts=[_none("cases"), _count("open_cases", 0)],
            refs=[p.path],
        )
    lines = [
        f"{r.case_id} '{r.description}', opened {long_date(r.opened_date)}, owner "
        f"{r.owner_agent_id}"
        for r in rows
    ]
    return listed(
        rows,
        lines,
        f"{p.label} in {p.legal_entity} has {len(rows)} open collections case(s)",
        [
            _count("open_cases", len(rows)),
            _top("cases", [r.case_id for r in rows], ordered=False),
        ],
        [p.path] + [record_path("collection-cases", p.legal_entity, r.case_id) for r in rows],
    )


@template(
    "agent_worklist",
    choose=_choose_agent_worklist,
    phrasings=(
        "Which customers are on the worklist of collections agent {agent} {where} {day}?",
        "Show me the open collections activities agent {agent} has due {day} {where}.",
    ),
)
def agent_worklist(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, agent_id, day = params["legal_entity"], params["agent_id"], _d(params["date"])
    a = s.CollectionActivity
    agents = s.CollectionsAgent
    agent = ctx.session.scalars(
        select(agents).where(agents.legal_entity == le, agents.agent_id == agent_id)
    ).first()
    agent_name = f"{agent.name} ({agent_id})" if agent else agent_id
    rows = ctx.rows(
        select(a)
        .where(
            a.legal_entity == le,
            a.owner_agent_id == agent_id,
            a.due_date == day,
            a.status.in_(OPEN_ACTIVITY_STATUSES),
        )
        .order_by(a.customer_account, a.activity_id)
    )
    if not rows:
        return no_records(
            f"Collections agent {agent_name} has no open activities due on {long_date(day)} "
            f"in {le}.",
            "activities",
        )
    names = _names(ctx, "customer", le, {r.customer_account for r in rows})
    lines = [_activity_line(r, names.get(r.customer_account)) for r in rows]
    customers = sorted({r.customer_account for r in rows})
    return listed(
        rows,
        lines,
        f"Collections agent {agent_name} has {len(rows)} open activit"
        f"{'y' if len(rows) == 1 else 'ies'} due on {long_date(day)} in {le}, for "
        f"{len(customers)} customer(s)",
        [
            _count("activities", len(rows)),
            _top("customers", customers, ordered=False),
        ],
        [record_path("collection-activities", le, r.activity_id) for r in rows[:LIST_LIMIT]],
    )


@template(
    "open_tasks_due_entity",
    choose=_choose_open_tasks_due_entity,
    phrasings=(
        "How many open collections tasks are due {horizon} {where}?",
        "List the open collections tasks {where} that fall due {horizon}.",
    ),
)
def open_tasks_due_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, start, end = params["legal_entity"], _d(params["start"]), _d(params["end"])
    a = s.CollectionActivity
    rows = ctx.rows(
        select(a)
        .where(
            a.legal_entity == le,
            a.category == "task",
            a.status.in_(OPEN_ACTIVITY_STATUSES),
            a.due_date >= start,
            a.due_date <= end,
        )
        .order_by(a.due_date, a.activity_id)
    )
    window = f"between {long_date(start)} and {long_date(end)}"
    if not rows:
        return no_records(f"No open collections tasks in {le} are due {window}.", "tasks")
    lines = [_activity_line(r) for r in rows]
    return listed(
        rows,
        lines,
        f"{len(rows)} open collections task(s) in {le} are due {window}",
        [_count("tasks", len(rows))],
        [record_path("collection-activities", le, r.activity_id) for r in rows[:LIST_LIMIT]],
    )
