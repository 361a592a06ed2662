"""Collections tools: letters, activities and tasks, cases, and an agent's or pool's worklist."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from fastmcp.exceptions import ToolError
from pydantic import Field
from sqlalchemy import and_, case, func, select

from erp_mcp._common import (
    PageArgs,
    PageInfo,
    check_range,
    count_by,
    page_of,
    text_key,
    to_record,
)
from erp_mcp._ledger import LEDGERS, open_item_rows
from erp_mcp._records import StrictModel, money, record_model
from erp_mcp._runtime import ErpRuntime
from erp_mcp._summaries import amount_sum, open_customer_summary
from erp_mcp._tooling import erp_tool
from synthetic_erp import _schema as s

CL = s.CollectionLetter.__table__
CA = s.CollectionActivity.__table__
CC = s.CollectionCase.__table__
CU = s.Customer.__table__
AG = s.CollectionsAgent.__table__
POOL = s.CollectionsPool.__table__


def _customer_scope(rt: ErpRuntime, account: str | None, legal_entity: str | None):
    le = rt.check_legal_entity(legal_entity)
    if account:
        return rt.resolve_party("customer", account, le)
    return le, None


class LetterArgs(PageArgs):
    account: str | None = None
    """Customer account id or exact name."""
    legal_entity: str | None = None
    level: int | None = Field(None, ge=1, le=4)
    """1 = first reminder .. 4 = final notice."""
    sequence: str | None = None
    date_from: dt.date | None = None
    """Sent on or after."""
    date_to: dt.date | None = None
    """Sent on or before."""


class LetterItem(record_model(s.CollectionLetter)):
    customer_name: str | None = None


class LetterPage(PageInfo):
    items: list[LetterItem]
    count_by_level: dict[str, int]
    """Letters per level over all matching rows."""


@erp_tool("finance", LetterArgs)
def list_collection_letters(rt: ErpRuntime, args: LetterArgs) -> LetterPage:
    """Collection letters sent: level (1 reminder .. 4 final), date, amount claimed."""
    check_range("date_from/date_to", args.date_from, args.date_to)
    le, account = _customer_scope(rt, args.account, args.legal_entity)
    clauses = []
    if account:
        clauses.append(CL.c.customer_account == account)
    if le:
        clauses.append(CL.c.legal_entity == le)
    if args.level:
        clauses.append(CL.c.level == args.level)
    if args.sequence:
        clauses.append(CL.c.sequence == args.sequence)
    if args.date_from:
        clauses.append(CL.c.sent_date >= args.date_from)
    if args.date_to:
        clauses.append(CL.c.sent_date <= args.date_to)
    with rt.engine.connect() as conn:
        rows, info = page_of(
            conn, select(CL).where(*clauses), [CL.c.sent_date.desc(), CL.c.letter_id], args
        )
        levels = conn.execute(
            select(CL.c.level, func.count()).where(*clauses).group_by(CL.c.level)
        ).all()
    return LetterPage(
        **info.model_dump(),
        items=[
            to_record(
                rt,
                s.CollectionLetter,
                r,
                model=LetterItem,
                customer_name=rt.party_name("customer", r.legal_entity, r.customer_account),
            )
            for r in rows
        ],
        count_by_level={str(level): int(n) for level, n in sorted(levels)},
    )


ActivityStatus = Literal["open", "in_progress", "completed", "canceled"]


class ActivityArgs(PageArgs):
    account: str | None = None
    """Customer account id or exact name."""
    legal_entity: str | None = None
    category: Literal["activity", "task", "any"] = "any"
    status: list[ActivityStatus] | None = None
    """Only these statuses."""
    activity_type: Literal["call", "email", "letter", "appointment", "action"] | None = None
    due_from: dt.date | None = None
    """Due on or after."""
    due_to: dt.date | None = None
    """Due on or before."""
    owner_agent_id: str | None = None
    """Collections agent who owns it."""
    case_id: str | None = None


class ActivityItem(record_model(s.CollectionActivity)):
    customer_name: str | None = None
    owner_url: str | None = None
    case_url: str | None = None


class ActivityPage(PageInfo):
    items: list[ActivityItem]
    count_by_status: dict[str, int]


@erp_tool("finance", ActivityArgs)
def list_collection_activities(rt: ErpRuntime, args: ActivityArgs) -> ActivityPage:
    """Collections activities and tasks with purpose, status, due date, owner agent and case."""
    check_range("due_from/due_to", args.due_from, args.due_to)
    le, account = _customer_scope(rt, args.account, args.legal_entity)
    clauses = []
    if account:
        clauses.append(CA.c.customer_account == account)
    if le:
        clauses.append(CA.c.legal_entity == le)
    if args.category != "any":
        clauses.append(CA.c.category == args.category)
    if args.status:
        clauses.append(CA.c.status.in_(args.status))
    if args.activity_type:
        clauses.append(CA.c.activity_type == args.activity_type)
    if args.due_from:
        clauses.append(CA.c.due_date >= args.due_from)
    if args.due_to:
        clauses.append(CA.c.due_date <= args.due_to)
    if args.owner_agent_id:
        clauses.append(CA.c.owner_agent_id == args.owner_agent_id.strip())
    if args.case_id:
        clauses.append(CA.c.case_id == args.case_id.strip())
    with rt.engine.connect() as conn:
        statuses = count_by(conn, CA.c.status, clauses)  # their sum is the total: no count
        rows, info = page_of(conn, select(CA).where(*clauses), [CA.c.due_date, CA.c.activity_id],
                             args, total=sum(statuses.values()), row_key=CA.c.id)  # fmt: skip
    return ActivityPage(
        **info.model_dump(),
        items=[_activity_item(rt, r) for r in rows],
        count_by_status=statuses,
    )


def _activity_item(rt: ErpRuntime, r) -> ActivityItem:
    return to_record(
        rt,
        s.CollectionActivity,
        r,
        model=ActivityItem,
        customer_name=rt.party_name("customer", r.legal_entity, r.customer_account),
        owner_url=rt.url("collections-agents", r.legal_entity, r.owner_agent_id),
        case_url=rt.url("collection-cases", r.legal_entity, r.case_id),
    )


class CaseArgs(PageArgs):
    account: str | None = None
    legal_entity: str | None = None
    status: Literal["open", "closed", "any"] = "any"
    owner_agent_id: str | None = None
    opened_from: dt.date | None = None
    opened_to: dt.date | None = None


class CaseItem(record_model(s.CollectionCase)):
    customer_name: str | None = None
    activity_count: int = 0
    """Activities and tasks linked to the case."""


class CasePage(PageInfo):
    items: list[CaseItem]


@erp_tool("finance", CaseArgs)
def list_collection_cases(rt: ErpRuntime, args: CaseArgs) -> CasePage:
    """Collections cases: customer, status, dates, owner."""
    check_range("opened_from/opened_to", args.opened_from, args.opened_to)
    le, account = _customer_scope(rt, args.account, args.legal_entity)
    clauses = []
    if account:
        clauses.append(CC.c.customer_account == account)
    if le:
        clauses.append(CC.c.legal_entity == le)
    if args.status != "any":
        clauses.append(CC.c.status == args.status)
    if args.owner_agent_id:
        clauses.append(CC.c.owner_agent_id == args.owner_agent_id.strip())
    if args.opened_from:
        clauses.append(CC.c.opened_date >= args.opened_from)
    if args.opened_to:
        clauses.append(CC.c.opened_date <= args.opened_to)
    with rt.engine.connect() as conn:
        rows, info = page_of(
            conn, select(CC).where(*clauses), [CC.c.opened_date.desc(), CC.c.case_id], args
        )
        counts = _activity_counts(conn, [(r.legal_entity, r.case_id) for r in rows])
    return CasePage(
        **info.model_dump(),
        items=[
            to_record(
                rt,
                s.CollectionCase,
                r,
                model=CaseItem,
                customer_name=rt.party_name("customer", r.legal_entity, r.customer_account),
                activity_count=counts.get((r.legal_entity, r.case_id), 0),
            )
            for r in rows
        ],
    )


def _activity_counts(conn, cases: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Activities linked to each of ``cases`` (the page only: one indexed lookup per case)."""
    counts: dict[tuple[str, str], int] = {}
    for le in sorted({le for le, _ in cases}):
        ids = [case_id for code, case_id in cases if code == le]
        stmt = (
            select(CA.c.case_id, func.count())
            .where(CA.c.legal_entity == le, CA.c.case_id.in_(ids))
            .group_by(CA.c.case_id)
        )
        counts.update({(le, case_id): int(n) for case_id, n in conn.execute(stmt)})
    return counts


