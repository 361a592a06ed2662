"""Collections Tasks (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from synthetic_erp import _schema as s
from synthetic_erp.scenarios._base import (
    OPEN_ACTIVITY_STATUSES,
    Answer,
    OracleContext,
    Party,
    _d,
    _names,
    _top,
    between,
    long_date,
    registrar,
    window,
)
from synthetic_erp.scenarios._drafting import Chooser, Draft, _iso
from synthetic_erp.scenarios._keys import ListKey, entity_records, party_records, record_refs

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


def _activities(count: int) -> str:
    return "activity" if count == 1 else "activities"


def _activity_refs(rows: list[s.CollectionActivity]) -> list[str]:
    return record_refs("collection-activities", rows, "activity_id")


OPEN_ACTIVITIES = ListKey(
    "open_activities",
    none="{who} has no open collections activities as of {today}.",
    found="{who} has {n} open collections {activities}",
    none_noun="activities",
    ids=("activities", "activity_id"),
)


@template(
    party="customer",
    phrasings=(
        "List the open collections tasks and activities of {who} {where} {asof}.",
        "What collections follow-ups are still open for {who} {where} {asof}?",
    ),
)
def open_activities_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    a = s.CollectionActivity
    open_now = (a.status.in_(OPEN_ACTIVITY_STATUSES), a.created_date <= ctx.today)
    rows = party_records(ctx, a, p, *open_now, order_by=(a.due_date, a.activity_id))
    return OPEN_ACTIVITIES.answer(
        rows,
        [_activity_line(row) for row in rows],
        _activity_refs(rows),
        party=p,
        today=long_date(ctx.today),
        activities=_activities(len(rows)),
    )


OPEN_CASES = ListKey(
    "open_cases",
    none="{who} has no open collections cases.",
    found="{who} has {n} open collections case(s)",
    none_noun="cases",
    ids=("cases", "case_id"),
)


@template(
    party="customer",
    phrasings=(
        "Does {who} have any open collections case {where} {asof}?",
        "Is a collections case still running against {who} {where} {asof}?",
    ),
)
def open_cases_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    c = s.CollectionCase
    open_now = (c.status == "open", c.opened_date <= ctx.today)
    rows = party_records(ctx, c, p, *open_now, order_by=(c.opened_date, c.case_id))
    lines = [
        f"{r.case_id} '{r.description}', opened {long_date(r.opened_date)}, owner "
        f"{r.owner_agent_id}"
        for r in rows
    ]
    refs = record_refs("collection-cases", rows, "case_id")
    return OPEN_CASES.answer(rows, lines, refs, party=p)


WORKLIST = ListKey(
    "activities",
    none="Collections agent {agent} has no open activities due on {day} in {le}.",
    found="Collections agent {agent} has {n} open {activities} due on {day} in {le}, for "
    "{customers} customer(s)",
)


@template(
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
    due = (a.owner_agent_id == agent_id, a.due_date == day, a.status.in_(OPEN_ACTIVITY_STATUSES))
    rows = entity_records(ctx, a, le, *due, order_by=(a.customer_account, a.activity_id))
    names = _names(ctx, "customer", le, {r.customer_account for r in rows})
    customers = sorted({r.customer_account for r in rows})
    return WORKLIST.answer(
        rows,
        [_activity_line(r, names.get(r.customer_account)) for r in rows],
        _activity_refs(rows),
        facts=[_top("customers", customers, ordered=False, complete=True)],
        agent=f"{agent.name} ({agent_id})" if agent else agent_id,
        day=long_date(day),
        le=le,
        activities=_activities(len(rows)),
        customers=len(customers),
    )


TASKS_DUE = ListKey(
    "tasks",
    none="No open collections tasks in {le} are due {window}.",
    found="{n} open collections task(s) in {le} are due {window}",
)


@template(
    choose=_choose_open_tasks_due_entity,
    phrasings=(
        "How many open collections tasks are due {horizon} {where}?",
        "List the open collections tasks {where} that fall due {horizon}.",
    ),
)
def open_tasks_due_entity(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le, (start, end) = params["legal_entity"], window(params)
    a = s.CollectionActivity
    due = (a.category == "task", a.status.in_(OPEN_ACTIVITY_STATUSES))
    in_window = (a.due_date >= start, a.due_date <= end)
    rows = entity_records(ctx, a, le, *due, *in_window, order_by=(a.due_date, a.activity_id))
    span = between(start, end)
    lines = [_activity_line(r) for r in rows]
    return TASKS_DUE.answer(rows, lines, _activity_refs(rows), le=le, window=span)
