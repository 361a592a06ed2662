"""Obligation questions generated from an ERP, with answer keys from the oracle.

``generate_questions(db_url, n=100, seed=42)`` plans ``n`` items over the 21 published scenarios (at
least 3 each when n >= 63, AR:AP about 72:28), picks entities and parameters with a seeded RNG,
phrases each question in one of several ways, and asks :mod:`synthetic_erp._oracle` for the key.
About a quarter of the items have "none", "zero" or "no such customer" as the right answer. The
same database and seed always give the same file, byte for byte.

CLI (dispatched by ``python -m synthetic_erp questions``)::

    python -m synthetic_erp questions --db sqlite:///erp.db --n 100 --seed 42 \\
        --out datasets/obligations.yaml
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import math
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from ledgerbench.dataset._loader import write_dataset
from ledgerbench.dataset._records import Dataset, DatasetHeader, Question, TaskType
from ledgerbench.dataset._rubric import RUBRIC_VERSION, build_tags
from synthetic_erp import _schema as s
from synthetic_erp._catalog import parse_record_url
from synthetic_erp._db import ErpDatabaseError, open_engine, read_meta
from synthetic_erp._oracle import (
    TEMPLATES,
    Answer,
    OracleContext,
    answer_question,
    long_date,
    scenarios,
)

# Published scenario weights (items per 100): the default mix.
SCENARIO_WEIGHTS: dict[str, int] = {
    "Aged Balance": 15,
    "Sales Orders": 10,
    "Customer Setup": 8,
    "Payment History": 7,
    "Vendor Balance": 7,
    "Invoicing History": 7,
    "Credit Limit": 6,
    "AP Invoices": 6,
    "Vendors": 6,
    "AP Payments": 5,
    "Collections Tasks": 5,
    "Collections": 4,
    "Cash Discounts": 3,
    "Other": 3,
    "Outstanding Balance": 2,
    "AP Purchase Orders": 1,
    "Cash Collections": 1,
    "Credit Notes": 1,
    "Dispute": 1,
    "Credit Rating": 1,
    "Discounts": 1,
}
AR_SHARE = 0.72
MIN_PER_SCENARIO = 3
NONE_TARGET = 0.25
"""Share of items planned to have a none / zero / no-such-entity answer (the issue asks >= 20%)."""
NONEXISTENT_SHARE = 0.35
"""Of the none items about one party, the share that name a party that does not exist."""
ATTEMPTS = 12

LEGAL_SUFFIXES = {"inc.", "llc", "corp.", "co.", "gmbh", "ag", "kg", "ltd", "plc", "&", "inc"}
FAKE_FIRST = ("Zephyrine", "Quillfeather", "Obsidia", "Marrowind", "Vantaggio", "Brightwater",
              "Juniperhill", "Halcyonix", "Ostrava", "Kestrelmoor")  # fmt: skip
FAKE_SECOND = ("Trading", "Holdings", "Supply", "Works", "Partners", "Outfitters", "Imports")


# --------------------------------------------------------------------------------------------------
# Phrasings: {who} party reference, {where} legal-entity phrase, {asof} as-of phrase, plus params.
# --------------------------------------------------------------------------------------------------

PHRASINGS: dict[str, tuple[str, ...]] = {
    "aging_customer": (
        "What is the aged balance for {who} {where} {asof}?",
        "Show me the aging breakdown for {who} {where} {asof}: current, 1-30, 31-60, 61-90 and "
        "over 90 days past due.",
        "Could you break down the overdue receivables of {who} {where} {asof}?",
    ),
    "balance_all_entities": (
        "What is the aged balance for {who} in all legal entities combined {asof}?",
        "Give me the outstanding balance of {who} across all legal entities {asof}.",
    ),
    "top_past_due_group": (
        "Of the customers in group {group_id} {where} with unpaid invoices more than {days} days "
        "past due, which are the top {n} by past-due amount {asof}?",
        "List the {n} customers in customer group {group_id} {where} with the most invoice value "
        "over {days} days overdue {asof}.",
    ),
    "aging_totals_entity": (
        "What is the total balance of unpaid customer transactions by aging bucket {where} {asof}?",
        "Give me the receivables aging summary for all customers {where} {asof}.",
    ),
    "past_due_total_entity": (
        "What is the total of unpaid customer receivables more than {days} days past due {where} "
        "{asof}?",
        "How much in customer invoices is over {days} days overdue {where} {asof}?",
    ),
    "coming_due_customer": (
        "Which transactions for {who} are coming due in the next {days} days ({start} to {end}) "
        "{where} {asof}?",
        "Does {who} have any open invoices falling due between {start} and {end} {where}?",
    ),
    "unpaid_invoices_customer": (
        "What are the unpaid invoices for {who} {where} {asof}?",
        "List the open invoices of {who} {where} {asof}, with their remaining amounts.",
    ),
    "customer_balance": (
        "What is the total unpaid customer balance for {who} {where} {asof}?",
        "Can you provide the outstanding receivables balance for {who} {where} {asof}?",
        "How much does {who} owe us {where} {asof}?",
    ),
    "credit_limit": (
        "What is the credit limit for {who} {where} {asof}?",
        "What is the credit limit and available credit for {who} {where} {asof}?",
    ),
    "credit_utilization": (
        "What percentage of the credit limit of {who} is currently used {where} {asof}?",
        "How much of its credit limit has {who} used up {where} {asof}, as a percentage?",
    ),
    "credit_hold_list": (
        "Which customers are on credit hold {where} {asof}?",
        "List all customers currently on credit hold {where} {asof}.",
    ),
    "over_limit_group_top": (
        "Which are the top {n} customers in customer group {group_id} that are over their credit "
        "limit {where} {asof}, ranked by the amount over the limit?",
        "Give me the {n} customers in group {group_id} {where} exceeding their credit limit by "
        "the most {asof}.",
    ),
    "credit_rating": (
        "What is the credit rating of {who} in our ERP {where} {asof}?",
        "How is {who} rated for credit {where}?",
    ),
    "rating_count_group": (
        "How many customers in customer group {group_id} have a {rating} credit rating {where} "
        "{asof}?",
        "Which customers in group {group_id} {where} are rated {rating}?",
    ),
    "payment_terms_customer": (
        "What payment terms are assigned to {who} {where} {asof}?",
        "Which terms of payment does {who} have {where}?",
    ),
    "contact_customer": (
        "What is the phone number for {who} {where} {asof}?",
        "What is the contact information for {who} {where} {asof}?",
    ),
    "customers_in_group": (
        "Which customers are in customer group {group_id} {where} {asof}?",
        "How many customers belong to customer group {group_id} {where}?",
    ),
    "customers_by_currency": (
        "Which customers {where} have {currency} as their currency {asof}?",
        "How many customers {where} are billed in {currency}?",
    ),
    "method_of_payment_customer": (
        "What method of payment is set up for {who} {where}?",
        "How does {who} pay us {where}: which method of payment is on the account?",
    ),
    "largest_payment": (
        "What is the largest payment made by {who} {asof} {where}?",
        "Which was the biggest single payment we received from {who} {where} {asof}?",
    ),
    "top_payments": (
        "Provide a list of the top {n} payments made by {who} {where} {asof}.",
        "What are the {n} largest payments made by {who} {asof} {where}?",
    ),
    "payments_in_range": (
        "How many payments did {who} make between {start} and {end} {where}, and what was the "
        "total?",
        "What payments has {who} made from {start} to {end} {where}?",
    ),
    "last_payment": (
        "When did {who} last pay us {where} {asof}, and how much?",
        "What was the most recent payment from {who} {where} {asof}?",
    ),
    "collected_fiscal_year": (
        "What is the total amount collected from {who} in the current fiscal year {where} {asof}?",
        "How much cash have we collected from {who} so far this fiscal year {where} {asof}?",
    ),
    "invoices_in_range_customer": (
        "Provide a list of the invoices issued to {who} between {start} and {end} {where}.",
        "How many invoices did we send {who} from {start} to {end} {where}, and for how much?",
    ),
    "invoice_count_customer": (
        "What is the total number of invoices for {who} {where} {asof}?",
        "How many invoices have been posted for {who} {where} {asof}?",
    ),
    "largest_invoice_entity": (
        "Which customer invoice posted between {start} and {end} has the largest amount {where}?",
        "What was our biggest customer invoice {where} from {start} to {end}?",
    ),
    "top_invoiced_customer_entity": (
        "Which customer has the highest total invoiced amount between {start} and {end} {where}?",
        "Who was our top customer by invoiced amount {where} from {start} to {end}?",
    ),
    "open_orders_customer": (
        "What are the open sales orders for {who} {where} {asof}?",
        "List the sales orders of {who} that are still open {where} {asof}.",
    ),
    "order_count_customer": (
        "How many sales orders does {who} have {where} {asof}?",
        "Give me a count of the sales orders of {who} by status {where} {asof}.",
    ),
    "do_not_process_orders": (
        "Which sales orders are marked 'Do not process' {where} {asof}?",
        "Are there any sales orders flagged do-not-process {where} {asof}?",
    ),
    "most_open_orders_entity": (
        "Which customer has the most open sales orders {where} {asof}?",
        "Who has the largest number of open sales orders {where} {asof}?",
    ),
    "largest_orders_customer": (
        "What are the {n} largest sales orders for {who} {where} {asof}?",
        "List the top {n} sales orders of {who} by amount {where} {asof}.",
    ),
    "return_orders_entity": (
        "How many return orders are there {where} {asof}?",
        "List the return orders {where} {asof}.",
    ),
    "orders_by_release_status": (
        "Which open sales orders have release status '{release_label}' {where} {asof}?",
        "How many open sales orders have the release status {release_label} {where} {asof}?",
    ),
    "last_letter_customer": (
        "When was the last collection letter sent to {who} {where} {asof}?",
        "What collection letter level is {who} currently at {where} {asof}?",
    ),
    "letters_customer": (
        "What collection letters have been sent to {who} {where} {asof}?",
        "List the collection letters issued to {who} {where} {asof}.",
    ),
    "unassigned_pool_count": (
        "How many customers are unassigned to any collections pool {where} {asof}?",
        "Are there customers {where} without a collections pool {asof}? How many?",
    ),
    "collections_agent_customer": (
        "Which collections agent and pool handle {who} {where}?",
        "Who is the collections agent for {who} {where} {asof}?",
    ),
    "open_activities_customer": (
        "What are the open collections activities for {who} {where} {asof}?",
        "List the open collections tasks and activities of {who} {where} {asof}.",
    ),
    "open_cases_customer": (
        "What open collections cases exist for {who} {where} {asof}?",
        "Does {who} have any open collections case {where} {asof}?",
    ),
    "agent_worklist": (
        "Which customers are on the worklist of collections agent {agent} for {date} {where}?",
        "Show me the open collections activities due on {date} for agent {agent} {where}.",
    ),
    "open_tasks_due_entity": (
        "How many open collections tasks are due between {start} and {end} {where}?",
        "List the open collections tasks due from {start} to {end} {where}.",
    ),
    "discounts_expiring_entity": (
        "Which open customer invoices have a cash discount expiring in the next {days} days "
        "({start} to {end}) {where}?",
        "List customer invoices {where} whose cash discount runs out between {start} and {end}.",
    ),
    "discounts_taken_customer": (
        "How many times has {who} paid within the cash discount window between {start} and "
        "{end} {where}?",
        "Did {who} take any cash discounts from {start} to {end} {where}? How much?",
    ),
    "open_discount_invoices_customer": (
        "Does {who} have any cash discount still available on its open invoices {where} {asof}?",
        "Which open invoices of {who} still qualify for a cash discount {where} {asof}?",
    ),
    "open_disputes_customer": (
        "Show me all transactions {who} has open disputes on {where} {asof}.",
        "Which invoices of {who} are currently disputed {where} {asof}?",
    ),
    "open_deductions_customer": (
        "What deductions are open for {who} {where} {asof}?",
        "List the open deductions taken by {who} {where} {asof}.",
    ),
    "unapplied_credit_notes_customer": (
        "Which credit notes for {who} are still unapplied {where} {asof}?",
        "Does {who} have credit notes that have not been fully applied {where} {asof}?",
    ),
    "vendor_balance": (
        "What is the total AP balance for {who} {where} {asof}?",
        "What is the total outstanding balance owed to {who} {where} {asof}?",
        "How much do we owe {who} {where} {asof}?",
    ),
    "ap_by_group_entity": (
        "What is the total AP liability by vendor group {where} {asof}?",
        "Break down our open AP balance by vendor group {where} {asof}.",
    ),
    "ap_group_balance": (
        "What is the combined AP balance across all vendors in vendor group {group_id} {where} "
        "{asof}?",
        "How much do we owe the vendors of group {group_id} in total {where} {asof}?",
    ),
    "ap_by_currency_entity": (
        "What is the total AP balance by currency {where} {asof}?",
        "Split our open vendor balance by transaction currency {where} {asof}.",
    ),
    "ap_overdue_entity": (
        "What is the total overdue AP balance {where} {asof}?",
        "How much in vendor invoices is past due {where} {asof}?",
    ),
    "ap_due_next_month_top": (
        "What are the {n} largest AP balances due next month ({start} to {end}) {where}?",
        "Which {n} vendors have the most open invoice value falling due between {start} and "
        "{end} {where}?",
    ),
    "payment_terms_vendor": (
        "What are the payment terms for {who} {where}?",
        "Which terms of payment do we have with {who} {where} {asof}?",
    ),
    "vendor_cash_discount": (
        "Does {who} {where} offer early payment discounts, and what is the discount percentage?",
        "Can we get a cash discount from {who} {where} for paying early?",
    ),
    "vendors_on_hold": (
        "Which vendors are on payment hold {where} {asof}?",
        "List the vendors that are currently blocked for payment {where} {asof}.",
    ),
    "vendors_created_in_month": (
        "Were any new vendors created in {month} {where}?",
        "Which vendors were set up in {month} {where}?",
    ),
    "vendors_terms_longer_than": (
        "Which vendors have payment terms longer than net {days} days {where}?",
        "Do we have vendors {where} on terms beyond {days} days net?",
    ),
    "pending_approval_vendor": (
        "What invoices are pending approval for {who} {where} {asof}?",
        "Are there invoices from {who} waiting for approval {where} {asof}?",
    ),
    "invoices_by_status_entity": (
        "How many vendor invoices are {status_label} {where} {asof}?",
        "What is the total value of {status_label} vendor invoices {where} {asof}?",
    ),
    "ap_due_in_window": (
        "Which vendor invoices are due for payment between {start} and {end} {where}?",
        "List the open vendor invoices falling due from {start} to {end} {where}.",
    ),
    "ap_posted_on_date": (
        "What is the total value of vendor invoices posted on {date} {where}?",
        "How many vendor invoices were posted on {date} {where}?",
    ),
    "latest_invoice_match_vendor": (
        "What is the three-way match status of the latest invoice from {who} {where} {asof}?",
        "Did the most recent invoice of {who} pass three-way matching {where} {asof}?",
    ),
    "payment_accounts_methods": (
        "What are the payment accounts used by the {codes} vendor methods of payment {where}?",
        "Which ledger accounts do the vendor payment methods {codes} post to {where}?",
    ),
    "proposal_vendors_on_date": (
        "Which vendors are included in the payment proposal created on {date} {where}?",
        "Which vendors does the {date} payment proposal {where} pay?",
    ),
    "ap_obligation_next_days": (
        "What is the total AP payment obligation for the next {days} days ({start} to {end}) "
        "{where}?",
        "How much in vendor invoices falls due between {start} and {end} {where}?",
    ),
    "vendor_payments_range": (
        "What is the payment history of {who} between {start} and {end} {where}?",
        "How much did we pay {who} from {start} to {end} {where}?",
    ),
    "payment_journal_total": (
        "What is the total value of payment journal {journal_id} {where} {asof}?",
        "How much does payment journal {journal_id} {where} pay out, and over how many lines?",
    ),
    "vendor_credit_notes": (
        "What credit notes have been received from {who} between {start} and {end} {where}?",
        "Did {who} issue us any credit notes from {start} to {end} {where}?",
    ),
    "vendor_debit_notes": (
        "Are there any debit notes issued to {who} {where} {asof}?",
        "List the debit notes we have raised against {who} {where} {asof}.",
    ),
    "vendor_spend_fiscal_year": (
        "What is the total spend with {who} this fiscal year {where} {asof}?",
        "How much have we been invoiced by {who} in the current fiscal year {where} {asof}?",
    ),
    "open_pos_vendor": (
        "What purchase orders are open for {who} {where} {asof}?",
        "List the open purchase orders with {who} {where} {asof}.",
    ),
}


# --------------------------------------------------------------------------------------------------
# The ERP as the generator sees it
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartyInfo:
    kind: str
    legal_entity: str
    account: str
    name: str


class ErpView:
    """Parties, groups and agents of the ERP, loaded once, in a fixed order."""

    def __init__(self, ctx: OracleContext):
        self.ctx = ctx
        self.parties: dict[tuple[str, str], list[PartyInfo]] = defaultdict(list)
        for kind, table in (("customer", s.Customer), ("vendor", s.Vendor)):
            rows = ctx.session.execute(
                select(table.legal_entity, table.account, table.name).order_by(
                    table.legal_entity, table.account
                )
            )
            for le, account, name in rows:
                self.parties[(kind, le)].append(PartyInfo(kind, le, account, name))
        self.names: dict[tuple[str, str], Counter] = {
            key: Counter(p.name.lower() for p in parties) for key, parties in self.parties.items()
        }
        self.all_names = {p.name.lower() for ps in self.parties.values() for p in ps}
        self.legal_entities = sorted(ctx.legal_entities)
        self.le_weights = [len(self.parties[("customer", le)]) for le in self.legal_entities]
        self.twin_names = sorted(
            name
            for name, count in Counter(
                p.name for le in self.legal_entities for p in self.parties[("customer", le)]
            ).items()
            if count > 1
        )
        agents = ctx.session.execute(
            select(s.CollectionsAgent.legal_entity, s.CollectionsAgent.agent_id).order_by(
                s.CollectionsAgent.legal_entity, s.CollectionsAgent.agent_id
            )
        )
        self.agents: dict[str, list[str]] = defaultdict(list)
        for le, agent_id in agents:
            self.agents[le].append(agent_id)
        journals = ctx.session.execute(
            select(s.PaymentJournal.legal_entity, s.PaymentJournal.journal_id)
            .where(s.PaymentJournal.status == "open")
            .order_by(s.PaymentJournal.legal_entity, s.PaymentJournal.journal_id)
        )
        self.open_journals: dict[str, list[str]] = defaultdict(list)
        for le, journal_id in journals:
            self.open_journals[le].append(journal_id)

    def pick_le(self, rng: random.Random, kind: str | None = None) -> str:
        """A legal entity, weighted by its number of customers; with ``kind``, one that has
        parties of that kind."""
        if kind is None:
            return rng.choices(self.legal_entities, weights=self.le_weights)[0]
        entities = [le for le in self.legal_entities if self.parties[(kind, le)]]
        if not entities:
            raise ValueError(f"the ERP has no {kind}s; generate a larger ERP")
        weights = [len(self.parties[(kind, le)]) for le in entities]
        return rng.choices(entities, weights=weights)[0]


# --------------------------------------------------------------------------------------------------
# Party references: by name, account, misspelling or partial name
# --------------------------------------------------------------------------------------------------

REFERENCE_MODES = (("name", 35), ("account", 20), ("name_and_account", 10), ("misspelled", 15),
                   ("partial", 20))  # fmt: skip


def reference(view: ErpView, party: PartyInfo, rng: random.Random) -> tuple[str, str]:
    """(text naming the party in the question, mode used)."""
    modes = [m for m, _ in REFERENCE_MODES]
    weights = [w for _, w in REFERENCE_MODES]
    mode = rng.choices(modes, weights=weights)[0]
    names = view.names[(party.kind, party.legal_entity)]
    unique_name = names[party.name.lower()] == 1
    if mode == "misspelled":
        text = misspell(view, party, rng)
        if text:
            return text, mode
        mode = "partial"
    if mode == "partial":
        text = partial_name(view, party)
        if text:
            return text, mode
        mode = "name"
    if mode == "name" and unique_name:
        return party.name, mode
    if mode == "name_and_account":
        return f"{party.name} ({party.account})", mode
    return f"{party.kind} account {party.account}", "account"


def _core_words(name: str) -> list[str]:
    words = name.split()
    while len(words) > 1 and words[-1].lower() in LEGAL_SUFFIXES:
        words.pop()
    return words


def partial_name(view: ErpView, party: PartyInfo) -> str | None:
    """The name without its legal suffix, when that still points to exactly one party."""
    core = " ".join(_core_words(party.name))
    if core == party.name or len(core) < 6:
        return None
    needle = core.lower()
    matches = [n for n in view.names[(party.kind, party.legal_entity)] if needle in n]
    return core if len(matches) == 1 else None


def misspell(view: ErpView, party: PartyInfo, rng: random.Random) -> str | None:
    """A one-typo version of the name that still resolves to this party, and only to it."""
    words = party.name.split()
    candidates = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not candidates:
        return None
    index = rng.choice(candidates)
    word = words[index]
    kind = rng.randrange(3)
    pos = rng.randrange(1, len(word) - 2)
    if kind == 0:
        typo = word[:pos] + word[pos + 1 :]
    elif kind == 1:
        typo = word[:pos] + word[pos + 1] + word[pos] + word[pos + 2 :]
    else:
        typo = word[:pos] + word[pos] + word[pos:]
    if typo == word:
        return None
    text = " ".join([*words[:index], typo, *words[index + 1 :]])
    if text.lower() in view.all_names:
        return None
    if not _resolves_uniquely(
        text.lower(), party.name.lower(), view.names[(party.kind, party.legal_entity)]
    ):
        return None
    return text


MISSPELLING_MARGIN = 0.08
"""The misspelled name must be this much closer (difflib ratio) to its party than to any other."""


def _resolves_uniquely(text: str, target: str, names) -> bool:
    matcher = difflib.SequenceMatcher(None, "", text)
    matcher.set_seq1(target)
    bar = matcher.ratio() - MISSPELLING_MARGIN
    for name in names:
        if name == target:
            continue
        matcher.set_seq1(name)
        # real_quick_ratio >= quick_ratio >= ratio, so the cheap bounds rule most names out.
        if (
            matcher.real_quick_ratio() >= bar
            and matcher.quick_ratio() >= bar
            and matcher.ratio() >= bar
        ):
            return False
    return True


def fake_party_name(view: ErpView, rng: random.Random) -> str:
    """A plausible company name that no party in the ERP has, nor anything close to it."""
    for _ in range(50):
        name = f"{rng.choice(FAKE_FIRST)} {rng.choice(FAKE_SECOND)}"
        first = name.split()[0].lower()
        if not any(first in n for n in view.all_names):
            return name
    raise RuntimeError("could not invent a party name absent from the ERP")


# --------------------------------------------------------------------------------------------------
# Parameter choice per template
# --------------------------------------------------------------------------------------------------


@dataclass
class Draft:
    template: str
    params: dict[str, Any]
    words: dict[str, str]
    """Values for the phrasing placeholders."""
    reference_mode: str | None = None
    party: PartyInfo | None = None
    """The party a misspelled or partial reference stands for (None when it does not exist)."""


def _iso(day) -> str:
    return day.isoformat()


class Chooser:
    """Proposes parameter sets for a template, in a random but seeded order."""

    def __init__(self, view: ErpView, rng: random.Random):
        self.view = view
        self.rng = rng
        self.today = view.ctx.today

    def _where(self, le: str | None) -> str:
        if le is None:
            return "across all legal entities"
        return self.rng.choice((f"in {le}", f"in {le}", f"in legal entity {le}"))

    def _base(self, le: str | None) -> dict[str, str]:
        return {"where": self._where(le), "asof": f"as of {long_date(self.today)}"}

    def _window(self) -> tuple[Any, Any]:
        choice = self.rng.randrange(4)
        if choice == 0:
            return dt.date(self.today.year - 1, 1, 1), dt.date(self.today.year - 1, 12, 31)
        if choice == 1:
            return self.today - dt.timedelta(days=364), self.today
        if choice == 2:
            quarter_start = dt.date(self.today.year - 1, self.rng.choice((1, 4, 7, 10)), 1)
            end = (quarter_start + dt.timedelta(days=95)).replace(day=1) - dt.timedelta(days=1)
            return quarter_start, end
        start = (self.today.replace(day=1) - dt.timedelta(days=1)).replace(day=1)
        return start, self.today

    def proposals(self, template: str, want_none: bool) -> Iterator[Draft]:
        spec = TEMPLATES[template]
        if spec.party:
            yield from self._party_proposals(template, spec.party, want_none)
        else:
            for _ in range(ATTEMPTS):
                draft = getattr(self, f"_p_{template}")()
                draft.template = template
                yield draft

    # ---- one-party templates ---------------------------------------------------------------

    def _party_proposals(self, template: str, kind: str, want_none: bool) -> Iterator[Draft]:
        extra = self._party_extra(template)
        if want_none and self.rng.random() < NONEXISTENT_SHARE:
            le = self.view.pick_le(self.rng)
            name = fake_party_name(self.view, self.rng)
            params = {"legal_entity": le, "name": name, **extra[0]}
            words = {**self._base(le), "who": name, **extra[1]}
            yield Draft(template, params, words, "nonexistent")
        for _ in range(ATTEMPTS):
            le = self.view.pick_le(self.rng, kind)
            party = self.rng.choice(self.view.parties[(kind, le)])
            who, mode = reference(self.view, party, self.rng)
            params = {"legal_entity": le, "account": party.account, **extra[0]}
            words = {**self._base(le), "who": who, **extra[1]}
            yield Draft(template, params, words, mode, party)

    def _party_extra(self, template: str) -> tuple[dict[str, Any], dict[str, str]]:
        rng = self.rng
        if template in ("top_payments", "largest_orders_customer"):
            n = rng.choice((3, 5, 10))
            return {"n": n}, {"n": str(n)}
        if template == "coming_due_customer":
            days = rng.choice((7, 14, 30))
            end = self.today + dt.timedelta(days=days)
            return {"days": days}, {
                "days": str(days),
                "start": long_date(self.today),
                "end": long_date(end),
            }
        if template in (
            "payments_in_range",
            "invoices_in_range_customer",
            "discounts_taken_customer",
            "vendor_payments_range",
            "vendor_credit_notes",
        ):
            start, end = self._window()
            return {"start": _iso(start), "end": _iso(end)}, {
                "start": long_date(start),
                "end": long_date(end),
            }
        return {}, {}

    # ---- entity-level templates ----------------------------------------------------------------

    def _le_draft(self, params: dict[str, Any], **words: str) -> Draft:
        return Draft("", params, {**self._base(params.get("legal_entity")), **words})

    def _p_balance_all_entities(self) -> Draft:
        names = self.view.twin_names or sorted(
            {p.name for p in self.view.parties[("customer", "USMF")]}
        )
        name = self.rng.choice(names)
        if self.rng.random() < 0.3:
            name = fake_party_name(self.view, self.rng)
            return Draft("", {"name": name}, {**self._base(None), "who": name}, "nonexistent")
        return Draft("", {"name": name}, {**self._base(None), "who": name})

    def _group(self, kind: str = "customer") -> str:
        return self.rng.choice(
            ("10", "20", "30", "80", "90") if kind == "customer" else ("10", "20", "30", "40", "50")
        )

    def _p_top_past_due_group(self) -> Draft:
        le, n, days, group = (
            self.view.pick_le(self.rng),
            self.rng.choice((5, 10)),
            self.rng.choice((30, 60, 90)),
            self._group(),
        )
        return self._le_draft(
            {"legal_entity": le, "group_id": group, "days": days, "n": n},
            group_id=group,
            days=str(days),
            n=str(n),
        )

    def _p_aging_totals_entity(self) -> Draft:
        return self._le_draft({"legal_entity": self.view.pick_le(self.rng)})

    def _p_past_due_total_entity(self) -> Draft:
        days = self.rng.choice((30, 60, 90, 180))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "days": days}, days=str(days)
        )

    def _p_credit_hold_list(self) -> Draft:
        le = None if self.rng.random() < 0.2 else self.view.pick_le(self.rng)
        return self._le_draft({"legal_entity": le})

    def _p_over_limit_group_top(self) -> Draft:
        le, n, group = self.view.pick_le(self.rng), self.rng.choice((3, 5, 10)), self._group()
        return self._le_draft(
            {"legal_entity": le, "group_id": group, "n": n}, group_id=group, n=str(n)
        )

    def _p_rating_count_group(self) -> Draft:
        le, group = self.view.pick_le(self.rng), self._group()
        rating = self.rng.choice(("Excellent", "Good", "Fair", "Poor"))
        return self._le_draft(
            {"legal_entity": le, "group_id": group, "rating": rating}, group_id=group, rating=rating
        )

    def _p_customers_in_group(self) -> Draft:
        le, group = self.view.pick_le(self.rng), self._group()
        return self._le_draft({"legal_entity": le, "group_id": group}, group_id=group)

    def _p_customers_by_currency(self) -> Draft:
        le, currency = self.view.pick_le(self.rng), self.rng.choice(("USD", "EUR", "GBP", "CAD"))
        return self._le_draft({"legal_entity": le, "currency": currency}, currency=currency)

    def _p_largest_invoice_entity(self) -> Draft:
        start, end = self._window()
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "start": _iso(start), "end": _iso(end)},
            start=long_date(start),
            end=long_date(end),
        )

    _p_top_invoiced_customer_entity = _p_largest_invoice_entity

    def _p_do_not_process_orders(self) -> Draft:
        le = None if self.rng.random() < 0.2 else self.view.pick_le(self.rng)
        return self._le_draft({"legal_entity": le})

    def _p_most_open_orders_entity(self) -> Draft:
        return self._le_draft({"legal_entity": self.view.pick_le(self.rng)})

    _p_return_orders_entity = _p_most_open_orders_entity
    _p_unassigned_pool_count = _p_most_open_orders_entity
    _p_ap_by_group_entity = _p_most_open_orders_entity
    _p_ap_by_currency_entity = _p_most_open_orders_entity
    _p_ap_overdue_entity = _p_most_open_orders_entity

    def _p_orders_by_release_status(self) -> Draft:
        # Released orders are delivered or invoiced, so open orders are open or partly released.
        status = self.rng.choice(("open", "partially_released"))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "release_status": status},
            release_label=status.replace("_", " "),
        )

    def _p_agent_worklist(self) -> Draft:
        le = self.view.pick_le(self.rng)
        agent = self.rng.choice(self.view.agents[le] or ["CA001"])
        day = self.today + dt.timedelta(days=self.rng.choice((0, 0, 1, 2)))
        return self._le_draft(
            {"legal_entity": le, "agent_id": agent, "date": _iso(day)},
            agent=agent,
            date=long_date(day),
        )

    def _next_days(self, choices=(7, 14)) -> tuple[int, Any]:
        days = self.rng.choice(choices)
        return days, self.today + dt.timedelta(days=days)

    def _p_open_tasks_due_entity(self) -> Draft:
        _, end = self._next_days((3, 7, 14))
        return self._le_draft(
            {
                "legal_entity": self.view.pick_le(self.rng),
                "start": _iso(self.today),
                "end": _iso(end),
            },
            start=long_date(self.today),
            end=long_date(end),
        )

    def _p_discounts_expiring_entity(self) -> Draft:
        days, end = self._next_days((3, 5, 7, 10))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "days": days},
            days=str(days),
            start=long_date(self.today),
            end=long_date(end),
        )

    def _p_ap_group_balance(self) -> Draft:
        group = self._group("vendor")
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "group_id": group}, group_id=group
        )

    def _p_ap_due_next_month_top(self) -> Draft:
        n = self.rng.choice((3, 5))
        start = (self.today.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "n": n},
            n=str(n),
            start=long_date(start),
            end=long_date(end),
        )

    def _p_vendors_on_hold(self) -> Draft:
        le = None if self.rng.random() < 0.2 else self.view.pick_le(self.rng)
        return self._le_draft({"legal_entity": le})

    def _p_vendors_created_in_month(self) -> Draft:
        year, month = self.today.year, self.today.month
        back = self.rng.randrange(0, 12)
        month -= back
        while month < 1:
            month += 12
            year -= 1
        label = f"{dt.date(year, month, 1):%B} {year}"
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "year": year, "month": month}, month=label
        )

    def _p_vendors_terms_longer_than(self) -> Draft:
        days = self.rng.choice((30, 45, 60))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "days": days}, days=str(days)
        )

    def _p_invoices_by_status_entity(self) -> Draft:
        status = self.rng.choice(("pending_approval", "unposted", "approved"))
        le = None if self.rng.random() < 0.15 else self.view.pick_le(self.rng)
        label = {
            "pending_approval": "pending approval",
            "unposted": "unposted (in the invoice register)",
            "approved": "approved but not yet posted",
        }[status]
        return self._le_draft({"legal_entity": le, "status": status}, status_label=label)

    def _p_ap_due_in_window(self) -> Draft:
        days = self.rng.choice((6, 13))
        start = self.today + dt.timedelta(days=self.rng.choice((0, 7)))
        end = start + dt.timedelta(days=days)
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "start": _iso(start), "end": _iso(end)},
            start=long_date(start),
            end=long_date(end),
        )

    def _p_ap_posted_on_date(self) -> Draft:
        day = self.today - dt.timedelta(days=self.rng.randrange(0, 20))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "date": _iso(day)}, date=long_date(day)
        )

    def _p_payment_accounts_methods(self) -> Draft:
        codes = sorted(self.rng.sample(("CHECK", "ELECTRONIC", "WIRE"), 2))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "codes": codes}, codes=" and ".join(codes)
        )

    def _p_proposal_vendors_on_date(self) -> Draft:
        day = self.today - dt.timedelta(days=self.rng.choice((0, 0, 1, 3)))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "date": _iso(day)}, date=long_date(day)
        )

    def _p_ap_obligation_next_days(self) -> Draft:
        days, end = self._next_days((7, 14, 30))
        return self._le_draft(
            {"legal_entity": self.view.pick_le(self.rng), "days": days},
            days=str(days),
            start=long_date(self.today),
            end=long_date(end),
        )

    def _p_payment_journal_total(self) -> Draft:
        le = self.view.pick_le(self.rng)
        journals = self.view.open_journals.get(le) or ["PJ-9999999"]  # none open: ask a missing one
        missing = f"PJ-{self.rng.randrange(9_000_000, 10_000_000):07d}"
        journal = self.rng.choice(journals) if self.rng.random() < 0.85 else missing
        return self._le_draft({"legal_entity": le, "journal_id": journal}, journal_id=journal)


# --------------------------------------------------------------------------------------------------
# Planning and assembly
# --------------------------------------------------------------------------------------------------


def plan_counts(n: int) -> dict[str, int]:
    """Items per scenario: proportional to the published weights, at least MIN_PER_SCENARIO each
    when n allows, AR:AP about 72:28."""
    segments = scenarios()
    n_ar = round(n * AR_SHARE)
    counts: dict[str, int] = {}
    for segment, total in (("AR", n_ar), ("AP", n - n_ar)):
        names = [name for name in SCENARIO_WEIGHTS if segments[name] == segment]
        counts.update(_apportion(names, total))
    return counts


def _apportion(names: list[str], total: int) -> dict[str, int]:
    """Largest-remainder apportionment of ``total`` over ``names`` with a floor per scenario."""
    floor = min(MIN_PER_SCENARIO, total // len(names)) if names else 0
    fixed: set[str] = set()
    while True:
        free = [name for name in names if name not in fixed]
        budget = total - floor * len(fixed)
        weight = sum(SCENARIO_WEIGHTS[name] for name in free)
        shares = {name: budget * SCENARIO_WEIGHTS[name] / weight for name in free}
        small = {name for name, share in shares.items() if share < floor}
        if not small:
            break
        fixed |= small
    counts = {name: floor if name in fixed else math.floor(shares[name]) for name in names}
    left = total - sum(counts.values())
    by_remainder = sorted(shares, key=lambda name: (-(shares[name] - counts[name]), name))
    for name in by_remainder[:left]:
        counts[name] += 1
    return counts


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _canonical(template: str, params: dict[str, Any]) -> str:
    return template + "|" + "|".join(f"{k}={params[k]}" for k in sorted(params))


def generate_questions(db_url: str, n: int = 100, seed: int = 42) -> Dataset:
    """``n`` obligation questions with answer keys computed from the ERP at ``db_url``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    engine = open_engine(db_url, read_only=True)
    try:
        meta = read_meta(engine)
        ctx = OracleContext.open(engine)
        try:
            items = _generate_items(ctx, n, seed)
        finally:
            ctx.close()
    finally:
        engine.dispose()
    header = DatasetHeader(
        name="obligations",
        description=f"{n} financial-obligation questions generated from the synthetic ERP "
        f"(as of {meta.get('as_of')}); answer keys computed by synthetic_erp._oracle.",
        erp_snapshot_hash=meta.get("snapshot_hash"),
        generator_seed=seed,
        rubric_version=RUBRIC_VERSION,
        created_by=f"python -m synthetic_erp questions --n {n} --seed {seed}",
    )
    return Dataset(header=header, items=items)