class WorklistArgs(StrictModel):
    agent_id: str | None = None
    """Collections agent id (customers assigned to the agent)."""
    pool_id: str | None = None
    """Collections pool id (customers in the pool)."""
    legal_entity: str | None = None
    as_of: dt.date | None = None
    """Worklist date; default the ERP's today."""
    min_overdue: float = Field(0.01, ge=0)
    """Least overdue amount (accounting currency)."""
    limit: int = Field(25, ge=1, le=500)
    """Customers to list, at most 500."""
    activity_limit: int = Field(25, ge=1, le=500)
    """Activities to list, at most 500."""


class WorklistCustomer(StrictModel):
    legal_entity: str
    account: str
    name: str | None
    collections_agent_id: str | None
    collections_pool_id: str | None
    balance_acct: float
    overdue_acct: float
    """Open amount past due on the worklist date."""
    oldest_due_date: dt.date | None
    """Oldest due date among overdue items."""
    max_days_overdue: int
    open_activities: list[ActivityItem]
    """Open or in-progress activities and tasks for the customer."""
    url: str | None


class Worklist(StrictModel):
    as_of: dt.date
    agent_id: str | None
    pool_id: str | None
    activities_due: list[ActivityItem]
    """Open or in-progress activities and tasks owned by the agent (or the pool's agents) due on the
    worklist date, by customer account (the first activity_limit of them)."""
    activities_due_count: int
    """All such activities due on the worklist date, listed or not."""
    past_due_activity_count: int
    """Open or in-progress activities of the same owners due before the worklist date."""
    customers: list[WorklistCustomer]
    """Largest overdue amount first."""
    customer_count: int
    total_overdue_acct: dict[str, float]
    """Overdue per accounting currency over all listed customers."""
    truncated: bool = False
    """True when a list was cut to stay within the result budget (about 100,000 characters):
    narrow the call (account, legal_entity, a smaller limit) for the rest."""


