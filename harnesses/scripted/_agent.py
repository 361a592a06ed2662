"""The scripted agent: which solver answers a question, and the agent itself."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib
import json
import pkgutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
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
from ledgerbench_core.dataset import TaskType

# --------------------------------------------------------------------------------------------------
# Intent rules: the first rule whose patterns all match wins.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    """A question kind and its solver."""

    name: str
    handler: Handler

    def matches(self, question: Question) -> bool:
        return self.handler.rule.matches(question)  # type: ignore[attr-defined]


# The keyword rules (each solver's ``recognised_by``) for questions outside the generator's grammar
# are tried in this order; the first that matches wins.
PRECEDENCE = (
    # AP first where wording is specific
    "payment_journal_total",
    "proposal_vendors_on_date",
    "payment_accounts_methods",
    "latest_invoice_match_vendor",
    "pending_approval_vendor",
    "invoices_by_status_entity",
    "ap_posted_on_date",
    "ap_overdue_vendor_invoices",
    "ap_due_in_window",
    "ap_obligation_next_days",
    "ap_due_next_month_top",
    "ap_by_group_entity",
    "ap_group_balance",
    "ap_by_currency_entity",
    "ap_overdue_entity",
    "vendors_on_hold",
    "vendors_created_in_month",
    "vendors_terms_longer_than",
    "vendor_cash_discount",
    "vendor_debit_notes",
    "vendor_credit_notes",
    "vendor_spend_fiscal_year",
    "open_pos_vendor",
    "vendor_payments_range",
    "payment_terms_vendor",
    "vendor_balance",
    # AR
    "top_past_due_group",
    "over_limit_group_top",
    "rating_count_group",
    "agent_worklist",
    "open_tasks_due_entity",
    "open_activities_customer",
    "open_cases_customer",
    "collections_agent_customer",
    "unassigned_pool_count",
    "last_letter_customer",
    "letters_customer",
    "discounts_expiring_entity",
    "discounts_taken_customer",
    "open_discount_invoices_customer",
    "open_deductions_customer",
    "open_disputes_customer",
    "unapplied_credit_notes_customer",
    "do_not_process_orders",
    "most_open_orders_entity",
    "orders_by_release_status",
    "return_orders_entity",
    "largest_orders_customer",
    "open_orders_customer",
    "order_count_customer",
    "credit_rating",
    "credit_hold_list",
    "credit_utilization",
    "credit_limit",
    "customers_in_group",
    "customers_by_currency",
    "method_of_payment_customer",
    "payment_terms_customer",
    "contact_customer",
    "collected_fiscal_year",
    "last_payment",
    "largest_payment",
    "top_payments",
    "payments_in_range",
    "largest_invoice_entity",
    "top_invoiced_customer_entity",
    "coming_due_customer",
    "invoices_in_range_customer",
    "invoice_count_customer",
    "unpaid_invoices_customer",
    "aging_totals_entity",
    "past_due_total_entity",
    "aging_top_customers",
    "balance_all_entities",
    "customer_balance",
    "aging_customer",
)


@cache
def solvers() -> dict[str, Handler]:
    """Every solver by question kind (intent name): the names in the ``__all__`` of each scenario
    module of this package (every module whose name does not start with an underscore)."""
    found: dict[str, Handler] = {}
    for module_info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not module_info.name.startswith("_"):
            module = importlib.import_module(f"{__package__}.{module_info.name}")
            found.update({name: getattr(module, name) for name in module.__all__})
    return found


@cache
def intents() -> tuple[Intent, ...]:
    """The keyword rules in the order they are tried."""
    by_name = solvers()
    return tuple(Intent(name, by_name[name]) for name in PRECEDENCE)


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
    "news), and this run gave the agent no research tools (no research world), while this "
    "rule-based agent has no web access and no language model. I did not look anything up, so I "
    "give no figures rather than guess."
)

ERP_INFO_MISSING = (
    "I could not answer: the ERP's `erp_info` tool did not tell me the ERP's date (today), so "
    "every relative date and aging bucket would be guessed. No figures are given rather than "
    "guessed."
)


class ScriptedAgent:
    """Rule-based obligations agent; see the module docstring."""

    name = "scripted"
    conversational = True
    """It converses on operations items (``harnesses.scripted._conversation``)."""
    model_free = True
    """It calls no model: the cost of each answer is a known 0.0."""
    research_modes = ("world", "web", "none")
    research_note = (
        "it reads the research world through its tools and has no language model to read "
        "documents in a prompt (golden is for model harnesses)"
    )

    ERP_TOOLS = (
        "erp_info", "search_parties", "get_customer", "get_vendor", "list_reference_data",
        "get_aging", "list_customer_transactions", "list_vendor_transactions", "list_settlements",
        "list_disputes", "list_cash_discounts", "list_sales_orders", "list_purchase_orders",
        "list_vendor_invoices", "list_payment_journals", "get_payment_journal",
        "get_vendor_spend", "list_collection_letters", "list_collection_activities",
        "list_collection_cases", "query_entity_set",
    )  # fmt: skip
    """The ERP tools its rules call."""
    WORLD_TOOLS = ("world__world_info", "world__search", "world__fetch", "world__company",
                   "world__prices")  # fmt: skip
    """The research world's tools its research rules call (model-facing names)."""

    def required_tools(self, offered: tuple[str, ...]) -> tuple[str, ...]:
        """The tools it cannot answer without (``--tools`` must keep them): the ERP's, and the
        world's when the run serves a world."""
        world = any(name.startswith("world__") for name in offered)
        return self.ERP_TOOLS + (self.WORLD_TOOLS if world else ())

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
        if task.task_type == TaskType.operations:
            from harnesses.scripted._conversation import ConversationAgent

            return await ConversationAgent(self.options).run(task, env, draft)
        # Transcript: the question, the tool calls as they happen, the answer (no model calls).
        draft.add_message("user", task.query)
        outcome = await self._answer_question(task, env, draft)
        draft.add_message("assistant", outcome.answer)
        return outcome

    async def _answer_question(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        if task.task_type != TaskType.obligations:
            answer = await self._answer_research(task, env, draft)
            draft.set_answer(answer)
            return AgentOutcome(answer=answer)
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

    async def _answer_research(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> str:
        """A research-world question through the world's tools (and the ERP's for accounts)."""
        if env.world is None:
            return WEB_NEEDED
        from harnesses.scripted._research import answer_research

        async with (
            ErpClient(env.world, server_label="world", transport=self.transport) as world,
            ErpClient(env.erp, transport=self.transport) as erp,
        ):
            info = await _erp_info(world, draft, "world_info")
            if not info.get("today"):
                return ERP_INFO_MISSING.replace("ERP's `erp_info`", "world's `world_info`")
            today = dt.date.fromisoformat(str(info["today"])[:10])
            answer = await answer_research(world, erp, draft, task.query, today)
            draft.turns += 1
        return answer if answer is not None else NOT_UNDERSTOOD


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


async def _erp_info(
    erp: ErpClient, draft: TrajectoryDraft, tool: str = "erp_info"
) -> dict[str, Any]:
    result = await erp.call(tool, {}, draft)
    for attempt in range(1, TOOL_RETRIES + 1):
        if not result.is_error:
            break
        await asyncio.sleep(0.2 * attempt)
        result = await erp.call(tool, {}, draft)
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


# The class itself is registered, so what it declares (options, research_modes) is read from
# the registry before any run (ledgerbench checks --research against it).
harness(
    "scripted", options={"transport": "http (default) or stdio: how the agent reaches the ERP"}
)(ScriptedAgent)


def create_scripted(options: HarnessOptions) -> ScriptedAgent:
    return ScriptedAgent(options)
