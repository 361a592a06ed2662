"""The rubric: which assertions each item is judged on, per dimension.

Every item gets the common assertions of its task type plus task-specific ones. The rules follow the
benchmark (see docs/dataset-format.md): accuracy for obligations (and, LedgerBench's extension, for
research items keyed on the research world), no recency for obligations, citations mean ERP record
links for obligations and named providers or URLs elsewhere, two or more records call for a table,
and an ERP tool failure fails relevance. Texts are templates; the rubric
version is a hash of all of them, so any wording change gives a new version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ledgerbench_core.dataset._records import Assertion, Dimension, TaskType

Tags = dict[Dimension, list[Assertion]]

# --------------------------------------------------------------------------------------------------
# Assertion texts (id -> template). Placeholders: {ground_truth}, {period}, {party}.
# --------------------------------------------------------------------------------------------------

COMMON: dict[str, str] = {
    "clarity.acronyms": (
        "Acronyms and jargon that a finance professional would not know are spelled out the first "
        "time they appear. Everyday finance terms (FY, YoY, EPS, EBITDA, GAAP, DSO, AR, AP, ERP, "
        "10-K) and ERP account or document ids used as identifiers need no definition."
    ),
    "clarity.consistent_terms": (
        "The response calls each concept by one name throughout (for example it does not switch "
        "between 'open balance', 'amount due' and 'exposure' for the same figure)."
    ),
    "clarity.quantified": (
        "Judgements such as 'strong', 'significant' or 'high' come with the number that supports "
        "them."
    ),
    "groundedness.supported": (
        "The key facts (figures, dates, names, statuses) are backed by the tool outputs or sources "
        "captured during the run; small reasonable inferences from that data are fine."
    ),
    "groundedness.no_invention": (
        "The response does not state as fact anything the captured tool outputs or sources do not "
        "say or clearly imply."
    ),
    "relevance.on_topic": (
        "The response answers the question that was asked, without drifting into material the "
        "user did not ask for."
    ),
    "relevance.specific": (
        "The response is specific enough to act on: not vague or non-committal. When data is truly "
        "missing, saying so clearly meets this."
    ),
    "structure.answer_first": (
        "The direct answer comes first (after a short data-availability caveat if one is "
        "needed), then the supporting detail. Any form works for the opening: a sentence, a list "
        "or a table; a brief greeting before it is harmless."
    ),
    "structure.organized": (
        "The response is organised for reading: paragraphs, headings, lists or tables as the "
        "content calls for."
    ),
}

OBLIGATIONS: dict[str, str] = {
    "accuracy.ground_truth": (
        "The facts in the response agree with the reference answer below. Wording, formatting and "
        "extra context may differ; amounts must match to the cent (rounding to whole units is fine "
        "when stated), and account ids, document numbers, names, dates and counts must match. "
        "Reference answer: {ground_truth}"
    ),
    "citations.erp_link": (
        "The response links at least one ERP record it relied on (a record URL of the ERP, e.g. "
        "the {party} or the transactions). No link is needed only when nothing matching was found "
        "or the question could not be run for missing or ambiguous input."
    ),
    "depth.complete": (
        "Every part of the question is answered with the essential figures; anything the ERP does "
        "not hold is named as missing."
    ),
    "depth.absence_stated": (
        "When nothing matches (no such {party}, no records in the period, a zero balance), the "
        "response says so plainly and states what it looked for (entity, legal entity, date). Not "
        "applicable when records were found."
    ),
    "relevance.erp_reached": (
        "The answer rests on data actually retrieved from the ERP. If a tool or connection failure "
        "kept the agent from the ERP, this fails however well the failure is explained."
    ),
    "relevance.resolves_reference": (
        "The question calls the {party} '{given}', which in the ERP is {resolved}: the response "
        "finds that record despite the wording (or, if it asks back, names it among the "
        "candidates) and says which record it used."
    ),
    "relevance.no_substitute": (
        "No {party} called '{given}' exists in the ERP: the response says so and does not present "
        "another party's data as the answer (pointing out close matches is fine)."
    ),
    "structure.table_for_many": (
        "With two or more records, the ERP data is laid out as a table or aligned list with clear "
        "column labels and consistent formats for amounts, dates and ids."
    ),
    "groundedness.erp_figures": (
        "Every amount, count and id given as an ERP fact appears in, or is computed from, an ERP "
        "tool output of the run."
    ),
}

# Scenario-specific depth for obligations.
SCENARIO_DEPTH: dict[str, dict[str, str]] = {
    "Aged Balance": {
        "depth.aging_buckets": (
            "Amounts are tied to how long they are past due: the aging buckets (current, 1-30, "
            "31-60, 61-90, over 90 days) or the overdue threshold or due-date window the question "
            "sets, with the as-of date stated."
        ),
    },
    "Outstanding Balance": {
        "depth.open_items": (
            "The open balance is tied to the open documents behind it (invoice numbers with open "
            "amounts), or the response says there are none."
        ),
    },
    "Credit Limit": {
        "depth.limit_vs_balance": (
            "Each customer's credit position comes with the figures behind it: credit limit, "
            "balance, and available credit or the amount over the limit, or the hold status, as "
            "the question asks."
        ),
    },
    "Credit Rating": {
        "depth.rating_source": "The rating is given as recorded on the customer record in the ERP.",
    },
    "Customer Setup": {
        "depth.master_data": (
            "The requested master-data fields are given exactly as recorded (terms, contact, "
            "group, currency), and the account id is shown so the record is unambiguous."
        ),
    },
    "Payment History": {
        "depth.payment_details": (
            "Each payment is identified by its document or voucher number with date and amount, "
            "and totals or counts asked for are given."
        ),
    },
    "Invoicing History": {
        "depth.invoice_details": (
            "Invoices are identified by number with date and amount, and totals or counts asked "
            "for are given."
        ),
    },
    "Sales Orders": {
        "depth.order_details": (
            "Sales orders are identified by number with status and, where relevant, customer, "
            "amount or order date."
        ),
    },
    "Collections": {
        "depth.collections_details": (
            "Collection letters, levels, pools or agents are reported with their dates and the "
            "customer they concern."
        ),
    },
    "Collections Tasks": {
        "depth.activity_details": (
            "Each activity or case is described by id, type or purpose, status, owner and due date."
        ),
    },
    "Cash Collections": {
        "depth.collection_window": (
            "The period the collections were summed over is stated with the total and the number "
            "of payments."
        ),
    },
    "Cash Discounts": {
        "depth.discount_terms": (
            "Cash-discount terms are given with their percentage and window, and discount dates "
            "or amounts for the invoices concerned."
        ),
    },
    "Discounts": {
        "depth.deduction_details": (
            "Each deduction or discount is reported with the invoice it concerns, amount, reason "
            "and status."
        ),
    },
    "Credit Notes": {
        "depth.credit_note_details": (
            "Each credit note is identified by number with its original and still-unapplied amount."
        ),
    },
    "Dispute": {
        "depth.dispute_details": (
            "Each disputed invoice is reported with the dispute reason, amount, date and status."
        ),
    },
    "Vendor Balance": {
        "depth.balance_basis": (
            "The balance states its basis: which vendors or groups, which currency (transaction "
            "or accounting), and the as-of date."
        ),
    },
    "Vendors": {
        "depth.vendor_details": (
            "The vendor facts asked for (terms, discounts, holds, balances, creation dates) are "
            "given with the vendor account ids."
        ),
    },
    "AP Invoices": {
        "depth.ap_invoice_details": (
            "Vendor invoices are identified by number with vendor, amount, date and the status "
            "the question is about (approval, posting, matching, due date)."
        ),
    },
    "AP Payments": {
        "depth.ap_payment_details": (
            "Payments, journals or proposals are reported with vendor, amount, date and method "
            "as relevant."
        ),
    },
    "AP Purchase Orders": {
        "depth.po_details": (
            "Purchase orders are identified by number with status, date and amount."
        ),
    },
    "Other": {
        "depth.document_details": (
            "The documents or totals asked about are listed with number, date and amount, or "
            "their absence is stated."
        ),
    },
}

RESEARCH: dict[str, str] = {
    "accuracy.research_key": (
        "The facts in the response agree with the research key below: each figure within its "
        "stated precision, for the period, currency, scale and basis asked (GAAP unless the "
        "question asks for an adjusted, non-GAAP measure), using the latest figures published by "
        "the question's date (a restated or revised figure replaces the original); an item the "
        "key calls not disclosed or not yet reported is said to be so. Key: {ground_truth}"
    ),
    "citations.world_sources": (
        "Every research-world document the response cites resolves in the world, is about the "
        "company asked about, and states the figure it is cited for (or the figures it is "
        "computed from)."
    ),
    "citations.named_source": (
        "The response names where its data comes from: inline links to traceable URLs, or a "
        "specific named provider (a company filing such as the 10-K for a stated year, an "
        "exchange, a data vendor)."
    ),
    "depth.claims_backed": (
        "Each substantive claim carries a number, a date or a named source; estimates are marked "
        "as approximate."
    ),
    "depth.complete": (
        "Every part of the request is covered; anything that could not be found is named as "
        "missing."
    ),
    "depth.requested_metrics": (
        "The response reports each item the question asks for ({metrics}), or says which of them "
        "could not be found."
    ),
    "depth.comparative": (
        "Figures are put in context with a comparison the question invites (prior period, peers, "
        "industry or guidance), not reported in isolation."
    ),
    "depth.global_view": (
        "Where the question spans regions, the answer covers them evenly rather than only the "
        "United States."
    ),
    "recency.dated": (
        "Time-sensitive figures, prices and news carry their date or reporting period ('FY2024', "
        "'as of 30 Sep 2025') rather than 'currently' or 'recently'."
    ),
    "recency.period_asked": (
        "The data is for the period the user asked about ({period}); if that period is not yet "
        "reported, the response says so and uses the latest available period, naming it."
    ),
    "structure.comparison_table": (
        "Comparisons across companies or periods are laid out in a table or aligned list."
    ),
}

BRIEF_SECTIONS: dict[str, str] = {
    "depth.section_header": (
        "A company header section (or 'Company Profile', 'At a Glance', 'Snapshot') gives the "
        "legal name, ticker and exchange, company type and status."
    ),
    "depth.section_overview": (
        "A company overview section (or 'About', 'Business Description') covers what the company "
        "does, its leadership, founding and main locations."
    ),
    "depth.section_financials": (
        "A financials section (or 'Financial Highlights', 'Key Financials') gives valuation, "
        "income-statement and balance-sheet figures with their periods."
    ),
    "depth.section_strategy": (
        "A strategic moves section (or 'Strategy', 'Strategic Initiatives') names specific recent "
        "initiatives and their expected effect."
    ),
    "depth.section_segments": (
        "A lines of business section (or 'Segments', 'Products and Services') lists the major "
        "segments with their size or share."
    ),
    "depth.section_ar_ap": (
        "An accounts receivable / payable section (or 'AR/AP', 'Receivables and Payables') gives "
        "what our ERP holds for the company as a customer and as a vendor: open balances, "
        "overdue amounts and terms, or states plainly that it is neither."
    ),
    "depth.section_peers": (
        "A competitive or peer analysis section compares the company with named peers on more "
        "than one measure."
    ),
    "depth.section_news": (
        "A sentiment and top news section gives dated headlines and signals of market or analyst "
        "sentiment."
    ),
    "depth.section_highlights": (
        "A highlights section (or 'Key Takeaways', 'Executive Summary') pulls out the key facts, "
        "risks and opportunities."
    ),
}

BRIEF_EXTRA: dict[str, str] = {
    "citations.erp_link_ar_ap": (
        "The AR/AP figures link the ERP records they come from (customer or vendor record URLs)."
    ),
    "relevance.erp_reached_ar_ap": (
        "The AR/AP section rests on data retrieved from the ERP; if a tool or connection failure "
        "kept the agent from the ERP, this fails however well the failure is explained."
    ),
}

ALL_SECTIONS = tuple(BRIEF_SECTIONS)
BRIEF_KIND_SECTIONS: dict[str, tuple[str, ...]] = {
    "Business Brief": ALL_SECTIONS,
    "Company Overview": ALL_SECTIONS,
    "Corporate Profile": ALL_SECTIONS,
    "Executive Snapshot": (
        "depth.section_header",
        "depth.section_financials",
        "depth.section_strategy",
        "depth.section_ar_ap",
        "depth.section_news",
        "depth.section_highlights",
    ),
    "Highlights": (
        "depth.section_header",
        "depth.section_financials",
        "depth.section_ar_ap",
        "depth.section_news",
        "depth.section_highlights",
    ),
}


def _all_texts() -> dict[str, str]:
    texts = {**COMMON, **RESEARCH, **BRIEF_SECTIONS, **BRIEF_EXTRA}
    texts.update({f"obligations:{key}": value for key, value in OBLIGATIONS.items()})
    for scenario, assertions in SCENARIO_DEPTH.items():
        texts.update({f"{scenario}:{key}": value for key, value in assertions.items()})
    texts.update({f"kind:{kind}": ",".join(ids) for kind, ids in BRIEF_KIND_SECTIONS.items()})
    return texts


def rubric_version() -> str:
    """A short hash of every assertion template and section list: wording changes change it."""
    payload = json.dumps(_all_texts(), sort_keys=True, ensure_ascii=False)
    return "rubric-" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


RUBRIC_VERSION = rubric_version()


# --------------------------------------------------------------------------------------------------
# Building tags
# --------------------------------------------------------------------------------------------------


def build_tags(
    task_type: TaskType | str,
    *,
    scenario: str,
    records: int = 0,
    ground_truth: str | None = None,
    segment: str | None = None,
    period: str | None = None,
    comparison: bool = False,
    global_context: bool = False,
    sections: Sequence[str] | None = None,
    erp_grounded: bool = False,
    metrics: Sequence[str] = (),
    given_name: str | None = None,
    resolved_name: str | None = None,
) -> Tags:
    """The assertions for one item, by dimension.

    Args:
        task_type: obligations, entity_performance or business_brief.
        scenario: obligation scenario (e.g. ``Aged Balance``), research sub-kind, or brief kind
            (``Business Brief``, ``Company Overview``, ...).
        records: how many ERP records the right answer lists (obligations): 0 means "none found",
            2 or more requires a table.
        ground_truth: the reference answer (obligations, where it is required; a keyed research
            or brief item gets an accuracy assertion on it).
        segment: AR or AP for obligations (names the party in citation texts).
        period: the period a research question asks about, e.g. ``FY2024``.
        comparison: the research question asks for a comparison with peers or periods.
        global_context: the research question spans several regions.
        sections: brief section assertion ids to require; default depends on the brief kind.
        erp_grounded: the brief's company exists in the ERP (AR/AP section must use ERP data).
        metrics: the figures a research question names (adds a depth assertion listing them).
        given_name: how an obligation question names its party when that is worth checking
            (misspelled, partial or non-existent); ``resolved_name`` is the record it means, or
            None when no such party exists.
    """
    task_type = TaskType(task_type)
    if task_type is TaskType.obligations:
        tags = _obligation_tags(scenario, records, ground_truth, segment)
        if given_name:
            _reference_assertion(tags, segment, given_name, resolved_name)
        return tags
    if task_type is TaskType.entity_performance:
        tags = _research_tags(period, comparison, global_context, metrics)
    else:
        tags = _brief_tags(scenario, sections, erp_grounded)
    if ground_truth is not None:  # a keyed research item (the research world)
        text = RESEARCH["accuracy.research_key"].format(ground_truth=ground_truth)
        tags = _ordered({Dimension.accuracy: [_assertion("accuracy.research_key", text)], **tags})
        _add(tags, "citations.world_sources", RESEARCH["citations.world_sources"], "important")
    return tags


def _assertion(assertion_id: str, text: str, level: str = "critical") -> Assertion:
    return Assertion(id=assertion_id, text=text, level=level)


def _common(tags: Tags) -> Tags:
    for assertion_id, text in COMMON.items():
        dimension = Dimension(assertion_id.split(".", 1)[0])
        level = "important" if assertion_id == "clarity.quantified" else "critical"
        tags.setdefault(dimension, []).append(_assertion(assertion_id, text, level))
    return tags


def _add(tags: Tags, assertion_id: str, text: str, level: str = "critical") -> None:
    dimension = Dimension(assertion_id.split(".", 1)[0])
    tags.setdefault(dimension, []).append(_assertion(assertion_id, text, level))


def _obligation_tags(
    scenario: str, records: int, ground_truth: str | None, segment: str | None
) -> Tags:
    if not ground_truth:
        raise ValueError("obligation items need a ground_truth for the accuracy assertion")
    if scenario not in SCENARIO_DEPTH:
        known = ", ".join(sorted(SCENARIO_DEPTH))
        raise ValueError(f"unknown obligation scenario {scenario!r}; known: {known}")
    party = "vendor" if segment == "AP" else "customer"
    tags: Tags = {}
    _add(
        tags,
        "accuracy.ground_truth",
        OBLIGATIONS["accuracy.ground_truth"].format(ground_truth=ground_truth),
    )
    _common(tags)
    _add(tags, "citations.erp_link", OBLIGATIONS["citations.erp_link"].format(party=party))
    _add(tags, "depth.complete", OBLIGATIONS["depth.complete"])
    for assertion_id, text in SCENARIO_DEPTH[scenario].items():
        _add(tags, assertion_id, text, "important")
    if records == 0:
        _add(tags, "depth.absence_stated", OBLIGATIONS["depth.absence_stated"].format(party=party))
    _add(tags, "groundedness.erp_figures", OBLIGATIONS["groundedness.erp_figures"])
    _add(tags, "relevance.erp_reached", OBLIGATIONS["relevance.erp_reached"])
    if records >= 2:
        _add(tags, "structure.table_for_many", OBLIGATIONS["structure.table_for_many"])
    return _ordered(tags)


def _reference_assertion(tags: Tags, segment: str | None, given: str, resolved: str | None) -> None:
    party = "vendor" if segment == "AP" else "customer"
    if resolved:
        text = OBLIGATIONS["relevance.resolves_reference"].format(
            party=party, given=given, resolved=resolved
        )
        tags[Dimension.relevance].append(_assertion("relevance.resolves_reference", text))
    else:
        text = OBLIGATIONS["relevance.no_substitute"].format(party=party, given=given)
        tags[Dimension.relevance].append(_assertion("relevance.no_substitute", text))


def _research_tags(
    period: str | None, comparison: bool, global_context: bool, metrics: Sequence[str]
) -> Tags:
    tags = _common({})
    _add(tags, "citations.named_source", RESEARCH["citations.named_source"])
    _add(tags, "depth.claims_backed", RESEARCH["depth.claims_backed"])
    _add(tags, "depth.complete", RESEARCH["depth.complete"])
    if metrics:
        text = RESEARCH["depth.requested_metrics"].format(metrics=", ".join(metrics))
        _add(tags, "depth.requested_metrics", text)
    if comparison:
        _add(tags, "depth.comparative", RESEARCH["depth.comparative"], "important")
        _add(tags, "structure.comparison_table", RESEARCH["structure.comparison_table"], "minor")
    if global_context:
        _add(tags, "depth.global_view", RESEARCH["depth.global_view"], "important")
    _add(tags, "recency.dated", RESEARCH["recency.dated"])
    _add(
        tags,
        "recency.period_asked",
        RESEARCH["recency.period_asked"].format(
            period=period or "the period named in the question"
        ),
    )
    return _ordered(tags)


def _brief_tags(kind: str, sections: Sequence[str] | None, erp_grounded: bool) -> Tags:
    if sections is None:
        if kind not in BRIEF_KIND_SECTIONS:
            known = ", ".join(BRIEF_KIND_SECTIONS)
            raise ValueError(f"unknown brief kind {kind!r}; known: {known}")
        sections = BRIEF_KIND_SECTIONS[kind]
    unknown = [section for section in sections if section not in BRIEF_SECTIONS]
    if unknown:
        raise ValueError(f"unknown brief sections {unknown}; known: {', '.join(BRIEF_SECTIONS)}")
    tags = _common({})
    _add(tags, "citations.named_source", RESEARCH["citations.named_source"])
    if erp_grounded:
        _add(tags, "citations.erp_link_ar_ap", BRIEF_EXTRA["citations.erp_link_ar_ap"])
        _add(tags, "relevance.erp_reached_ar_ap", BRIEF_EXTRA["relevance.erp_reached_ar_ap"])
    for section in sections:
        _add(tags, section, BRIEF_SECTIONS[section])
    _add(tags, "recency.dated", RESEARCH["recency.dated"])
    _add(
        tags,
        "recency.period_asked",
        RESEARCH["recency.period_asked"].format(period="the latest reported period"),
    )
    return _ordered(tags)


def _ordered(tags: Tags) -> Tags:
    """Dimensions in one fixed order so files and hashes do not depend on insertion order."""
    return {dimension: tags[dimension] for dimension in Dimension if dimension in tags}
