"""The scripted agent in conversations (operations items), and the guess-at-once baseline.

Like the one-shot scripted agent it knows the generator's wording (``synthetic_erp._operations``):
from the user's opening message it tells the scenario kind and the party, asks in one turn for
what it needs (the period, the legal entity, the invoice number, the customer), reads the user's
answers from the conversation, then answers from the ERP tools only: the under-specified request
and the collections call through the one-shot solvers (it phrases the now complete request the way
the generator does), the dispute and the vendor inquiry with calls of its own. It is a check that
every scenario can be finished through the tools, not a model of an agent.

``--harness guess`` is the same agent that never asks: it fills what it does not know with
defaults (the year so far, the default legal entity, the customer's or vendor's latest open
invoice, the largest overdue customer) and answers at once. Its score shows that a guess is wrong
by construction.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from harnesses._erp_client import ErpClient
from harnesses._protocol import (
    AgentEnvironment,
    AgentOutcome,
    AgentTask,
    HarnessOptions,
    TrajectoryDraft,
)
from harnesses._registry import harness
from harnesses.scripted._agent import ScriptedAgent, _erp_info, understand
from harnesses.scripted._agent import _answer as answer_intent
from harnesses.scripted._base import DATE_WORDS, MONTHS, TOOL_RETRIES, Context

NOT_UNDERSTOOD = (
    "I am sorry, I did not understand the request. Could you say what you need from the ERP?"
)
QUESTIONS = {
    "underspecified": "For which period do you need it (which month or date range), and in "
    "which legal entity?",
    "dispute": "Which invoice is it? Please give me the invoice number, and which legal entity "
    "(which company) you were invoiced by?",
    "collections": "Which customer is it (the customer name or customer account), and in which "
    "legal entity?",
    "vendor_payment": "Which invoice is it? Please give me your invoice number, and which legal "
    "entity (which company) you invoiced?",
    "position": "Do you mean our receivables (what customers owe us), our payables (what we owe "
    "vendors), or the net position of the two?",
}
"""What the agent asks first, per kind: every slot it needs, in the words of those slots."""

_PATTERNS = (
    ("dispute", "customer", re.compile(r"this is .+? from (.+?): your statement", re.I)),
    ("dispute", "customer", re.compile(r", .+? at (.+?) here: we paid", re.I)),
    ("vendor_payment", "vendor", re.compile(r"this is .+? from (.+?): we still haven't", re.I)),
    ("vendor_payment", "vendor", re.compile(r", .+? at (.+?): one of our invoices", re.I)),
    ("collections", "customer", re.compile(r"collections call|overdue account", re.I)),
    ("underspecified", "customer", re.compile(r"what (.+?) paid us\?$|did (.+?) pay us\?$", re.I)),
    ("underspecified", "customer", re.compile(r"payments we received from (.+?), please\.$", re.I)),
    ("underspecified", "vendor", re.compile(r"have we paid (.+?)\?$|what we paid (.+?)\?$", re.I)),
    ("underspecified", "vendor", re.compile(r"payments we made to (.+?), please\.$", re.I)),
    ("position", "entity", re.compile(r"open (?:items|position) in legal entity (\w+)", re.I)),
)
_SIDES = (
    ("net position", "net position"),
    ("payables", "payables"),
    ("receivables", "receivables"),
)
"""How the user names the side of an open position (the net first: its words name both)."""

PROMISE_PURPOSE = "Confirm promise to pay"
"""The collections activity purpose that records a customer's promise to pay."""


@dataclass
class Request:
    """What the conversation has told the agent so far."""

    kind: str
    party_kind: str
    party: str | None = None
    legal_entity: str | None = None
    start: dt.date | None = None
    end: dt.date | None = None
    invoice: str | None = None
    side: str | None = None
    """An open position: receivables, payables or net position."""
    follow_ups: list[str] = field(default_factory=list)

    def missing(self) -> bool:
        if self.kind == "position":
            return self.side is None
        if self.kind == "underspecified":
            return self.start is None or self.legal_entity is None
        if self.kind == "collections":
            return self.party is None or self.legal_entity is None
        return self.invoice is None or self.legal_entity is None


