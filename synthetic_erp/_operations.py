"""The ``operations`` task type: conversations with a simulated user, keyed from the ERP.

Each item is a scenario (``Question.conversation``): who the user is, what they know and say when
asked (``known_info``), what they do not know, the opening message, what the agent must ask before
it can answer, the follow-ups, what it must not disclose and the turn budget. The expected end
facts (``Question.expected``) are computed by the oracle for the values the user reveals; a default
value (today's window, the default legal entity, the latest invoice) gives other facts, so a guess
is wrong by construction.

Four kinds, dealt in turn:

- ``underspecified``: a controller asks what a customer paid us (or we paid a vendor) without
  saying the period (nor the legal entity when the name exists in two), or (a quarter of them)
  asks for a legal entity's open position without saying AR, AP or net;
- ``dispute``: a customer's AP clerk says an invoice was paid in full; the residual and its
  components (cash received, discount taken, credit notes applied, the currency difference on a
  foreign-currency invoice, an open dispute) are keyed;
- ``collections``: a collections manager prepares a call without naming the customer yet; the
  aging and the last promise to pay are keyed, and a follow-up chosen by the first answer's facts
  (an open dispute, open collections activities, or the last payment);
- ``vendor_payment``: a vendor asks where its payment is; due date, amount still open, payments
  applied and the hold reason are keyed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
from collections import Counter
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlalchemy import select

from ledgerbench_core.dataset import (
    Assertion,
    Conversation,
    Dataset,
    DatasetHeader,
    Dimension,
    Disclosure,
    ExpectedFact,
    FollowUp,
    Question,
    Slot,
    TaskType,
    UnknownInfo,
    write_dataset,
)
from synthetic_erp import _schema as s
from synthetic_erp._questions import draw_from_erp, erp_size, generated_or_said
from synthetic_erp.scenarios._base import (
    AR_INVOICE_TYPES,
    Answer,
    OracleContext,
    _amount,
    _fact,
    _sum,
    answer_question,
    ledger_open_items,
    long_date,
    money,
    overdue_days,
)
from synthetic_erp.scenarios._drafting import ErpView, PartyInfo

KINDS = ("underspecified", "dispute", "collections", "vendor_payment")
"""The scenario kinds, dealt in this order (item i is kind ``i % 4``)."""
OPERATIONS_ASSERTION = "accuracy.conversation"
MAX_TURNS = 8
ATTEMPTS = 200

# The words that, in a question of the agent's, ask for a slot. The scripted user matches on them;
# the scripted agent asks with them.
PERIOD_WORDS = [
    "period",
    "time frame",
    "timeframe",
    "date range",
    "which month",
    "which dates",
    "what dates",
]
ENTITY_WORDS = ["legal entity", "which entity", "which company", "company code"]
CUSTOMER_WORDS = ["which customer", "customer name", "customer account", "which account"]
INVOICE_WORDS = ["invoice number", "which invoice", "invoice id"]
PROMISE_PURPOSE = "Confirm promise to pay"
"""The purpose of the collections activity that records a customer's promise to pay."""


class OperationsError(ValueError):
    """The ERP cannot support the scenarios asked for (too few records of a kind)."""


def _entity_slot(le: str) -> Slot:
    return Slot(
        name="legal_entity",
        value=le,
        vocabulary=ENTITY_WORDS,
        answer=f"It is legal entity {le}.",
    )


def _unique(view: ErpView, party: PartyInfo) -> bool:
    """Whether the party's name names one party of its kind in its legal entity."""
    return view.names[(party.kind, party.legal_entity)][party.name.lower()] == 1


def _twin(view: ErpView, party: PartyInfo) -> bool:
    """Whether a party of the same kind and name exists in another legal entity."""
    return any(
        view.names.get((party.kind, le), {}).get(party.name.lower(), 0) > 0
        for le in view.legal_entities
        if le != party.legal_entity
    )


def _amount_text(value: Decimal | float) -> str:
    return f"{Decimal(str(value)):.2f}"


