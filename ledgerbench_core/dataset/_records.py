"""The dataset format (YAML on disk), defined once.

A dataset file is a mapping with ``header`` (a :class:`DatasetHeader`) and ``items`` (a list of
:class:`Question`). The published FORCE-Bench list format is read by the loader and converted into
these models.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DATASET_FORMAT_VERSION = 3
"""2: research keys (unit, scale, period, basis, subject and gold documents of expected facts;
the world snapshot of the header). 3: ``operations`` items (conversations with a simulated user,
the ``conversation`` block) and analyst items (a question's ``asks``, each fact's ``ask`` and
``dealbreaker``, ``ratio`` facts). Version-1 and version-2 files read unchanged."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class TaskType(StrEnum):
    obligations = "obligations"
    entity_performance = "entity_performance"
    business_brief = "business_brief"
    operations = "operations"
    """A conversation with a simulated user (``Question.conversation``), keyed from the ERP."""


class Dimension(StrEnum):
    accuracy = "accuracy"
    citations = "citations"
    clarity = "clarity"
    depth = "depth"
    groundedness = "groundedness"
    recency = "recency"
    relevance = "relevance"
    structure = "structure"


class Assertion(_Strict):
    id: str
    """Stable id, e.g. ``citations.erp_link``; unique within its dimension for one item."""
    text: str
    """The checkable statement the judge scores."""
    level: Literal["critical", "important", "minor"] = "critical"
    """How much the statement matters (recorded; scoring weights all levels equally)."""


ExpectedKind = Literal[
    "amount",
    "count",
    "id",
    "name",
    "date",
    "text",
    "percent",
    "top_n",
    "no_records",
    "boolean",
    "not_disclosed",
    "ratio",
]


class Money(_Strict):
    """An amount in one currency."""

    value: float
    currency: str
    """ISO 4217 code, e.g. ``USD``."""


LedgerSide = Literal["debit", "credit"]


class ExpectedFact(_Strict):
    """A fact a program can check in an answer.

    ``currency``, ``side``, ``equivalents`` and ``complete`` came with the rules of issue 25;
    files written before them load unchanged (the defaults check nothing more than before)."""

    kind: ExpectedKind
    """amount (money, any common format), count, id (an account or document id), name, date,
    text (a phrase), percent, top_n (an ordered list of ids or names), no_records (the answer must
    say nothing was found), boolean (yes/no), not_disclosed (the answer must say the figure is not
    disclosed or not yet reported: ``value`` says which), ratio (a multiple such as net debt over
    operating income, written ``2.35x`` or ``2.35 times``)."""
    field: str
    """What the value is, e.g. ``balance``, ``customer_account``, ``overdue_invoices``."""
    value: Any = None
    """The expected value: number, string, ISO date, bool, or list for ``top_n``."""
    tolerance: float = 0.0
    """Absolute tolerance for amounts, counts and percents."""
    ordered: bool = True
    """For ``top_n``: whether the order matters."""
    currency: str | None = None
    """For ``amount``: the ISO currency of ``value`` (``USD``). A figure written with another
    currency's code or symbol states another amount. None: the currency is not checked."""
    side: LedgerSide | None = None
    """For ``amount``: the ledger side of a positive ``value`` (``debit``: a receivable, an AR
    invoice, an AP payment; ``credit``: a payable, a vendor invoice, a customer payment). An answer
    that marks the figure with the other side (``CR``/``DR``, "credit balance") states its
    negative. None: the amount has no side (a credit limit) and such marks are not read."""
    equivalents: list[Money] = Field(default_factory=list)
    """For ``amount``: the same amount in other currencies (an invoice in its document currency
    and in the accounting currency). An answer may state any one of them instead of ``value``,
    written with its currency."""
    complete: bool = False
    """For ``top_n``: the list holds every record that qualifies, so an answer that names
    another record of the same kind (an id the reference answer does not mention) is wrong."""
    unit: str | None = None
    """Research facts: what a figure that is no amount counts: ``percent``, ``employees`` or
    ``shares`` (an amount's currency is ``currency``)."""
    scale: Literal["units", "thousands", "millions", "billions"] | None = None
    """Research facts: the scale ``value`` and ``tolerance`` are in (amounts: millions)."""
    period: str | None = None
    """Research facts: the period the value is for (FY2025, FY2025-Q3), or the day of a price
    (YYYY-MM-DD)."""
    basis: Literal["GAAP", "non-GAAP"] | None = None
    """Research facts: the accounting basis of the value (GAAP unless the question asks for an
    adjusted, non-GAAP measure)."""
    subject: str | None = None
    """The company the fact is about, when an item has facts about several (peer rankings)."""
    sources: list[str] = Field(default_factory=list)
    """Research facts: links of the gold documents that state the fact (or the figures it is
    computed from) as of the item's as-of date."""
    ask: str | None = None
    """Analyst items: the id of the ask (``Question.asks``) this fact keys. Accuracy is the mean
    over the item's keyed asks of the share of each ask's facts stated."""
    dealbreaker: bool = False
    """Without this fact the answer fails the item whatever else it states."""


class Ask(_Strict):
    """One part of an analyst item: what it asks, and whether a key can check it."""

    id: str
    """Stable within the item (``trend``, ``cagr``, ``ranking``)."""
    text: str
    """What the part asks, as the question words it."""
    opinion: bool = False
    """A judgement (a recommendation, a view): left to the judge's other dimensions, never keyed,
    so no expected fact names it."""