def read_opening(text: str) -> Request | None:
    """The scenario kind and the party named in the user's opening message."""
    for kind, party_kind, pattern in _PATTERNS:
        match = pattern.search(text.strip())
        if match:
            named = next((g for g in match.groups() if g), None) if match.groups() else None
            if kind == "position":
                return Request(kind, party_kind, legal_entity=(named or "").upper())
            return Request(kind, party_kind, party=named)
    return None


def read_answers(request: Request, messages: list[str], entities: list[str]) -> Request:
    """``request`` with the slots the user's later messages gave."""
    for text in messages:
        dates = _dates(text)
        if len(dates) >= 2:
            request.start, request.end = dates[0], dates[1]
        entity = re.search(r"legal entity (\w+)", text, re.I)
        codes = [code for code in entities if re.search(rf"\b{code}\b", text)]
        if entity and entity.group(1).upper() in entities:
            request.legal_entity = entity.group(1).upper()
        elif codes:
            request.legal_entity = codes[0]
        invoice = re.search(r"invoice number is ([\w-]+)", text, re.I)
        if invoice:
            request.invoice = invoice.group(1)
        customer = re.search(r'the customer is "(.+?)"', text, re.I)
        if customer:
            request.party = customer.group(1)
        side = next((side for words, side in _SIDES if words in text.lower()), None)
        if request.kind == "position" and side:
            request.side = side
    return request


def _dates(text: str) -> list[dt.date]:
    found = []
    for month, day, year in DATE_WORDS.findall(text):
        index = next(i for i, name in enumerate(MONTHS) if name.startswith(month.lower()[:3]))
        found.append(dt.date(int(year), index + 1, int(day)))
    return found


def _money(amount: float | Decimal, currency: str) -> str:
    return f"{currency} {Decimal(str(amount)):,.2f}"


def _long(day: dt.date) -> str:
    return f"{day:%B} {day.day}, {day.year}"


class ConversationAgent:
    """``--harness scripted`` in conversations (``ask=True``) and ``--harness guess``."""

    conversational = True
    model_free = True
    """It calls no model: the cost of each answer is a known 0.0."""

    def __init__(self, options: HarnessOptions | None = None, *, ask: bool = True) -> None:
        self.options = options or HarnessOptions()
        self.ask = ask
        self.name = "scripted" if ask else "guess"
        self.model = None
        self.transport = ScriptedAgent(self.options).transport  # its option check, too

    async def aclose(self) -> None:
        return None

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        user_messages = [t.content for t in task.history if t.role == "user"] + [task.query]
        request = read_opening(user_messages[0])
        if request is None:
            return self._say(draft, NOT_UNDERSTOOD)
        if self.ask and len(user_messages) == 1:  # nothing to look up before asking
            return self._say(draft, QUESTIONS[request.kind])
        async with ErpClient(env.erp, transport=self.transport) as erp:
            info = await _erp_info(erp, draft)
            entities = [le["code"] for le in info.get("legal_entities", [])]
            today = dt.date.fromisoformat(str(info.get("today", "2000-01-01"))[:10])
            request = read_answers(request, user_messages[1:], entities)
            if request.missing() and self.ask:
                return self._say(draft, QUESTIONS[request.kind])
            _fill_defaults(request, today, info.get("default_legal_entity"))
            draft.turns += 1
            answered = [t for t in task.history if t.role == "agent" and _has_figures(t.content)]
            solve = _OneShot(erp, draft, info, today)
            if answered and request.kind == "collections":
                reply = await _collections_follow_up(solve, task.query, request)
            else:
                reply = await _answer(solve, erp, draft, request)
        return self._say(draft, reply)

    def _say(self, draft: TrajectoryDraft, text: str) -> AgentOutcome:
        draft.set_answer(text)
        return AgentOutcome(answer=text)