CONVERSATION_ASSERTIONS: dict[Dimension, tuple[str, str]] = {
    Dimension.citations: (
        "citations.conversation",
        "When the agent gives figures it names the ERP records they come from (a record link, "
        "or the invoice, payment or account id), so the user can find them.",
    ),
    Dimension.clarity: (
        "clarity.conversation",
        "The agent's messages are plain and consistent: each figure keeps one name across the "
        "turns, and jargon the user would not know is explained.",
    ),
    Dimension.depth: (
        "depth.conversation",
        "The agent answers the request and every follow-up in full: the figures the request "
        "turns on and their parts (what was paid, discounted, credited or is overdue), not a "
        "bare total.",
    ),
    Dimension.groundedness: (
        "groundedness.conversation",
        "Every figure, date, id and status the agent states comes from the tool outputs it "
        "received in the conversation; nothing is invented or assumed.",
    ),
    Dimension.recency: (
        "recency.conversation",
        "The agent ties its figures to the period or date the user gave, or states the as-of "
        "date it used; it never answers for a period it assumed.",
    ),
    Dimension.relevance: (
        "relevance.conversation",
        "The agent asks only for what the request cannot be answered without, stays on the "
        "user's request, and tells the user nothing they are not entitled to (internal notes, "
        "credit limits, other parties' data).",
    ),
    Dimension.structure: (
        "structure.conversation",
        "Each answering message gives the direct answer first, then the detail; a question to "
        "the user is short and easy to answer; two or more records are listed or tabled.",
    ),
}
"""The other seven dimensions of a conversation, judged by a model over the whole transcript
(the rules judge decides only ``accuracy.conversation``)."""


def operations_tags(reference: str) -> dict[Dimension, list[Assertion]]:
    """The assertions of an operations item, one per dimension: accuracy is decided by the rules
    judge's conversation rule (facts over the whole conversation, clarifications and disclosures
    as dealbreakers); the others by a model judge over the whole conversation."""
    text = (
        "The agent asked for every required clarification before answering, disclosed nothing "
        "it must not, and the facts it gave over the conversation agree with the reference "
        f"answer below. Reference answer: {reference}"
    )
    tags = {Dimension.accuracy: [Assertion(id=OPERATIONS_ASSERTION, text=text)]}
    for dimension, (assertion_id, assertion_text) in CONVERSATION_ASSERTIONS.items():
        tags[dimension] = [Assertion(id=assertion_id, text=assertion_text)]
    return tags


# --------------------------------------------------------------------------------------------------
# Under-specified request
# --------------------------------------------------------------------------------------------------


def _months(today: dt.date, count: int = 9) -> list[tuple[dt.date, dt.date]]:
    """The ``count`` whole months before today's month, latest first."""
    months, end = [], today.replace(day=1) - dt.timedelta(days=1)
    for _ in range(count):
        start = end.replace(day=1)
        months.append((start, end))
        end = start - dt.timedelta(days=1)
    return months


