"""Collections (AR): phrasings, parameter choice and answer key of each question kind."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from synthetic_erp import _schema as s
from synthetic_erp._catalog import record_path
from synthetic_erp.scenarios._base import (
    Answer,
    OracleContext,
    Party,
    _count,
    _fact,
    _none,
    long_date,
    money,
    no_records,
    registrar,
)
from synthetic_erp.scenarios._drafting import Chooser
from synthetic_erp.scenarios._keys import ListKey, party_records, record_refs

template = registrar("Collections", "AR")


def _letters(ctx: OracleContext, p: Party) -> list[s.CollectionLetter]:
    c = s.CollectionLetter
    return party_records(ctx, c, p, c.sent_date <= ctx.today, order_by=(c.sent_date, c.letter_id))


def _letter_line(letter: s.CollectionLetter, currency: str) -> str:
    return (
        f"{letter.letter_id} level {letter.level} ({letter.sequence}) sent "
        f"{long_date(letter.sent_date)} for {money(letter.amount, currency)}"
    )


@template(
    party="customer",
    phrasings=(
        "What collection letter level is {who} currently at {where} {asof}?",
        "When did we last send a dunning letter to {who} {where}, and at which level {asof}?",
    ),
)
def last_letter_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    letters = _letters(ctx, p)
    if not letters:
        return no_records(
            f"No collection letters have been sent to {p.label} in {p.legal_entity}.",
            "collection_letters",
            [p.path],
            counted=False,
        )
    last = letters[-1]
    currency = ctx.currency(p.legal_entity)
    return Answer(
        text=f"The last collection letter sent to {p.label} in {p.legal_entity} was "
        f"{_letter_line(last, currency)}; the customer is at collection letter level {last.level}.",
        facts=[
            _fact("date", "sent_date", last.sent_date.isoformat()),
            _count("level", last.level),
            _fact("id", "letter", last.letter_id),
        ],
        refs=[p.path, record_path("collection-letters", p.legal_entity, last.letter_id)],
        records=1,
    )


LETTERS = ListKey(
    "collection_letters",
    none="No collection letters have been sent to {who} as of {today}.",
    found="{n} collection letter(s) have been sent to {who}",
    ids=("letters", "letter_id"),
)


@template(
    party="customer",
    phrasings=(
        "List the collection letters issued to {who} {where} {asof}.",
        "Which dunning letters has {who} received from us {where} {asof}?",
    ),
)
def letters_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    letters = _letters(ctx, p)
    currency = ctx.currency(p.legal_entity)
    return LETTERS.answer(
        letters,
        [_letter_line(letter, currency) for letter in letters],
        record_refs("collection-letters", letters, "letter_id"),
        party=p,
        today=long_date(ctx.today),
    )


@template(
    choose=Chooser.entity_only,
    phrasings=(
        "Are there customers {where} without a collections pool {asof}? How many?",
        "How many customers {where} sit outside every collections pool {asof}?",
    ),
)
def unassigned_pool_count(ctx: OracleContext, params: dict[str, Any]) -> Answer:
    le = params["legal_entity"]
    c = s.Customer
    count = ctx.session.scalar(
        select(func.count()).where(c.legal_entity == le, c.collections_pool_id.is_(None))
    )
    total = ctx.session.scalar(select(func.count()).where(c.legal_entity == le))
    if not count:
        return Answer(
            text=f"Every customer in {le} ({total}) is assigned to a collections pool; none is "
            "unassigned.",
            facts=[_none("customers"), _count("unassigned_customers", 0)],
        )
    return Answer(
        text=f"{count} of the {total} customers in {le} are not assigned to any collections pool.",
        facts=[_count("unassigned_customers", count)],
        records=1,
    )


@template(
    party="customer",
    phrasings=(
        "Which collections agent and pool handle {who} {where}?",
        "Who chases {who} for payment {where}: which collections agent and pool?",
    ),
)
def collections_agent_customer(ctx: OracleContext, p: Party, params: dict[str, Any]) -> Answer:
    agent_id, pool_id = p.row.collections_agent_id, p.row.collections_pool_id
    if not agent_id and not pool_id:
        return no_records(
            f"{p.label} in {p.legal_entity} has no collections agent or pool assigned.",
            "collections_agent",
            [p.path],
            counted=False,
        )
    refs = [p.path]
    parts = []
    facts = []
    if agent_id:
        a = s.CollectionsAgent
        agent = ctx.session.scalars(
            select(a).where(a.legal_entity == p.legal_entity, a.agent_id == agent_id)
        ).first()
        name = agent.name if agent else agent_id
        parts.append(f"collections agent {name} ({agent_id})")
        facts.append(_fact("name", "agent", name))
        refs.append(record_path("collections-agents", p.legal_entity, agent_id))
    else:
        parts.append("no collections agent")
    if pool_id:
        parts.append(f"collections pool {pool_id}")
        facts.append(_fact("id", "pool", pool_id))
        refs.append(record_path("collections-pools", p.legal_entity, pool_id))
    return Answer(
        text=f"{p.label} in {p.legal_entity} is handled by " + " in ".join(parts) + ".",
        facts=facts,
        refs=refs,
        records=1,
    )