@dataclass
class _OneShot:
    """The one-shot scripted solvers on the conversation's ERP session."""

    erp: ErpClient
    draft: TrajectoryDraft
    info: dict[str, Any]
    today: dt.date

    async def __call__(self, query: str) -> str:
        """The one-shot scripted agent's answer to the completed request ``query``."""
        entities = {le["code"]: le for le in self.info.get("legal_entities", [])}
        default = self.info.get("default_legal_entity")
        question, intent = understand(query, self.today, list(entities), default)
        if intent is None:
            return NOT_UNDERSTOOD
        pattern = self.info.get("record_url_pattern")
        ctx = Context(self.erp, self.draft, question, self.today, entities, url_pattern=pattern)
        return await answer_intent(ctx, intent)


async def _answer(solve: _OneShot, erp: ErpClient, draft: TrajectoryDraft, request: Request) -> str:
    if request.kind == "position":
        return await _open_position(erp, draft, request, solve.today)
    if request.kind == "underspecified":
        return await solve(_payments_query(request))
    if request.kind == "collections":
        if request.party is None:
            return await solve(_entity_aging_query(request))
        aging = await solve(_aging_query(request))
        return f"{aging}\n\n{await _last_promise(erp, draft, request, solve.today)}"
    if request.kind == "dispute":
        entities = {le["code"]: le for le in solve.info.get("legal_entities", [])}
        accounting = entities.get(request.legal_entity or "", {}).get("accounting_currency")
        return await _dispute(erp, draft, request, accounting)
    return await _vendor_payment(erp, draft, request)


async def _collections_follow_up(solve: _OneShot, asked: str, request: Request) -> str:
    asked = asked.lower()
    who = f"{request.party} in {request.legal_entity}"
    if "dispute" in asked:
        return await solve(f"Which invoices of {who} are currently disputed as of today?")
    if "activities" in asked or "tasks" in asked:
        return await solve(f"List the open collections tasks and activities of {who} as of today.")
    if "last pay" in asked:
        return await solve(
            f"When did {request.party} last pay us in {request.legal_entity} as of today, "
            "and how much?"
        )
    return "I am not sure what you need: could you rephrase the question?"