def _generate_items(ctx: OracleContext, n: int, seed: int) -> list[Question]:
    rng = random.Random(seed)
    view = ErpView(ctx)
    chooser = Chooser(view, rng)
    slots = [name for name, count in plan_counts(n).items() for _ in range(count)]
    rng.shuffle(slots)
    templates_by_scenario: dict[str, list[str]] = defaultdict(list)
    for name, template in TEMPLATES.items():
        templates_by_scenario[template.scenario].append(name)
    cursor: dict[str, int] = {
        name: rng.randrange(len(t)) for name, t in sorted(templates_by_scenario.items())
    }
    seen: set[str] = set()
    numbering: Counter = Counter()
    uses: Counter = Counter()
    phrasing_offset = rng.randrange(6)
    items: list[Question] = []
    nones = 0
    for index, scenario in enumerate(slots):
        want_none = nones < NONE_TARGET * (index + 1)
        options = templates_by_scenario[scenario]
        start = cursor[scenario]
        cursor[scenario] += 1
        # A template whose parameters are used up gives way to the next one of its scenario;
        # only when all are used up does a question repeat (in other words).
        for attempt in range(len(options)):
            template = options[(start + attempt) % len(options)]
            chosen = _choose(ctx, chooser, template, want_none, seen, allow_repeat=False)
            if chosen:
                break
        else:
            template = options[start % len(options)]
            chosen = _choose(ctx, chooser, template, want_none, seen, allow_repeat=True)
        draft, answer = chosen
        nones += answer.is_none
        numbering[scenario] += 1
        # Phrasings rotate per template so every template's wordings all get used.
        phrasing = (phrasing_offset + uses[draft.template]) % len(PHRASINGS[draft.template])
        uses[draft.template] += 1
        items.append(_question(ctx, draft, answer, scenario, numbering[scenario], phrasing))
    return items


