"""The research rules read the claims an answer makes (issue 37): "not yet reported" beside a
figure, a yes that says "no doubt", a competing figure, a figure beside another company's name,
a canned reply that names no period. No world is needed: these read the answer and the key."""

from __future__ import annotations

import pytest

from judge._research import check_research_fact, competing_figure
from ledgerbench_core.dataset import ExpectedFact, Question, TaskType

pytestmark = pytest.mark.timeout(60)


def keyed(*facts: ExpectedFact) -> Question:
    return Question(
        id="wld-ent-900",
        query="What was Acme Corp.'s revenue for fiscal 2026?",
        task_type=TaskType.entity_performance,
        segment="Financial Performance & Financial Health",
        scenario="fy_metric",
        expected=list(facts),
        gold_documents=["https://w.test/w0123456789/docs/d0123456789ab"],
    )


def revenue(value: float, period: str = "FY2025", **kw) -> ExpectedFact:
    return ExpectedFact(
        kind="amount", field="revenue", value=value, scale="millions", currency="USD",
        tolerance=0.05, period=period, **kw,
    )  # fmt: skip


PENDING = ExpectedFact(
    kind="not_disclosed", field="revenue", value="not yet reported", period="FY2026"
)
LATEST = revenue(1204.3)
RIGHT = (
    "Acme Corp. has not yet reported fiscal 2026 results as of March 2, 2026, so its fiscal "
    "2026 revenue is not yet reported. The latest reported fiscal year is fiscal 2025: revenue "
    "$1,204.3 million."
)


def stated(answer: str, fact: ExpectedFact, q: Question) -> bool:
    return check_research_fact(answer, fact, q)[0]


@pytest.mark.parametrize(
    "invented",
    [
        " Its fiscal 2026 revenue came in at $1,288.6 million.",
        " That said, revenue was $1,288.6 million.",
        "\n\n| Period | Revenue |\n|---|---|\n| FY2026 | $1,288.6 million |",
    ],
)
def test_not_yet_reported_beside_a_figure_for_the_period_is_not_stated(invented: str) -> None:
    q = keyed(PENDING, LATEST)
    assert stated(RIGHT, PENDING, q)
    assert not stated(RIGHT + invented, PENDING, q)
    prior = " Fiscal 2024 revenue was $1,150.2 million."  # another period's figure is no claim
    assert stated(RIGHT + prior, PENDING, q)


def test_a_canned_not_reported_reply_names_no_period_and_scores_nothing() -> None:
    q = keyed(PENDING, LATEST)
    canned = "This figure has not been reported or disclosed yet."
    assert not stated(canned, PENDING, q) and not stated(canned, LATEST, q)
    named = "Fiscal 2026 is not yet reported; the latest reported year is FY2025."
    assert stated(named, PENDING, q)
    alone = keyed(PENDING)  # no reported year in the key: the pending period must be named
    assert not stated(canned, PENDING, alone)
    assert stated("Acme's fiscal 2026 revenue is not yet reported.", PENDING, alone)


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("No: I found no regulatory fine against Acme Corp. as of March 2, 2026.", True),
        ("No regulator has fined Acme Corp.", True),
        ("Yes, no doubt: the regulator fined it $3.1 million.", False),
        ("No doubt about it: the regulator fined it $3.1 million last year.", False),
        ("Yes. There is no question the regulator fined it.", False),
    ],
)
def test_a_none_item_reads_the_claim_not_the_first_words(answer: str, right: bool) -> None:
    none = ExpectedFact(kind="no_records", field="regulatory_actions")
    assert stated(answer, none, keyed(none)) is right


def test_a_yes_no_item_reads_the_verdict() -> None:
    faster = ExpectedFact(kind="boolean", field="grew_faster", value=False)
    q = keyed(faster)
    assert stated("No: Acme grew 1.4% against 11.7% for Beta.", faster, q)
    assert not stated("Yes, no doubt: Acme grew faster.", faster, q)
    assert not stated("No doubt, yes: Acme grew faster.", faster, q)


@pytest.mark.parametrize(
    "answer",
    [
        "Fiscal 2025 revenue was $1,204.3 million (another reading: $1,252.5 million).",
        "Fiscal 2025 revenue was $1,204.3 million, or $1,252.5 million by another reading.",
        "Fiscal 2025 revenue was $1,252.5 million or $1,204.3 million.",
        "Fiscal 2025 revenue was $1,204.3 million; some documents give $1,252.5 million.",
    ],
)
def test_a_competing_research_figure_fails_the_fact(answer: str) -> None:
    q = keyed(LATEST)
    assert not stated(answer, LATEST, q)
    assert competing_figure(answer, LATEST, (LATEST,)) is not None


@pytest.mark.parametrize(
    "answer",
    [
        "Fiscal 2025 revenue was $1,204.3 million, up from $1,150.2 million in fiscal 2024.",
        "Fiscal 2025 revenue was $1.2 billion ($1,204.3 million).",
        "Net debt was $1,204.3 million: total debt of $1,260.0 million less cash of $55.7 million.",
        "Fiscal 2025 revenue was $1,204.3 million (originally reported $1,198.0 million).",
        "Fiscal 2025 revenue was $1,204.3 million against guidance of $1,250.0 million.",
        # a share count beside an amount (per-share figures): no money, so no competitor
        "Fiscal 2025 revenue was $1,204.3 million; on the 1,198.4 million shares outstanding at "
        "the fiscal 2025 year end, revenue per share was $1.00.",
    ],
)
def test_other_figures_beside_the_right_one_are_no_competitors(answer: str) -> None:
    fact = (
        revenue(1204.3)
        if "Net debt" not in answer
        else revenue(1204.3).model_copy(update={"field": "net_debt"})
    )
    assert stated(answer, fact, keyed(fact)), check_research_fact(answer, fact, keyed(fact))


def test_a_figure_belongs_to_the_company_named_nearest() -> None:
    a = ExpectedFact(kind="percent", field="revenue_growth", value=1.4, subject="Cohen & Lara Co.")
    b = ExpectedFact(kind="percent", field="revenue_growth", value=11.7, subject="Welch Corp.")
    q = keyed(a, b)
    right = "Cohen & Lara Co.'s revenue grew 1.4% in fiscal 2025, against 11.7% for Welch Corp."
    swapped = "Cohen & Lara Co.'s revenue grew 11.7% in fiscal 2025, against 1.4% for Welch Corp."
    assert stated(right, a, q) and stated(right, b, q)
    assert not stated(swapped, a, q) and not stated(swapped, b, q)


RUNWAY = ExpectedFact(
    kind="ratio", field="cash_runway_months", value=8.6, tolerance=0.1, unit="months",
    period="2026-03-02",
)  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "stated"),
    [
        ("The runway as of March 2, 2026 is about **8.6 months**.", True),
        ("Cash lasts 8.7 months at the current net burn.", True),
        ("Cash lasts 1 month.", False),
        ("The runway is 8.9 months.", False),
        ("Cash covers 8.6x the monthly burn.", False),
        ("Runway: 18.6 months.", False),
    ],
)
def test_a_runway_in_months_is_read_in_months(answer: str, stated: bool) -> None:
    assert check_research_fact(answer, RUNWAY, keyed(RUNWAY))[0] is stated