@erp_tool("finance", WorklistArgs)
def get_collections_worklist(rt: ErpRuntime, args: WorklistArgs) -> Worklist:
    """A collections agent's or pool's worklist on a date: activities due and overdue customers.
    Give agent_id or pool_id."""
    if not args.agent_id and not args.pool_id:
        raise ToolError("give agent_id or pool_id (see list_reference_data collections_agents)")
    as_of = args.as_of or rt.today
    le = rt.check_legal_entity(args.legal_entity)
    with rt.engine.connect() as conn:
        _check_assignee(conn, args, le)
        listed = conn.execute(_overdue_customers(rt, args, le, as_of)).all()
        activities = _open_activities(conn, [(r.legal_entity, r.account) for r in listed])
        owned = _owned_activity_clauses(rt, args, le)
        due_today = conn.execute(
            select(CA)
            .where(*owned, CA.c.due_date == as_of)
            .order_by(CA.c.customer_account, CA.c.activity_id)
            .limit(args.activity_limit)
        ).all()
        due_count, past_due = conn.execute(
            select(
                func.count(case((CA.c.due_date == as_of, 1))),
                func.count(case((CA.c.due_date < as_of, 1))),
            ).where(*owned, CA.c.due_date <= as_of)
        ).one()
    customers, totals = [], {}
    for r in listed:
        oldest = _as_date(r.oldest)
        currency = rt.legal_entities[r.legal_entity].accounting_currency
        totals[currency] = money(totals.get(currency, 0) + float(r.overdue))
        customers.append(
            WorklistCustomer(
                legal_entity=r.legal_entity,
                account=r.account,
                name=rt.party_name("customer", r.legal_entity, r.account),
                collections_agent_id=r.collections_agent_id,
                collections_pool_id=r.collections_pool_id,
                balance_acct=money(r.balance),
                overdue_acct=money(r.overdue),
                oldest_due_date=oldest,
                max_days_overdue=(as_of - oldest).days,
                open_activities=[
                    _activity_item(rt, a) for a in activities.get((r.legal_entity, r.account), [])
                ],
                url=rt.url("customers", r.legal_entity, r.account),
            )
        )
    return Worklist(
        as_of=as_of,
        agent_id=args.agent_id,
        pool_id=args.pool_id,
        activities_due=[_activity_item(rt, a) for a in due_today],
        activities_due_count=int(due_count or 0),
        past_due_activity_count=int(past_due or 0),
        customers=customers,
        customer_count=int(listed[0].customer_count) if listed else 0,
        total_overdue_acct=totals,
    )


