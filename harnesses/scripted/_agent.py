"""The scripted agent: which solver answers a question, and the agent itself."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from dataclasses import dataclass
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
from harnesses.scripted.aged_balance import (
    aging_customer,
    aging_top_customers,
    aging_totals_entity,
    balance_all_entities,
    coming_due_customer,
    past_due_total_entity,
    top_past_due_group,
)
from harnesses.scripted.ap_invoices import (
    ap_due_in_window,
    ap_posted_on_date,
    invoices_by_status_entity,
    latest_invoice_match_vendor,
    pending_approval_vendor,
)
from harnesses.scripted.ap_payments import (
    ap_obligation_next_days,
    payment_accounts_methods,
    payment_journal_total,
    proposal_vendors_on_date,
    vendor_payments_range,
)
from harnesses.scripted.ap_purchase_orders import (
    open_pos_vendor,
)
from harnesses.scripted.cash_collections import (
    collected_fiscal_year,
)
from harnesses.scripted.cash_discounts import (
    discounts_expiring_entity,
    discounts_taken_customer,
    open_discount_invoices_customer,
)
from harnesses.scripted.collections import (
    collections_agent_customer,
    last_letter_customer,
    letters_customer,
    unassigned_pool_count,
)
from harnesses.scripted.collections_tasks import (
    agent_worklist,
    open_activities_customer,
    open_cases_customer,
    open_tasks_due_entity,
)
from harnesses.scripted.credit_limit import (
    credit_hold_list,
    credit_limit,
    credit_utilization,
    over_limit_group_top,
)
from harnesses.scripted.credit_notes import (
    unapplied_credit_notes_customer,
)
from harnesses.scripted.credit_rating import (
    credit_rating,
    rating_count_group,
)
from harnesses.scripted.customer_setup import (
    contact_customer,
    customers_by_currency,
    customers_in_group,
    method_of_payment_customer,
    payment_terms_customer,
)
from harnesses.scripted.discounts import (
    open_deductions_customer,
)
from harnesses.scripted.dispute import (
    open_disputes_customer,
)
from harnesses.scripted.invoicing_history import (
    invoice_count_customer,
    invoices_in_range_customer,
    largest_invoice_entity,
    top_invoiced_customer_entity,
)
from harnesses.scripted.other_ap_documents import (
    vendor_credit_notes,
    vendor_debit_notes,
    vendor_spend_fiscal_year,
)
from harnesses.scripted.outstanding_balance import (
    customer_balance,
    unpaid_invoices_customer,
)
from harnesses.scripted.payment_history import (
    largest_payment,
    last_payment,
    payments_in_range,
    top_payments,
)
from harnesses.scripted.sales_orders import (
    do_not_process_orders,
    largest_orders_customer,
    most_open_orders_entity,
    open_orders_customer,
    order_count_customer,
    orders_by_release_status,
    return_orders_entity,
)
from harnesses.scripted.vendor_balance import (
    ap_by_currency_entity,
    ap_by_group_entity,
    ap_due_next_month_top,
    ap_group_balance,
    ap_overdue_entity,
    vendor_balance,
)
from harnesses.scripted.vendors import (
    payment_terms_vendor,
    vendor_cash_discount,
    vendors_created_in_month,
    vendors_on_hold,
    vendors_terms_longer_than,
)
from ledgerbench.dataset import TaskType

# --------------------------------------------------------------------------------------------------
# Intent rules: the first rule whose patterns all match wins.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    name: str
    handler: Handler
    all_of: tuple[str, ...]
    none_of: tuple[str, ...] = ()

    def matches(self, question: Question) -> bool:
        return all(re.search(p, question.lower) for p in self.all_of) and not any(
            re.search(p, question.lower) for p in self.none_of
        )


def _i(name: str, handler: Handler, *all_of: str, none_of: tuple[str, ...] = ()) -> Intent:
    return Intent(name, handler, all_of, none_of)


PARTY_REF = r"(customer account|vendor account|\([a-z]+-\d+\))"

INTENTS: tuple[Intent, ...] = (
    # AP first where wording is specific
    _i("payment_journal_total", payment_journal_total, r"journal \S*\d"),
    _i("proposal_vendors_on_date", proposal_vendors_on_date, r"payment proposal"),
    _i(
        "payment_accounts_methods",
        payment_accounts_methods,
        r"methods? of payment|payment methods",
        r"payment accounts|ledger accounts|post to",
    ),
    _i("latest_invoice_match_vendor", latest_invoice_match_vendor, r"three-way|3-way|match"),
    _i(
        "pending_approval_vendor",
        pending_approval_vendor,
        r"pending approval|waiting for approval",
        r"invoices (?:are )?pending approval for|from|invoices from",
        none_of=(r"how many vendor invoices", r"total value"),
    ),
    _i(
        "invoices_by_status_entity",
        invoices_by_status_entity,
        r"vendor invoices",
        r"how many|total value",
        r"pending approval|approved|unposted|posted|register",
        none_of=(r"posted on",),
    ),
    _i("ap_posted_on_date", ap_posted_on_date, r"posted on"),
    _i("ap_overdue_vendor_invoices", ap_overdue_entity, r"vendor invoices (?:is|are) past due"),
    _i("ap_due_in_window", ap_due_in_window, r"vendor invoices", r"due"),
    _i(
        "ap_obligation_next_days",
        ap_obligation_next_days,
        r"payment obligation|falls due|vendor invoices falls",
    ),
    _i(
        "ap_due_next_month_top",
        ap_due_next_month_top,
        r"ap balances due|vendors have the most open invoice value|due next month",
    ),
    _i("ap_by_group_entity", ap_by_group_entity, r"by vendor group"),
    _i("ap_group_balance", ap_group_balance, r"vendor group|vendors of group"),
    _i(
        "ap_by_currency_entity",
        ap_by_currency_entity,
        r"by (?:transaction )?currency|vendor balance .*(?:usd|eur|gbp|cad)",
    ),
    _i(
        "ap_overdue_entity",
        ap_overdue_entity,
        r"overdue ap|payables is past due|ap balance.*overdue|past due.*payables",
    ),
    _i("vendors_on_hold", vendors_on_hold, r"vendors", r"payment hold|blocked for payment"),
    _i("vendors_created_in_month", vendors_created_in_month, r"vendors", r"created|set up"),
    _i("vendors_terms_longer_than", vendors_terms_longer_than, r"vendors", r"longer than|beyond"),
    _i(
        "vendor_cash_discount",
        vendor_cash_discount,
        r"early payment discount|cash discount from|discount percentage|for paying early",
    ),
    _i("vendor_debit_notes", vendor_debit_notes, r"debit notes?"),
    _i(
        "vendor_credit_notes",
        vendor_credit_notes,
        r"credit notes? (?:have been )?received|issue us any credit notes",
    ),
    _i("vendor_spend_fiscal_year", vendor_spend_fiscal_year, r"spend with|been invoiced by"),
    _i("open_pos_vendor", open_pos_vendor, r"purchase orders?"),
    _i("vendor_payments_range", vendor_payments_range, r"payment history|how much did we pay"),
    _i(
        "payment_terms_vendor",
        payment_terms_vendor,
        r"terms",
        r"vendor account|payment terms for|terms of payment do we have with",
    ),
    _i("vendor_balance", vendor_balance, r"ap balance for|owed to|how much do we owe"),
    # AR
    _i("top_past_due_group", top_past_due_group, r"group", r"past due|overdue"),
    _i(
        "over_limit_group_top",
        over_limit_group_top,
        r"over their credit limit|exceeding their credit limit",
    ),
    _i("rating_count_group", rating_count_group, r"group", r"rated|rating"),
    _i("agent_worklist", agent_worklist, r"worklist|activities due on"),
    _i(
        "open_tasks_due_entity",
        open_tasks_due_entity,
        r"collections tasks",
        r"due (?:between|from)",
    ),
    _i(
        "open_activities_customer",
        open_activities_customer,
        r"collections (?:activities|tasks)|open activities",
    ),
    _i("open_cases_customer", open_cases_customer, r"collections cases?|collections case"),
    _i("collections_agent_customer", collections_agent_customer, r"collections agent"),
    _i("unassigned_pool_count", unassigned_pool_count, r"collections pool"),
    _i("last_letter_customer", last_letter_customer, r"last collection letter|letter level"),
    _i("letters_customer", letters_customer, r"collection letters"),
    _i(
        "discounts_expiring_entity",
        discounts_expiring_entity,
        r"cash discount (?:expiring|runs out)|discount runs out",
    ),
    _i(
        "discounts_taken_customer",
        discounts_taken_customer,
        r"discount window|take any cash discounts",
    ),
    _i("open_discount_invoices_customer", open_discount_invoices_customer, r"cash discount"),
    _i("open_deductions_customer", open_deductions_customer, r"deductions?"),
    _i("open_disputes_customer", open_disputes_customer, r"disput"),
    _i("unapplied_credit_notes_customer", unapplied_credit_notes_customer, r"credit notes?"),
    _i("do_not_process_orders", do_not_process_orders, r"do.not.process"),
    _i(
        "most_open_orders_entity",
        most_open_orders_entity,
        r"most open sales orders|largest number of open sales orders",
    ),
    _i(
        "orders_by_release_status",
        orders_by_release_status,
        r"release status|[\"']released[\"'] status",
    ),
    _i("return_orders_entity", return_orders_entity, r"return orders|returned"),
    _i(
        "largest_orders_customer",
        largest_orders_customer,
        r"sales orders?",
        r"largest|top \d|top (?:three|five|ten)|by amount",
    ),
    _i("open_orders_customer", open_orders_customer, r"sales orders?", r"open"),
    _i("order_count_customer", order_count_customer, r"sales orders?"),
    _i("credit_rating", credit_rating, r"credit rating|rated for credit"),
    _i("credit_hold_list", credit_hold_list, r"credit hold"),
    _i("credit_utilization", credit_utilization, r"credit limit", r"percent|utili|used"),
    _i("credit_limit", credit_limit, r"credit limit|available credit"),
    _i("customers_in_group", customers_in_group, r"customer group|belong to"),
    _i("customers_by_currency", customers_by_currency, r"customers", r"currency|billed in"),
    _i("method_of_payment_customer", method_of_payment_customer, r"method of payment"),
    _i("payment_terms_customer", payment_terms_customer, r"terms"),
    _i("contact_customer", contact_customer, r"phone|contact"),
    _i("collected_fiscal_year", collected_fiscal_year, r"collected"),
    _i("last_payment", last_payment, r"last pay|most recent payment"),
    _i("largest_payment", largest_payment, r"largest payment(?!s)|biggest single payment"),
    _i("top_payments", top_payments, r"payments", r"top|largest"),
    _i(
        "payments_in_range",
        payments_in_range,
        r"payments?",
        r"between|from .* to|in \d{4}\b|payments (?:has|have)",
    ),
    _i(
        "largest_invoice_entity",
        largest_invoice_entity,
        r"largest amount|biggest customer invoice|largest invoice",
    ),
    _i(
        "top_invoiced_customer_entity",
        top_invoiced_customer_entity,
        r"highest total invoiced|top customer by invoiced",
    ),
    _i("coming_due_customer", coming_due_customer, r"coming due|falling due"),
    _i(
        "invoices_in_range_customer", invoices_in_range_customer, r"invoices", r"between|from .* to"
    ),
    _i(
        "invoice_count_customer",
        invoice_count_customer,
        r"number of invoices|how many invoices|invoices (?:generated|issued) (?:for|to)",
    ),
    _i("unpaid_invoices_customer", unpaid_invoices_customer, r"unpaid invoices|open invoices"),
    _i("aging_totals_entity", aging_totals_entity, r"aging bucket|aging summary for all|by aging"),
    _i(
        "past_due_total_entity",
        past_due_total_entity,
        r"past due|overdue|\d+\+ days",
        r"total|how much customer ar|how much in customer invoices",
        none_of=(PARTY_REF,),
    ),
    _i(
        "aging_top_customers",
        aging_top_customers,
        r"top \d+ customers|top (?:five|ten) customers",
        r"outstanding|balance",
    ),
    _i("balance_all_entities", balance_all_entities, r"all legal entities"),
    _i(
        "customer_balance",
        customer_balance,
        r"unpaid customer (?:balance|receivables)|outstanding receivables balance|owe us|"
        r"outstanding balance|total balance",
    ),
    _i(
        "aging_customer",
        aging_customer,
        r"aged balance|aging|ageing|overdue receivables|past due|balance",
    ),
)


def match_intent(question: Question) -> Intent | None:
    return next((intent for intent in INTENTS if intent.matches(question)), None)


def understand(
    text: str, today: dt.date, legal_entities: list[str], default_le: str | None
) -> tuple[Question, Intent | None]:
    """The question and its solver: by the generator's grammar when the text is one of its
    phrasings, else by the keyword rules (published and hand-written questions)."""
    reading = read(text)
    if reading is not None:
        by_name = {intent.name: intent for intent in INTENTS}
        question = question_from(text, reading, today, legal_entities, default_le)
        return question, by_name[reading.template]
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
