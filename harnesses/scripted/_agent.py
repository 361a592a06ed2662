"""The scripted agent: which solver answers a question, and the agent itself."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from dataclasses import dataclass
from functools import cache
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
from harnesses.scripted import (
    aged_balance,
    ap_invoices,
    ap_payments,
    ap_purchase_orders,
    cash_collections,
    cash_discounts,
    collections,
    collections_tasks,
    credit_limit,
    credit_notes,
    credit_rating,
    customer_setup,
    discounts,
    dispute,
    invoicing_history,
    other_ap_documents,
    outstanding_balance,
    payment_history,
    sales_orders,
    vendor_balance,
    vendors,
)
from harnesses.scripted._base import (
    TOOL_RETRIES,
    Context,
    Handler,
    PartyNotFound,
    Question,
    ToolFailure,
    where,
)
from harnesses.scripted._grammar import question_from, read
from ledgerbench.dataset import TaskType

# --------------------------------------------------------------------------------------------------
# Intent rules: the first rule whose patterns all match wins.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    name: str
    handler: Handler
    all_of: tuple[str, ...] = ()
    none_of: tuple[str, ...] = ()

    def matches(self, question: Question) -> bool:
        return all(re.search(p, question.lower) for p in self.all_of) and not any(
            re.search(p, question.lower) for p in self.none_of
        )


SOLVER_MODULES = (
    aged_balance,
    ap_invoices,
    ap_payments,
    ap_purchase_orders,
    cash_collections,
    cash_discounts,
    collections,
    collections_tasks,
    credit_limit,
    credit_notes,
    credit_rating,
    customer_setup,
    discounts,
    dispute,
    invoicing_history,
    other_ap_documents,
    outstanding_balance,
    payment_history,
    sales_orders,
    vendor_balance,
    vendors,
)
"""One module per scenario; each names its solvers (one per question kind) in ``__all__``."""

PARTY_REF = r"(customer account|vendor account|\([a-z]+-\d+\))"

# Keyword rules for questions outside the generator's grammar. Intent name -> patterns that must all
# match the lower-cased question; the first rule that matches wins, so the order matters.
RULES: dict[str, tuple[str, ...]] = {
    # AP first where wording is specific
    "payment_journal_total": (r"journal \S*\d",),
    "proposal_vendors_on_date": (r"payment proposal",),
    "payment_accounts_methods": (
        r"methods? of payment|payment methods",
        r"payment accounts|ledger accounts|post to",
    ),
    "latest_invoice_match_vendor": (r"three-way|3-way|match",),
    "pending_approval_vendor": (
        r"pending approval|waiting for approval",
        r"invoices (?:are )?pending approval for|from|invoices from",
    ),
    "invoices_by_status_entity": (
        r"vendor invoices",
        r"how many|total value",
        r"pending approval|approved|unposted|posted|register",
    ),
    "ap_posted_on_date": (r"posted on",),
    "ap_overdue_vendor_invoices": (r"vendor invoices (?:is|are) past due",),
    "ap_due_in_window": (r"vendor invoices", r"due"),
    "ap_obligation_next_days": (r"payment obligation|falls due|vendor invoices falls",),
    "ap_due_next_month_top": (
        r"ap balances due|vendors have the most open invoice value|due next month",
    ),
    "ap_by_group_entity": (r"by vendor group",),
    "ap_group_balance": (r"vendor group|vendors of group",),
    "ap_by_currency_entity": (
        r"by (?:transaction )?currency|vendor balance .*(?:usd|eur|gbp|cad)",
    ),
    "ap_overdue_entity": (
        r"overdue ap|payables is past due|ap balance.*overdue|past due.*payables",
    ),
    "vendors_on_hold": (r"vendors", r"payment hold|blocked for payment"),
    "vendors_created_in_month": (r"vendors", r"created|set up"),
    "vendors_terms_longer_than": (r"vendors", r"longer than|beyond"),
    "vendor_cash_discount": (
        r"early payment discount|cash discount from|discount percentage|for paying early",
    ),
    "vendor_debit_notes": (r"debit notes?",),
    "vendor_credit_notes": (r"credit notes? (?:have been )?received|issue us any credit notes",),
    "vendor_spend_fiscal_year": (r"spend with|been invoiced by",),
    "open_pos_vendor": (r"purchase orders?",),
    "vendor_payments_range": (r"payment history|how much did we pay",),
    "payment_terms_vendor": (
        r"terms",
        r"vendor account|payment terms for|terms of payment do we have with",
    ),
    "vendor_balance": (r"ap balance for|owed to|how much do we owe",),
    # AR
    "top_past_due_group": (r"group", r"past due|overdue"),
    "over_limit_group_top": (r"over their credit limit|exceeding their credit limit",),
    "rating_count_group": (r"group", r"rated|rating"),
    "agent_worklist": (r"worklist|activities due on",),
    "open_tasks_due_entity": (r"collections tasks", r"due (?:between|from)"),
    "open_activities_customer": (r"collections (?:activities|tasks)|open activities",),
    "open_cases_customer": (r"collections cases?|collections case",),
    "collections_agent_customer": (r"collections agent",),
    "unassigned_pool_count": (r"collections pool",),
    "last_letter_customer": (r"last collection letter|letter level",),
    "letters_customer": (r"collection letters",),
    "discounts_expiring_entity": (r"cash discount (?:expiring|runs out)|discount runs out",),
    "discounts_taken_customer": (r"discount window|take any cash discounts",),
    "open_discount_invoices_customer": (r"cash discount",),
    "open_deductions_customer": (r"deductions?",),
    "open_disputes_customer": (r"disput",),
    "unapplied_credit_notes_customer": (r"credit notes?",),
    "do_not_process_orders": (r"do.not.process",),
    "most_open_orders_entity": (r"most open sales orders|largest number of open sales orders",),
    "orders_by_release_status": (r"release status|[\"']released[\"'] status",),
    "return_orders_entity": (r"return orders|returned",),
    "largest_orders_customer": (
        r"sales orders?",
        r"largest|top \d|top (?:three|five|ten)|by amount",
    ),
    "open_orders_customer": (r"sales orders?", r"open"),
    "order_count_customer": (r"sales orders?",),
    "credit_rating": (r"credit rating|rated for credit",),
    "credit_hold_list": (r"credit hold",),
    "credit_utilization": (r"credit limit", r"percent|utili|used"),
    "credit_limit": (r"credit limit|available credit",),
    "customers_in_group": (r"customer group|belong to",),
    "customers_by_currency": (r"customers", r"currency|billed in"),
    "method_of_payment_customer": (r"method of payment",),
    "payment_terms_customer": (r"terms",),
    "contact_customer": (r"phone|contact",),
    "collected_fiscal_year": (r"collected",),
    "last_payment": (r"last pay|most recent payment",),
    "largest_payment": (r"largest payment(?!s)|biggest single payment",),
    "top_payments": (r"payments", r"top|largest"),
    "payments_in_range": (r"payments?", r"between|from .* to|in \d{4}\b|payments (?:has|have)"),
    "largest_invoice_entity": (r"largest amount|biggest customer invoice|largest invoice",),
    "top_invoiced_customer_entity": (r"highest total invoiced|top customer by invoiced",),
    "coming_due_customer": (r"coming due|falling due",),
    "invoices_in_range_customer": (r"invoices", r"between|from .* to"),
    "invoice_count_customer": (
        r"number of invoices|how many invoices|invoices (?:generated|issued) (?:for|to)",
    ),
    "unpaid_invoices_customer": (r"unpaid invoices|open invoices",),
    "aging_totals_entity": (r"aging bucket|aging summary for all|by aging",),
    "past_due_total_entity": (
        r"past due|overdue|\d+\+ days",
        r"total|how much customer ar|how much in customer invoices",
    ),
    "aging_top_customers": (
        r"top \d+ customers|top (?:five|ten) customers",
        r"outstanding|balance",
    ),
    "balance_all_entities": (r"all legal entities",),
    "customer_balance": (
        r"unpaid customer (?:balance|receivables)|outstanding receivables balance|owe us|"
        r"outstanding balance|total balance",
    ),
    "aging_customer": (r"aged balance|aging|ageing|overdue receivables|past due|balance",),
}
# Intent name -> patterns that veto its rule.
UNLESS: dict[str, tuple[str, ...]] = {
    "pending_approval_vendor": (r"how many vendor invoices", r"total value"),
    "invoices_by_status_entity": (r"posted on",),
    "past_due_total_entity": (PARTY_REF,),
}
# Rule name -> the solver it uses, where the two differ.
SOLVED_BY = {"ap_overdue_vendor_invoices": "ap_overdue_entity"}


@cache
def solvers() -> dict[str, Handler]:
    """Every solver by question kind (intent name)."""
    return {name: getattr(module, name) for module in SOLVER_MODULES for name in module.__all__}


@cache
def intents() -> tuple[Intent, ...]:
    """The keyword rules in the order they are tried."""
    by_name = solvers()
    return tuple(
        Intent(name, by_name[SOLVED_BY.get(name, name)], all_of, UNLESS.get(name, ()))
        for name, all_of in RULES.items()
    )


def match_intent(question: Question) -> Intent | None:
    return next((intent for intent in intents() if intent.matches(question)), None)


def understand(
    text: str, today: dt.date, legal_entities: list[str], default_le: str | None
) -> tuple[Question, Intent | None]:
    """The question and its solver: by the generator's grammar when the text is one of its
    phrasings, else by the keyword rules (published and hand-written questions)."""
    reading = read(text)
    if reading is not None:
        question = question_from(text, reading, today, legal_entities, default_le)
        return question, Intent(reading.template, solvers()[reading.template])
    question = Question.parse(text, legal_entities)
    return question, match_intent(question)


# --------------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------------

NOT_UNDERSTOOD = (
    "I could not work out what this question asks for, so I did not query the ERP and cannot give "
    "an answer. I am a rule-based agent that recognises common accounts-receivable and "
    "accounts-payable requests (balances and aging, credit limits, customer and vendor setup, "
    "payments, invoices, sales and purchase orders, collections, disputes and cash discounts). "
    "Please rephrase the question naming the customer or vendor, the legal entity and the date."
)
WEB_NEEDED = (
    "I cannot answer this request: it needs public-company research (filings, market data and "
    "news from the web), and this agent is a rule-based ERP agent with no web access and no "
    "language model. I did not look anything up, so I give no figures rather than guess."
)

ERP_INFO_MISSING = (
    "I could not answer: the ERP's `erp_info` tool did not tell me the ERP's date (today), so "
    "every relative date and aging bucket would be guessed. No figures are given rather than "
    "guessed."
)


class ScriptedAgent:
    """Rule-based obligations agent; see the module docstring."""

    name = "scripted"

    def __init__(self, options: HarnessOptions | None = None) -> None:
        self.options = options or HarnessOptions()
        self.model = None
        self.transport = self.options.extra.get("transport", "http")
        if self.transport not in ("http", "stdio"):
            raise ValueError(f"--harness-opt transport={self.transport}: use http or stdio")

    async def aclose(self) -> None:
        return None

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        # Transcript: the question, the tool calls as they happen, the answer (no model calls).
        draft.add_message("user", task.query)
        outcome = await self._answer_question(task, env, draft)
        draft.add_message("assistant", outcome.answer)
        return outcome

    async def _answer_question(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        if task.task_type != TaskType.obligations:
            draft.set_answer(WEB_NEEDED)
            return AgentOutcome(answer=WEB_NEEDED)
        async with ErpClient(env.erp, transport=self.transport) as erp:
            info = await _erp_info(erp, draft)
            entities = {le["code"]: le for le in info.get("legal_entities", [])}
            if not info.get("today"):
                # Never fall back to the wall clock: every relative date would silently shift.
                draft.set_answer(ERP_INFO_MISSING)
                return AgentOutcome(answer=ERP_INFO_MISSING)
            today = dt.date.fromisoformat(str(info["today"])[:10])
            question, intent = understand(
                task.query, today, list(entities), info.get("default_legal_entity")
            )
            if intent is None:
                draft.set_answer(NOT_UNDERSTOOD)
                return AgentOutcome(answer=NOT_UNDERSTOOD)
            ctx = Context(
                erp, draft, question, today, entities, url_pattern=info.get("record_url_pattern")
            )
            draft.extra["intent"] = intent.name
            answer = await _answer(ctx, intent)
            draft.turns += 1
        draft.set_answer(answer)
        return AgentOutcome(answer=answer)


async def _answer(ctx: Context, intent: Intent) -> str:
    try:
        return await intent.handler(ctx)
    except PartyNotFound as missing:
        scope = where(ctx)
        return (
            f"I could not find any {missing.party_type} matching '{missing.reference}' {scope}: "
            "`search_parties` returned no confident match, so there is no such record to report "
            "on and I give no figures."
        )
    except ToolFailure as failure:
        return (
            f"I could not answer: the ERP tool `{failure.tool}` failed ({_short(failure.message)})."
            " No figures are given rather than guessed."
        )


async def _erp_info(erp: ErpClient, draft: TrajectoryDraft) -> dict[str, Any]:
    result = await erp.call("erp_info", {}, draft)
    for attempt in range(1, TOOL_RETRIES + 1):
        if not result.is_error:
            break
        await asyncio.sleep(0.2 * attempt)
        result = await erp.call("erp_info", {}, draft)
    data = result.structured
    if isinstance(data, dict) and set(data) == {"result"}:
        data = data["result"]
    if not isinstance(data, dict):
        try:
            data = json.loads(result.text)
        except json.JSONDecodeError:
            data = {}
    return data


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@harness("scripted")
def create_scripted(options: HarnessOptions) -> ScriptedAgent:
    return ScriptedAgent(options)