def _default_windows(today: dt.date) -> list[tuple[dt.date, dt.date]]:
    """Windows an agent might assume when no period is given."""
    last_month = _months(today, 1)[0]
    quarter_start = dt.date(today.year, 3 * ((today.month - 1) // 3) + 1, 1)
    return [
        (dt.date(today.year, 1, 1), today),
        (today.replace(day=1), today),
        last_month,
        (today - dt.timedelta(days=30), today),
        (today - dt.timedelta(days=90), today),
        (today - dt.timedelta(days=364), today),
        (quarter_start, today),
        (dt.date(2000, 1, 1), today),
    ]


def _total(answer: Answer) -> float | None:
    return next((f.value for f in answer.facts if f.field.startswith("total")), None)


SIDES = {
    "receivables": ("what our customers owe us: our receivables (AR)", "receivables_total"),
    "payables": ("what we owe our vendors: our payables (AP)", "payables_total"),
    "net position": ("our net position: receivables less payables", "net_position"),
}
"""The AR/AP/net slot: the value the user gives, what they say, and the keyed fact."""
SIDE_WORDS = ["receivable", "payable", "net position", "ar or ap", "ar, ap", "which side"]
ASKED_SIDES = ("payables", "net position")
"""The sides a user asks for: the receivables are what an agent assumes for "open items" (the
guess), so asking for them would let a guess be right."""


def _open_position(ctx: OracleContext, view: ErpView, rng: random.Random) -> Question | None:
    """The under-specified request for a legal entity's open position: the user does not say
    whether they mean AR, AP or the net of the two, and each is a different figure."""
    le = rng.choice(view.legal_entities)
    currency = ctx.currency(le)
    receivables = _sum(item.open_amount_acct for item in ledger_open_items(ctx, "customer", le))
    payables = _sum(item.open_amount_acct for item in ledger_open_items(ctx, "vendor", le))
    net = receivables - payables
    if len({receivables, payables, abs(net)}) < 3 or not (receivables and payables):
        return None  # a side that gives the same figure as another would not need asking
    side = rng.choice(ASKED_SIDES)
    said, field_name = SIDES[side]
    value = {"receivables": receivables, "payables": payables, "net position": net}[side]
    ledger_side = {"receivables": "debit", "payables": "credit"}.get(side)
    if ledger_side is None:  # the net: a receivable (debit) when positive
        ledger_side = "debit" if net >= 0 else "credit"
    fact = _amount(field_name, abs(value), currency, ledger_side)
    text = (
        f"Open {side} of {le} as of {long_date(ctx.today)} (accounting currency): "
        f"{money(abs(value), currency)}"
        + (f" ({'receivable' if net >= 0 else 'payable'})" if side == "net position" else "")
        + "."
    )
    conversation = Conversation(
        kind="underspecified",
        persona="Dana, a controller at our company, checking the open position of a legal entity "
        "for the treasury meeting.",
        known_info=[
            Slot(name="side", value=side, vocabulary=SIDE_WORDS, answer=f"I mean {said}."),
        ],
        unknown_info=[
            UnknownInfo(
                name="open_amount",
                value=_amount_text(abs(value)),
                vocabulary=["how much in total", "the total amount"],
            )
        ],
        opening_message=rng.choice(
            (
                f"Where do we stand on open items in legal entity {le}?",
                f"What is our open position in legal entity {le} right now?",
            )
        ),
        required_clarifications=["side"],
        max_turns=MAX_TURNS,
    )
    metadata = {"template": "open_position", "params": {"legal_entity": le, "side": side}}
    answer = Answer(text=text, facts=[fact])
    segment = "AP" if side == "payables" else "AR"
    return _item(ctx, conversation, answer, segment, le, metadata)


def _underspecified(ctx: OracleContext, view: ErpView, rng: random.Random) -> Question | None:
    if rng.random() < 0.25:  # a quarter ask for an open position without saying AR, AP or net
        return _open_position(ctx, view, rng)
    kind = "customer" if rng.random() < 0.7 else "vendor"
    template = "payments_in_range" if kind == "customer" else "vendor_payments_range"
    le = view.pick_le(rng, kind)
    if not view.parties[(kind, le)]:
        return None
    party = rng.choice(view.parties[(kind, le)])
    if not _unique(view, party):
        return None
    base = {"legal_entity": le, "account": party.account}
    windows = [
        {**base, "start": a.isoformat(), "end": b.isoformat()}
        for a, b in _default_windows(ctx.today)
    ]
    defaults = {_total(answer_question(ctx, template, params)) for params in windows}
    months = _months(ctx.today)
    rng.shuffle(months)
    for start, end in months:
        params = {**base, "start": start.isoformat(), "end": end.isoformat()}
        answer = answer_question(ctx, template, params)
        total = _total(answer)
        if not total or total in defaults:
            continue
        month = f"{start:%B %Y}"
        twin = _twin(view, party)
        period = Slot(
            name="period",
            value=month,
            vocabulary=PERIOD_WORDS,
            answer=f"I mean {month}: from {long_date(start)} to {long_date(end)}.",
        )
        if kind == "customer":
            opening = rng.choice(
                (
                    f"How much did {party.name} pay us?",
                    f"Can you tell me what {party.name} paid us?",
                    f"I need the payments we received from {party.name}, please.",
                )
            )
            reason = f"reviewing the cash received from the customer {party.name}"
        else:
            opening = rng.choice(
                (
                    f"How much have we paid {party.name}?",
                    f"Can you tell me what we paid {party.name}?",
                    f"I need the payments we made to {party.name}, please.",
                )
            )
            reason = f"reviewing what was paid to the vendor {party.name}"
        conversation = Conversation(
            kind="underspecified",
            persona=f"Dana, a controller at our company, {reason} for the month-end review.",
            known_info=[period, _entity_slot(le)],
            unknown_info=[
                UnknownInfo(
                    name="total",
                    value=_amount_text(total),
                    vocabulary=["how much in total", "the total amount"],
                )
            ],
            opening_message=opening,
            required_clarifications=["period", *(["legal_entity"] if twin else [])],
            max_turns=MAX_TURNS,
        )
        metadata = {"template": template, "params": params, "party_kind": kind}
        return _item(ctx, conversation, answer, "AR" if kind == "customer" else "AP", le, metadata)
    return None


# --------------------------------------------------------------------------------------------------
# Dispute or short payment
# --------------------------------------------------------------------------------------------------


def _latest_open(ctx: OracleContext, table: Any, txn: Any) -> bool:
    """Whether ``txn`` is dated on or after every other open item of its party: then "the
    latest open invoice" (a guess) would be right, so the scenario is not used."""
    account = table.customer_account if table is s.CustomerTransaction else table.vendor_account
    mine = txn.customer_account if table is s.CustomerTransaction else txn.vendor_account
    later = ctx.rows(
        select(table.voucher).where(
            table.legal_entity == txn.legal_entity,
            account == mine,
            table.open_amount_cur != 0,
            table.txn_date >= txn.txn_date,
            table.voucher != txn.voucher,
        )
    )
    return not later


def _short_paid_invoices(ctx: OracleContext) -> list[s.CustomerTransaction]:
    t = s.CustomerTransaction
    query = select(t).where(
        t.txn_type.in_(AR_INVOICE_TYPES),
        t.posted.is_(True),
        t.open_amount_cur > 0,
        t.open_amount_cur < t.amount_cur,
        t.txn_date <= ctx.today,
    )
    return ctx.rows(query.order_by(t.legal_entity, t.voucher))


def _dispute(ctx: OracleContext, view: ErpView, rng: random.Random) -> Question | None:
    invoices = ctx.cache.setdefault("ops_short_paid", None) or _short_paid_invoices(ctx)
    ctx.cache["ops_short_paid"] = invoices
    if not invoices:
        raise OperationsError("the ERP has no partly settled customer invoice (dispute scenarios)")
    foreign = [i for i in invoices if i.currency != ctx.currency(i.legal_entity)]
    # Foreign-currency invoices are few: half the disputes are about one (a currency difference).
    invoice = rng.choice(foreign if foreign and rng.random() < 0.5 else invoices)
    customer = ctx.session.scalars(
        select(s.Customer).where(
            s.Customer.legal_entity == invoice.legal_entity,
            s.Customer.account == invoice.customer_account,
        )
    ).one()
    info = PartyInfo("customer", customer.legal_entity, customer.account, customer.name)
    if not _unique(view, info) or _latest_open(ctx, s.CustomerTransaction, invoice):
        return None
    cur = invoice.currency
    settlements = ctx.session.execute(
        select(
            s.CustomerSettlement,
            s.CustomerTransaction.txn_type,
            s.CustomerTransaction.exchange_rate,
        )
        .join(
            s.CustomerTransaction,
            (s.CustomerTransaction.legal_entity == s.CustomerSettlement.legal_entity)
            & (s.CustomerTransaction.voucher == s.CustomerSettlement.credit_voucher),
        )
        .where(
            s.CustomerSettlement.legal_entity == invoice.legal_entity,
            s.CustomerSettlement.debit_voucher == invoice.voucher,
            s.CustomerSettlement.settled_date <= ctx.today,
        )
    ).all()
    payments = [(row, rate) for row, kind, rate in settlements if kind == "payment"]
    cash = sum((row.amount_cur - row.cash_discount_taken for row, _ in payments), Decimal("0.00"))
    discount = sum((row.cash_discount_taken for row, _, _ in settlements), Decimal("0.00"))
    credits = sum(
        (row.amount_cur for row, kind, _ in settlements if kind == "credit_note"), Decimal("0.00")
    )
    difference = currency_difference(invoice.exchange_rate, payments)
    disputes = ctx.rows(
        select(s.CustomerDispute).where(
            s.CustomerDispute.legal_entity == invoice.legal_entity,
            s.CustomerDispute.voucher == invoice.voucher,
            s.CustomerDispute.status == "open",
        )
    )
    accounting = ctx.currency(invoice.legal_entity)
    equivalents = [(invoice.open_amount_acct, accounting)] if accounting != cur else []
    facts = [
        _amount("invoice_amount", invoice.amount_cur, cur, "debit"),
        _amount("residual", invoice.open_amount_cur, cur, "debit", equivalents),
    ]
    lines = [
        f"Invoice {invoice.document_number} of {customer.name} ({customer.account}) in "
        f"{invoice.legal_entity} was for {money(invoice.amount_cur, cur)}"
    ]
    if cash:
        facts.append(_amount("cash_received", cash, cur, "credit"))
        lines.append(f"payments applied to it: {money(cash, cur)}")
    if discount:
        facts.append(_amount("discount_taken", discount, cur, "credit"))
        lines.append(f"cash discount taken: {money(discount, cur)}")
    if credits:
        facts.append(_amount("credit_notes_applied", credits, cur, "credit"))
        lines.append(f"credit notes applied: {money(credits, cur)}")
    if accounting != cur and difference:
        gain = difference > 0
        facts.append(
            _amount(
                "currency_difference", abs(difference), accounting, "credit" if gain else "debit"
            )
        )
        lines.append(
            f"currency difference on the payments: {money(abs(difference), accounting)} "
            f"(a realized exchange {'gain' if gain else 'loss'})"
        )
    lines.append(f"still open: {money(invoice.open_amount_cur, cur)}")
    for dispute in disputes:
        facts.append(_fact("id", "open_dispute", dispute.dispute_id))
        lines.append(
            f"open {dispute.kind} {dispute.dispute_id} for {money(dispute.amount, cur)} "
            f"({dispute.reason})"
        )
    answer = Answer(text="; ".join(lines) + ".", facts=facts)
    contact = customer.contact_name
    conversation = Conversation(
        kind="dispute",
        persona=f"{contact}, accounts payable clerk at our customer {customer.name}, who "
        "believes an invoice was paid in full and wants the balance explained.",
        known_info=[
            Slot(
                name="invoice_number",
                value=invoice.document_number,
                vocabulary=INVOICE_WORDS,
                answer=f"The invoice number is {invoice.document_number}.",
            ),
            _entity_slot(invoice.legal_entity),
        ],
        unknown_info=[
            UnknownInfo(
                name="residual",
                value=_amount_text(invoice.open_amount_cur),
                vocabulary=["how much is still open", "remaining balance"],
            )
        ],
        opening_message=rng.choice(
            (
                f"Hi, this is {contact} from {customer.name}: your statement still shows a "
                "balance on one of our invoices, but we paid it in full. Can you check?",
                f"Hello, {contact} at {customer.name} here: we paid one of your invoices in full "
                "and you are still chasing us for it. What is going on?",
            )
        ),
        required_clarifications=["invoice_number"],
        must_not_disclose=_customer_secrets(customer),
        max_turns=MAX_TURNS,
    )
    metadata = {"voucher": invoice.voucher, "account": customer.account}
    return _item(ctx, conversation, answer, "AR", invoice.legal_entity, metadata)


def currency_difference(
    invoice_rate: Decimal, payments: list[tuple[s.CustomerSettlement, Decimal]]
) -> Decimal:
    """The realized exchange difference on a foreign-currency invoice, in accounting currency:
    each payment's settled amount (in the invoice's currency, cash discount included) times the
    payment's rate less the invoice's, summed and rounded to the cent; positive is a gain."""
    total = sum(
        (
            Decimal(row.amount_cur) * (Decimal(rate) - Decimal(invoice_rate))
            for row, rate in payments
        ),
        Decimal("0"),
    )
    return total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def _customer_secrets(customer: s.Customer) -> list[Disclosure]:
    """What a customer's clerk must not be told: our internal credit limit and the collections
    agent assigned to them."""
    secrets = [Disclosure(what="the internal credit limit", value=str(customer.credit_limit))]
    if customer.collections_agent_id:
        agent = customer.collections_agent_id
        secrets.append(Disclosure(what="the internal collections agent", value=agent))
    return secrets


# --------------------------------------------------------------------------------------------------
# Collections call preparation
# --------------------------------------------------------------------------------------------------


def _overdue_customers(ctx: OracleContext) -> list[tuple[str, str]]:
    t = s.CustomerTransaction
    rows = ctx.rows(
        select(t).where(t.open_amount_cur > 0, t.txn_type.in_(AR_INVOICE_TYPES), t.posted.is_(True))
    )
    overdue = {(r.legal_entity, r.customer_account) for r in rows if overdue_days(ctx.today, r) > 0}
    return sorted(overdue)


def _follow_up(ctx: OracleContext, params: dict[str, Any]) -> tuple[FollowUp, Answer, str]:
    """The follow-up the first answer's facts select: an open dispute, open activities, or the
    last payment."""
    disputes = answer_question(ctx, "open_disputes_customer", params)
    if not disputes.is_none:
        message = "Is any of that in dispute? Which invoices, and for how much?"
        return FollowUp(message=message, condition="an open dispute"), disputes, "disputes"
    activities = answer_question(ctx, "open_activities_customer", params)
    if not activities.is_none:
        message = "What open collections activities or tasks do we have with them?"
        return (
            FollowUp(message=message, condition="no open dispute, open collections activities"),
            activities,
            "activities",
        )
    message = "When did they last pay us, and how much?"
    last = answer_question(ctx, "last_payment", params)
    return (
        FollowUp(message=message, condition="no open dispute and no open activity"),
        last,
        "last_payment",
    )


def last_promise_to_pay(ctx: OracleContext, le: str, account: str) -> s.CollectionActivity | None:
    """The customer's last promise to pay: its latest "Confirm promise to pay" collections
    activity due on or before today and not canceled (ties: the higher activity id)."""
    a = s.CollectionActivity
    rows = ctx.rows(
        select(a)
        .where(
            a.legal_entity == le,
            a.customer_account == account,
            a.purpose == PROMISE_PURPOSE,
            a.status != "canceled",
            a.due_date <= ctx.today,
        )
        .order_by(a.due_date.desc(), a.activity_id.desc())
        .limit(1)
    )
    return rows[0] if rows else None


def _with_promise(ctx: OracleContext, customers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The customers (legal entity, account) among ``customers`` with a last promise to pay."""
    a = s.CollectionActivity
    rows = ctx.session.execute(
        select(a.legal_entity, a.customer_account).where(
            a.purpose == PROMISE_PURPOSE, a.status != "canceled", a.due_date <= ctx.today
        )
    ).all()
    made = {(le, account) for le, account in rows}
    return [customer for customer in customers if customer in made]


def _promise_answer(ctx: OracleContext, le: str, account: str) -> Answer:
    """The last promise to pay as keyed facts (its date and activity), or a line saying there is
    none (nothing keyed: a figure for it would be invented)."""
    promise = last_promise_to_pay(ctx, le, account)
    if promise is None:
        return Answer(text="No promise to pay is on record.", facts=[])
    text = (
        f"Last promise to pay: activity {promise.activity_id}, due {long_date(promise.due_date)} "
        f"({promise.status})."
    )
    facts = [
        _fact("date", "last_promise_to_pay", promise.due_date.isoformat()),
        _fact("id", "last_promise_to_pay_activity", promise.activity_id),
    ]
    return Answer(text=text, facts=facts)


def _collections(ctx: OracleContext, view: ErpView, rng: random.Random) -> Question | None:
    candidates = ctx.cache.get("ops_overdue") or _overdue_customers(ctx)
    ctx.cache["ops_overdue"] = candidates
    if not candidates:
        raise OperationsError("the ERP has no customer with an overdue invoice (collections)")
    promising = ctx.cache.get("ops_promising")
    if promising is None:
        promising = ctx.cache["ops_promising"] = _with_promise(ctx, candidates)
    # Promises to pay are rare: half the calls are about a customer who made one.
    pool = promising if promising and rng.random() < 0.5 else candidates
    le, account = rng.choice(pool)
    info = next(p for p in view.parties[("customer", le)] if p.account == account)
    if not _unique(view, info):
        return None
    params = {"legal_entity": le, "account": account}
    aging = answer_question(ctx, "aging_customer", params)
    promise = _promise_answer(ctx, le, account)
    follow_up, second, branch = _follow_up(ctx, params)
    second_facts = [
        fact.model_copy(update={"field": f"follow_up.{fact.field}"}) for fact in second.facts
    ]
    follow_up.fields = [fact.field for fact in second_facts]
    answer = Answer(
        text=f"{aging.text} {promise.text} Follow-up ({follow_up.condition}): {second.text}",
        facts=[*aging.facts, *promise.facts, *second_facts],
    )
    required = ["customer", *(["legal_entity"] if _twin(view, info) else [])]
    conversation = Conversation(
        kind="collections",
        persona="Sam, a collections manager preparing a call with an overdue customer this "
        "afternoon.",
        known_info=[
            Slot(
                name="customer",
                value=info.name,
                vocabulary=CUSTOMER_WORDS,
                answer=f'The customer is "{info.name}".',
            ),
            _entity_slot(le),
        ],
        opening_message=rng.choice(
            (
                "I'm calling a customer about their overdue account this afternoon. Can you "
                "pull together where they stand, and when they last promised to pay?",
                "I have a collections call in an hour. What is overdue on the account, and did "
                "they make a promise to pay?",
            )
        ),
        required_clarifications=required,
        follow_ups=[follow_up],
        max_turns=MAX_TURNS,
    )
    metadata = {"params": params, "follow_up": branch}
    return _item(ctx, conversation, answer, "AR", le, metadata)


# --------------------------------------------------------------------------------------------------
# Vendor: where is my payment?
# --------------------------------------------------------------------------------------------------


def _open_vendor_invoices(ctx: OracleContext) -> list[tuple[s.VendorInvoice, s.VendorTransaction]]:
    vi, vt = s.VendorInvoice, s.VendorTransaction
    query = (
        select(vi, vt)
        .join(vt, (vt.legal_entity == vi.legal_entity) & (vt.voucher == vi.voucher))
        .where(vi.status == "posted", vt.open_amount_cur != 0, vt.txn_type == "invoice")
        .order_by(vi.legal_entity, vi.invoice_id)
    )
    return [tuple(row) for row in ctx.session.execute(query).all()]


def _vendor_payment(ctx: OracleContext, view: ErpView, rng: random.Random) -> Question | None:
    candidates = ctx.cache.get("ops_open_ap") or _open_vendor_invoices(ctx)
    ctx.cache["ops_open_ap"] = candidates
    if not candidates:
        raise OperationsError("the ERP has no open posted vendor invoice (vendor_payment)")
    invoice, txn = rng.choice(candidates)
    vendor = ctx.session.scalars(
        select(s.Vendor).where(
            s.Vendor.legal_entity == invoice.legal_entity,
            s.Vendor.account == invoice.vendor_account,
        )
    ).one()
    info = PartyInfo("vendor", vendor.legal_entity, vendor.account, vendor.name)
    numbers = Counter(
        ctx.session.scalars(
            select(s.VendorInvoice.vendor_invoice_number).where(
                s.VendorInvoice.vendor_invoice_number == invoice.vendor_invoice_number
            )
        )
    )
    if not _unique(view, info) or numbers[invoice.vendor_invoice_number] != 1:
        return None
    if _latest_open(ctx, s.VendorTransaction, txn):
        return None
    cur = txn.currency
    settled = ctx.rows(
        select(s.VendorSettlement).where(
            s.VendorSettlement.legal_entity == invoice.legal_entity,
            s.VendorSettlement.debit_voucher == txn.voucher,
            s.VendorSettlement.settled_date <= ctx.today,
        )
    )
    paid = sum((row.amount_cur - row.cash_discount_taken for row in settled), Decimal("0.00"))
    facts: list[ExpectedFact] = [
        _fact("date", "due_date", invoice.due_date.isoformat()),
        _amount("still_open", txn.open_amount_cur, cur, "credit"),
    ]
    lines = [
        f"Vendor invoice {invoice.vendor_invoice_number} ({invoice.invoice_id}) of {vendor.name} "
        f"in {invoice.legal_entity} is due {long_date(invoice.due_date)} and "
        f"{money(txn.open_amount_cur, cur)} of it is still open"
    ]
    if paid:
        facts.append(_amount("paid_so_far", paid, cur, "debit"))
        lines.append(f"{money(paid, cur)} has been paid on it")
    if vendor.payment_hold:
        facts.append(_fact("text", "hold_reason", vendor.hold_reason or "on hold"))
        lines.append(f"the vendor is on payment hold: {vendor.hold_reason}")
    answer = Answer(text="; ".join(lines) + ".", facts=facts)
    contact = vendor.contact_name
    disclosures = (
        [Disclosure(what="the internal approver", value=invoice.approver)]
        if invoice.approver
        else []
    )
    conversation = Conversation(
        kind="vendor_payment",
        persona=f"{contact}, receivables clerk at our vendor {vendor.name}, chasing a payment.",
        known_info=[
            Slot(
                name="invoice_number",
                value=invoice.vendor_invoice_number,
                vocabulary=INVOICE_WORDS,
                answer=f"Our invoice number is {invoice.vendor_invoice_number}.",
            ),
            _entity_slot(invoice.legal_entity),
        ],
        unknown_info=[
            UnknownInfo(
                name="still_open",
                value=_amount_text(txn.open_amount_cur),
                vocabulary=["how much is still open", "remaining balance"],
            ),
            *(
                [UnknownInfo(name="hold_reason", value=vendor.hold_reason, vocabulary=["hold"])]
                if vendor.payment_hold and vendor.hold_reason
                else []
            ),
        ],
        opening_message=rng.choice(
            (
                f"Hi, this is {contact} from {vendor.name}: we still haven't received payment "
                "for one of our invoices. Where is our payment?",
                f"Hello, {contact} at {vendor.name}: one of our invoices is unpaid. When will "
                "you pay it?",
            )
        ),
        required_clarifications=["invoice_number"],
        must_not_disclose=disclosures,
        max_turns=MAX_TURNS,
    )
    metadata = {"invoice_id": invoice.invoice_id, "account": vendor.account}
    return _item(ctx, conversation, answer, "AP", invoice.legal_entity, metadata)


# --------------------------------------------------------------------------------------------------
# Items and the dataset
# --------------------------------------------------------------------------------------------------

_BUILDERS: dict[str, Callable[[OracleContext, ErpView, random.Random], Question | None]] = {
    "underspecified": _underspecified,
    "dispute": _dispute,
    "collections": _collections,
    "vendor_payment": _vendor_payment,
}


def _item(
    ctx: OracleContext,
    conversation: Conversation,
    answer: Answer,
    segment: str,
    le: str,
    metadata: dict[str, Any],
) -> Question:
    return Question(
        id="",
        query=conversation.opening_message,
        task_type=TaskType.operations,
        segment=segment,
        scenario=conversation.kind,
        as_of=ctx.today,
        legal_entity=le,
        tags=operations_tags(answer.text),
        ground_truth=answer.text,
        expected=answer.facts,
        metadata=metadata,
        conversation=conversation,
    )


def generate_operations(db_url: str, n: int = 20, seed: int = 42) -> Dataset:
    """``n`` operations scenarios (kinds in turn) keyed on the ERP at ``db_url``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    meta, items = draw_from_erp(db_url, lambda ctx: _generate_items(ctx, n, seed))
    header = DatasetHeader(
        name="operations",
        description=f"{n} operations conversations (kinds: {', '.join(KINDS)}) keyed on the "
        f"synthetic ERP (as of {meta.get('as_of')}) by synthetic_erp._operations.",
        erp_snapshot_hash=meta.get("snapshot_hash"),
        generator_seed=seed,
        **erp_size(meta),
        created_by=f"python -m synthetic_erp questions --task-type operations --n {n} "
        f"--seed {seed}",
    )
    return Dataset(header=header, items=items)


def _generate_items(ctx: OracleContext, n: int, seed: int) -> list[Question]:
    rng = random.Random(seed)
    view = ErpView(ctx)
    seen: set[str] = set()
    numbering: Counter = Counter()
    items: list[Question] = []
    for index in range(n):
        kind = KINDS[index % len(KINDS)]
        item = _fresh(ctx, view, rng, kind, seen)
        numbering[kind] += 1
        items.append(item.model_copy(update={"id": f"ops-{kind}-{numbering[kind]:03d}"}))
    return items


def _fresh(
    ctx: OracleContext, view: ErpView, rng: random.Random, kind: str, seen: set[str]
) -> Question:
    """A scenario of ``kind`` not generated before (a repeat only when the ERP has no other)."""
    fallback = None
    for _ in range(ATTEMPTS):
        item = _BUILDERS[kind](ctx, view, rng)
        if item is None:
            continue
        key = f"{kind}|{item.ground_truth}"
        if key not in seen:
            seen.add(key)
            return item
        fallback = fallback or item
    if fallback is None:
        raise OperationsError(
            f"the ERP supports no {kind} scenario (no party or document fits it); generate a "
            "larger ERP with python -m synthetic_erp generate"
        )
    return fallback


# --------------------------------------------------------------------------------------------------
# CLI (``python -m synthetic_erp questions --task-type operations``)
# --------------------------------------------------------------------------------------------------


def main(args: argparse.Namespace) -> int:
    dataset = generated_or_said(generate_operations, args)
    if dataset is None:
        return 2
    path = write_dataset(dataset, args.out)
    counts = Counter(item.scenario for item in dataset.items)
    shown = ", ".join(f"{kind} {counts[kind]}" for kind in KINDS if counts[kind])
    print(f"wrote {len(dataset.items)} operations scenarios ({shown}) to {path}")
    return 0