ScenarioKind = Literal["underspecified", "dispute", "collections", "vendor_payment"]
"""The conversation kinds: an under-specified controller request, a customer's dispute or short
payment, collections call preparation with a follow-up, a vendor's "where is my payment?"."""


class Slot(_Strict):
    """One thing the simulated user knows and says when (and only when) the agent asks for it."""

    name: str
    """What the slot is, e.g. ``legal_entity``, ``invoice_number``, ``side``."""
    value: str
    """Its value in the scenario, e.g. ``DEMF``: the expected facts are computed for it."""
    vocabulary: list[str]
    """Words or phrases (lower case) that, in a question of the agent's, ask for this slot."""
    answer: str
    """What the user says when asked (contains ``value``)."""


class UnknownInfo(_Strict):
    """Something the user does not know (and must never volunteer): the agent finds it."""

    name: str
    """What it is, e.g. ``residual``."""
    value: str
    """Its value in the ERP as the user would write it, e.g. ``1234.50``: a user message that
    states it has volunteered what it cannot know."""
    vocabulary: list[str]
    """Words that ask for it (the user then says it does not know)."""


class FollowUp(_Strict):
    """A question the user asks once the agent has answered the opening request."""

    message: str
    """The user's follow-up message."""
    condition: str
    """Why this follow-up and not another: the branch the first answer's facts select (for
    example ``an open dispute``), so the follow-up depends on the first answer."""
    fields: list[str] = Field(default_factory=list)
    """The expected facts (``field``) that answer it."""


class Disclosure(_Strict):
    """Something the agent must not tell this user."""

    what: str
    """What it is, e.g. ``another customer's account``."""
    value: str
    """The text that must not appear in any agent message (an id, a name, a figure)."""


class Conversation(_Strict):
    """An operations scenario: who the user is, what they know, and what the agent must do
    (tau2-bench's shape). The expected end facts are the item's ``expected``, computed by the
    oracle for the values of ``known_info``."""

    kind: ScenarioKind
    persona: str
    """Who the user is and why they are in touch (one or two sentences)."""
    known_info: list[Slot]
    """What the user says when asked, slot by slot."""
    unknown_info: list[UnknownInfo] = Field(default_factory=list)
    """What the user does not know; never volunteered."""
    opening_message: str
    """The user's first message (also the item's ``query``)."""
    required_clarifications: list[str]
    """Names of ``known_info`` slots the agent must ask for before it answers: without them a
    guess is wrong by construction."""
    follow_ups: list[FollowUp] = Field(default_factory=list)
    """Questions the user asks after the first answer, in order."""
    must_not_disclose: list[Disclosure] = Field(default_factory=list)
    max_turns: int = 8
    """Agent turns the conversation may take (the runner ends it there: ``max_turns``)."""


class Question(_Strict):
    id: str
    """Stable id, e.g. ``obl-aged-balance-001``."""
    query: str
    """The question exactly as put to the agent."""
    task_type: TaskType
    segment: str
    """AR or AP for obligations; the research segment or brief kind otherwise."""
    scenario: str
    """Obligation scenario (e.g. ``Aged Balance``) or research/brief sub-kind."""
    as_of: dt.date | None = None
    """Date the question is asked as of: the ERP's or the world's today unless the question names
    another (research keys count only what was published by then)."""
    legal_entity: str | None = None
    """Legal entity the question pins, or None for questions across all legal entities."""
    timeout: float | None = None
    """Per-item time budget in seconds, overriding the run's budget."""
    tags: dict[Dimension, list[Assertion]] = Field(default_factory=dict)
    """Dimension -> assertions to judge."""
    ground_truth: str | None = None
    """Reference answer for the judge (obligations and keyed research items)."""
    expected: list[ExpectedFact] = Field(default_factory=list)
    """Machine-checkable facts (obligations and keyed research items)."""
    record_refs: list[str] = Field(default_factory=list)
    """Record paths (``/erp/LE/set/key``) the answer is about; citations checks use them."""
    gold_documents: list[str] = Field(default_factory=list)
    """Research items: links of every document a complete answer rests on (the union of the
    facts' ``sources``), for retrieval recall and citation checks."""
    asks: list[Ask] = Field(default_factory=list)
    """Analyst items: the parts the question asks for, in its order (empty: one ask)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form provenance (generator template, phrasing, published source id, ...)."""
    conversation: Conversation | None = None
    """Operations items: the scenario the simulated user plays (None for one-shot items)."""


class DatasetHeader(_Strict):
    format_version: int = DATASET_FORMAT_VERSION
    name: str
    description: str = ""
    erp_snapshot_hash: str | None = None
    """Snapshot hash of the ERP the answer keys were computed from (None: no ERP dependency)."""
    world_snapshot_hash: str | None = None
    """Snapshot hash of the research world the keys were computed from (None: no world)."""
    world_id: str | None = None
    """Id of that world (in every document link it keys)."""
    world_seed: int | None = None
    """Seed of that world (the runner regenerates its default world from it)."""
    generator_seed: int | None = None
    erp_customers: int | None = None
    """Customers of the ERP the keys were computed from (with ``erp_vendors`` and the seed, what
    a fresh workspace must generate for the keys to hold; None: not recorded)."""
    erp_vendors: int | None = None
    """Vendors of that ERP."""
    rubric_version: str | None = None
    created_by: str = ""
    """Command or source that produced the file."""


class Dataset(_Strict):
    header: DatasetHeader
    items: list[Question]