def _overdue_customers(rt: ErpRuntime, args: WorklistArgs, le: str | None, as_of: dt.date):
    """The assigned customers with at least ``min_overdue`` past due on ``as_of``, largest
    first, cut to ``limit`` in the database, with their number before the cut
    (``customer_count``)."""
    if rt.summaries and rt.summaries.open_items_hold(as_of):
        return _overdue_from_summary(rt, args, le, as_of)
    ledger = LEDGERS["customer"]
    party_clauses = [CU.c.legal_entity.in_([le] if le else list(rt.legal_entities))]
    if args.agent_id:
        party_clauses.append(CU.c.collections_agent_id == args.agent_id.strip())
    if args.pool_id:
        party_clauses.append(CU.c.collections_pool_id == args.pool_id.strip())
    items = open_item_rows(
        ledger,
        as_of,
        rt.today,
        where=party_clauses,
        columns=[CU.c.collections_agent_id, CU.c.collections_pool_id],
        with_party=True,
    )
    past_due = and_(items.c.aging_date < as_of, items.c.open_cur > 0)
    return _largest_overdue(rt, args, items, past_due, func.sum)


def _overdue_from_summary(rt: ErpRuntime, args: WorklistArgs, le: str | None, as_of: dt.date):
    """``_overdue_customers`` over today's open items summed per customer, aging date and sign
    (the same sums, from the agent's or pool's rows only)."""
    items = open_customer_summary(
        [le] if le else list(rt.legal_entities),
        args.agent_id.strip() if args.agent_id else None,
        args.pool_id.strip() if args.pool_id else None,
    )
    past_due = and_(items.c.aging_date < as_of, items.c.positive.is_(True))
    return _largest_overdue(rt, args, items, past_due, amount_sum)


def _largest_overdue(rt: ErpRuntime, args: WorklistArgs, items, past_due, total):
    """Per customer of ``items``: balance, overdue (``past_due`` lines) and oldest overdue date,
    largest overdue first, cut to ``limit``; ``total`` sums (func.sum, or exact cents)."""
    overdue = total(case((past_due, items.c.open_acct), else_=0))
    oldest = func.min(case((past_due, items.c.aging_date)))
    keys = [items.c.legal_entity, items.c.account, items.c.collections_agent_id,
            items.c.collections_pool_id]  # fmt: skip
    return (
        select(
            *keys,
            total(items.c.open_acct).label("balance"),
            overdue.label("overdue"),
            oldest.label("oldest"),
            func.count().over().label("customer_count"),
        )
        .group_by(*keys)
        .having(and_(oldest.is_not(None), overdue >= args.min_overdue))
        .order_by(overdue.desc(), text_key(rt, items.c.legal_entity), text_key(rt, items.c.account))
        .limit(args.limit)
    )


def _as_date(value) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _owned_activity_clauses(rt: ErpRuntime, args: WorklistArgs, le: str | None) -> list:
    clauses = [
        CA.c.status.in_(("open", "in_progress")),
        CA.c.legal_entity.in_([le] if le else list(rt.legal_entities)),
    ]
    if args.agent_id:
        clauses.append(CA.c.owner_agent_id == args.agent_id.strip())
    if args.pool_id:
        pool_agents = select(AG.c.agent_id).where(AG.c.pool_id == args.pool_id.strip())
        if le:
            pool_agents = pool_agents.where(AG.c.legal_entity == le)
        clauses.append(CA.c.owner_agent_id.in_(pool_agents))
    return clauses


def _check_assignee(conn, args: WorklistArgs, le: str | None) -> None:
    for value, table, column, label in (
        (args.agent_id, AG, AG.c.agent_id, "collections agent"),
        (args.pool_id, POOL, POOL.c.pool_id, "collections pool"),
    ):
        if not value:
            continue
        clauses = [column == value.strip()] + ([table.c.legal_entity == le] if le else [])
        if conn.execute(select(func.count()).select_from(table).where(*clauses)).scalar():
            continue
        known = [r[0] for r in conn.execute(select(column).distinct().order_by(column).limit(20))]
        raise ToolError(f"unknown {label} {value!r}; known: {', '.join(known)}")


def _open_activities(conn, parties: list[tuple[str, str]]) -> dict[tuple[str, str], list]:
    if not parties:
        return {}
    out: dict[tuple[str, str], list] = {}
    for le in {p[0] for p in parties}:
        accounts = [p[1] for p in parties if p[0] == le]
        rows = conn.execute(
            select(CA)
            .where(
                CA.c.legal_entity == le,
                CA.c.customer_account.in_(accounts),
                CA.c.status.in_(("open", "in_progress")),
            )
            .order_by(CA.c.due_date, CA.c.activity_id)
        )
        for r in rows:
            out.setdefault((r.legal_entity, r.customer_account), []).append(r)
    return out