def _choose(
    ctx: OracleContext,
    chooser: Chooser,
    template: str,
    want_none: bool,
    seen: set[str],
    *,
    allow_repeat: bool,
) -> tuple[Draft, Answer] | None:
    """A fresh (draft, answer) for ``template``, preferring the wanted answer kind; None when
    every proposal repeats an earlier question and ``allow_repeat`` is False."""
    fallback: tuple[Draft, Answer] | None = None
    for draft in chooser.proposals(template, want_none):
        key = _canonical(template, draft.params)
        if key in seen:
            continue
        answer = answer_question(ctx, template, draft.params)
        if fallback is None:
            fallback = (draft, answer)
        if answer.is_none == want_none:
            seen.add(key)
            return draft, answer
    if fallback is None:  # every proposal was a repeat: ask it again in other words
        if not allow_repeat:
            return None
        draft = next(iter(chooser.proposals(template, want_none)))
        fallback = (draft, answer_question(ctx, template, draft.params))
    seen.add(_canonical(template, fallback[0].params))
    return fallback


def _reference_check(draft: Draft) -> tuple[str | None, str | None]:
    """(name as the question gives it, the record it means) for references worth a check."""
    if draft.reference_mode == "nonexistent":
        return draft.words["who"], None
    if draft.reference_mode in ("misspelled", "partial") and draft.party:
        return draft.words["who"], f"{draft.party.name} ({draft.party.account})"
    return None, None