def _has_figures(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def _fill_defaults(request: Request, today: dt.date, default_le: str | None) -> None:
    """The guess's assumptions for what the user did not say (never used after asking)."""
    request.legal_entity = request.legal_entity or default_le
    if request.start is None:
        request.start, request.end = dt.date(today.year, 1, 1), today


def _payments_query(request: Request) -> str:
    assert request.start and request.end
    window = f"between {_long(request.start)} and {_long(request.end)}"
    if request.party_kind == "customer":
        return (
            f"How many payments did {request.party} in {request.legal_entity} make {window}, "
            "and what did they add up to?"
        )
    return f"How much did we pay {request.party} {window} in {request.legal_entity}?"


def _aging_query(request: Request) -> str:
    return (
        f"How is the balance of {request.party} in {request.legal_entity} spread across the "
        "aging buckets as of today?"
    )


def _entity_aging_query(request: Request) -> str:
    return f"Summarise our receivables in {request.legal_entity} by aging bucket as of today."


async def _call(erp: ErpClient, draft: TrajectoryDraft, tool: str, **arguments: Any) -> dict:
    """A tool's structured result ({} on an error), a transient failure retried like the
    one-shot solvers do."""
    clean = {key: value for key, value in arguments.items() if value is not None}
    result = await erp.call(tool, clean, draft)
    for attempt in range(1, TOOL_RETRIES + 1):
        if not (result.is_error and result.text.lstrip().startswith("TRANSIENT")):
            break
        await asyncio.sleep(0.2 * attempt)
        result = await erp.call(tool, clean, draft)
    data = result.structured if not result.is_error else None
    if isinstance(data, dict) and set(data) == {"result"}:
        data = data["result"]
    return data if isinstance(data, dict) else {}


async def _dispute(
    erp: ErpClient, draft: TrajectoryDraft, request: Request, accounting: str | None = None
) -> str:
    le = request.legal_entity
    if request.invoice is None:  # the guess: the customer's latest open invoice
        request.invoice = await _latest_open(erp, draft, "customer", request.party, le)
    found = await _call(
        erp, draft, "list_customer_transactions", document_number=request.invoice, legal_entity=le
    )
    items = found.get("items") or []
    if not items:
        return f"I could not find invoice {request.invoice} in {le}; no figures are given."
    invoice = items[0]
    cur = invoice["currency"]
    settled = await _call(
        erp,
        draft,
        "list_settlements",
        party_type="customer",
        voucher=invoice["voucher"],
        legal_entity=le,
    )
    cash = discount = credits = Decimal("0")
    payments: list[tuple[str, Decimal]] = []
    for row in settled.get("items") or []:
        if row.get("debit_voucher") != invoice["voucher"]:
            continue
        taken = Decimal(str(row.get("cash_discount_taken") or 0))
        amount = Decimal(str(row["amount_cur"]))
        discount += taken
        if row.get("credit_txn_type") == "payment":
            cash += amount - taken
            payments.append((row.get("credit_document_number") or "", amount))
        elif row.get("credit_txn_type") == "credit_note":
            credits += amount
    difference = None
    if accounting and accounting != cur and payments:
        difference = await _currency_difference(erp, draft, le, invoice, payments)
    disputes = await _call(
        erp,
        draft,
        "list_disputes",
        account=invoice["customer_account"],
        legal_entity=le,
        status="open",
    )
    lines = [
        f"Invoice {invoice['document_number']} ({le}) was for "
        f"{_money(invoice['amount_cur'], cur)} and {_money(invoice['open_amount_cur'], cur)} of it "
        "is still open. What was applied to it:",
        "",
        f"- payments received: {_money(cash, cur)}",
    ]
    if discount:
        lines.append(f"- cash discount taken: {_money(discount, cur)}")
    if credits:
        lines.append(f"- credit notes applied: {_money(credits, cur)}")
    if difference:
        what = "gain" if difference > 0 else "loss"
        lines.append(
            f"- currency difference on the payments (realized exchange {what}): "
            f"{_money(abs(difference), accounting)}"
        )
    for row in disputes.get("items") or []:
        if row.get("voucher") == invoice["voucher"]:
            lines.append(
                f"- open {row.get('kind')} {row.get('dispute_id')} for "
                f"{_money(row.get('amount', 0), cur)} ({row.get('reason')})"
            )
    return "\n".join(lines)


async def _currency_difference(
    erp: ErpClient,
    draft: TrajectoryDraft,
    le: str | None,
    invoice: dict,
    payments: list[tuple[str, Decimal]],
) -> Decimal | None:
    """What the payments' exchange rates made of the invoice in accounting currency: each
    settled amount times (the payment's rate less the invoice's), summed, to the cent."""
    invoice_rate = Decimal(str(invoice["exchange_rate"]))
    total = Decimal("0")
    for document, amount in payments:
        found = await _call(
            erp, draft, "list_customer_transactions", document_number=document, legal_entity=le
        )
        rows = found.get("items") or []
        if not rows:
            return None  # a payment it cannot read: no figure rather than a wrong one
        total += amount * (Decimal(str(rows[0]["exchange_rate"])) - invoice_rate)
    return total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


async def _latest_open(
    erp: ErpClient, draft: TrajectoryDraft, kind: str, name: str | None, le: str | None
) -> str | None:
    found = await _call(
        erp, draft, "search_parties", query=name or "", party_type=kind, legal_entity=le
    )
    candidates = found.get("candidates") or []
    if not candidates:
        return None
    account = candidates[0]["account"]
    tool = "list_customer_transactions" if kind == "customer" else "list_vendor_transactions"
    rows = await _call(
        erp,
        draft,
        tool,
        account=account,
        legal_entity=le,
        status="open",
        sort_by="txn_date",
        descending=True,
    )
    items = rows.get("items") or []
    return items[0]["document_number"] if items else None


async def _open_position(
    erp: ErpClient, draft: TrajectoryDraft, request: Request, today: dt.date
) -> str:
    """A legal entity's open receivables, payables or net position (the guess: receivables), in
    accounting currency, from the aging of each ledger."""
    side = request.side or "receivables"
    totals: dict[str, tuple[Decimal, str]] = {}
    for party_type in ("customer", "vendor"):
        aging = await _call(
            erp,
            draft,
            "get_aging",
            party_type=party_type,
            legal_entity=request.legal_entity,
            group_by="legal_entity",
        )
        total = (aging.get("totals_acct") or [{}])[0]
        totals[party_type] = (Decimal(str(total.get("balance", 0))), total.get("currency", ""))
    (receivables, currency), (payables, _) = totals["customer"], totals["vendor"]
    value = {"receivables": receivables, "payables": payables}.get(side, receivables - payables)
    what = ""
    if side == "net position":
        what = " (a net receivable)" if value >= 0 else " (a net payable)"
    return (
        f"Open {side} of {request.legal_entity} as of {_long(today)} (accounting currency): "
        f"{_money(abs(value), currency)}{what}."
    )


async def _last_promise(
    erp: ErpClient, draft: TrajectoryDraft, request: Request, today: dt.date
) -> str:
    """The customer's last promise to pay (``docs/dataset-format.md``): the latest "Confirm
    promise to pay" call due by today and not canceled, read page by page."""
    arguments = {"account": request.party, "legal_entity": request.legal_entity}
    found, cursor = [], None
    for _ in range(20):  # a customer's calls fit in a few pages
        page = await _call(
            erp,
            draft,
            "list_collection_activities",
            **arguments,
            activity_type="call",
            due_to=today.isoformat(),
            page_size=500,
            cursor=cursor,
        )
        found += [
            item
            for item in page.get("items") or []
            if item.get("purpose") == PROMISE_PURPOSE and item.get("status") != "canceled"
        ]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    if not found:
        return "No promise to pay is on record."
    last = max(found, key=lambda item: (item["due_date"], item["activity_id"]))
    due = dt.date.fromisoformat(str(last["due_date"])[:10])
    return (
        f"Last promise to pay: activity {last['activity_id']}, a call due {_long(due)} "
        f"({due.isoformat()}), {last['status']}."
    )


async def _vendor_payment(erp: ErpClient, draft: TrajectoryDraft, request: Request) -> str:
    le = request.legal_entity
    if request.invoice is None:  # the guess: the vendor's latest open invoice
        request.invoice = await _latest_open(erp, draft, "vendor", request.party, le)
    if request.invoice is None:
        return "I could not find an open invoice for you; no figures are given."
    found = await _call(
        erp, draft, "get_vendor_invoice", invoice_id=request.invoice, legal_entity=le
    )
    invoice, txn = found.get("invoice") or {}, found.get("ledger_transaction") or {}
    if not invoice:
        return f"I could not find your invoice {request.invoice} in {le}; no figures are given."
    cur = txn.get("currency") or invoice.get("currency")
    due = dt.date.fromisoformat(str(invoice["due_date"])[:10])
    lines = [
        f"Your invoice {invoice['vendor_invoice_number']} is due on {_long(due)}; "
        f"{_money(txn.get('open_amount_cur', invoice['amount']), cur)} of it is still open."
    ]
    if txn.get("voucher"):
        settled = await _call(
            erp,
            draft,
            "list_settlements",
            party_type="vendor",
            voucher=txn["voucher"],
            legal_entity=le,
        )
        paid = sum(
            (
                Decimal(str(r["amount_cur"])) - Decimal(str(r.get("cash_discount_taken") or 0))
                for r in settled.get("items") or []
                if r.get("debit_voucher") == txn["voucher"]
            ),
            Decimal("0"),
        )
        if paid:
            lines.append(f"We have paid {_money(paid, cur)} on it so far.")
    vendor = (
        await _call(erp, draft, "get_vendor", account=invoice["vendor_account"], legal_entity=le)
    ).get("vendor") or {}
    if vendor.get("payment_hold"):
        lines.append(
            f"Payments to you are on hold: {vendor.get('hold_reason') or 'no reason given'}."
        )
    else:
        lines.append("Your account is not on payment hold.")
    return " ".join(lines)


@harness("guess")
def create_guess(options: HarnessOptions) -> ConversationAgent:
    return ConversationAgent(options, ask=False)