def _question(
    ctx: OracleContext,
    draft: Draft,
    answer: Answer,
    scenario: str,
    number: int,
    phrasing_index: int,
) -> Question:
    template = TEMPLATES[draft.template]
    query = PHRASINGS[draft.template][phrasing_index].format(**draft.words)
    query = re.sub(r"\s+", " ", query).strip().replace(" ?", "?").replace(" .", ".")
    given, resolved = _reference_check(draft)
    tags = build_tags(
        TaskType.obligations,
        scenario=scenario,
        records=answer.records,
        ground_truth=answer.text,
        segment=template.segment,
        given_name=given,
        resolved_name=resolved,
    )
    metadata: dict[str, Any] = {
        "template": draft.template,
        "params": draft.params,
        "phrasing": phrasing_index,
        "answer_kind": "none" if answer.is_none else "records",
    }
    if draft.reference_mode:
        metadata["reference"] = draft.reference_mode
    return Question(
        id=f"obl-{_slug(scenario)}-{number:03d}",
        query=query,
        task_type=TaskType.obligations,
        segment=template.segment,
        scenario=scenario,
        as_of=ctx.today,
        legal_entity=draft.params.get("legal_entity"),
        tags=tags,
        ground_truth=answer.text,
        expected=answer.facts,
        # Keys the catalogue cannot address (e.g. terms ids with '%') are left out: nobody could
        # cite them.
        record_refs=[ref for ref in dict.fromkeys(answer.refs) if parse_record_url(ref)],
        metadata=metadata,
    )


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2) instead of a usage dump."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m synthetic_erp questions",
        description="Generate obligation questions with computed answer keys from an ERP.",
        epilog="example:\n  python -m synthetic_erp questions --db sqlite:///erp.db --n 100 "
        "--seed 42 --out datasets/obligations.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--db",
        default="sqlite:///erp.db",
        help="ERP database URL (default sqlite:///erp.db), e.g. postgresql://u:p@host/erp",
    )
    parser.add_argument(
        "--n", type=int, default=100, help="number of questions (default 100), e.g. --n 1000"
    )
    parser.add_argument(
        "--seed", type=int, default=42, help="random seed for the choice of questions (default 42)"
    )
    parser.add_argument(
        "--out",
        default="datasets/obligations.yaml",
        help="output YAML file (default datasets/obligations.yaml)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.n < 1:
        print(f"error: --n must be at least 1, got {args.n}", file=sys.stderr)
        return 2
    try:
        dataset = generate_questions(args.db, n=args.n, seed=args.seed)
    except (ErpDatabaseError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(
            f"error: {args.db} is not a generated ERP (missing {exc}); create one with: "
            f"python -m synthetic_erp generate --db {args.db}",
            file=sys.stderr,
        )
        return 2
    path = write_dataset(dataset, args.out)
    nones = sum(item.metadata.get("answer_kind") == "none" for item in dataset.items)
    print(f"wrote {len(dataset.items)} questions ({nones} with none/zero answers) to {path}")
    return 0
