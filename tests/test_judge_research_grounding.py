"""Groundedness of research answers reads what the agent read (issue 38): a price change over a
window, which no document states, is grounded by the two closes the agent's ``prices`` calls
returned and by nothing else; a brief's ERP date is read in the lines of its own account."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from judge._extract import find_numbers
from judge._research import competing_figure, rule_research_facts, rule_world_groundedness
from judge._rules import RuleContext
from ledgerbench_core.dataset import ExpectedFact, Question, TaskType
from ledgerbench_core.trajectory import Termination, TerminationReason, ToolCall, TrajectoryRecord

pytestmark = pytest.mark.timeout(60)

DOC = "https://world.ledgerbench.test/w0123456789/docs/d0123456789ab"
START = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
CHANGE = ExpectedFact(
    kind="percent", field="share_price_change", value=2.8, tolerance=0.1,
    period="2022-01-06/2022-04-07", ask="price",
)  # fmt: skip
CAP = ExpectedFact(
    kind="amount", field="market_cap", value=1234.5, scale="millions", currency="GBP",
    tolerance=1.23, period="2022-04-07", sources=[DOC], ask="market_cap",
)  # fmt: skip
ANSWER = (
    f"Market capitalisation: £1,234.5 million ([MarketLens]({DOC})).\n\n"
    "Share price: +2.8% from the close on January 6, 2022 to the close on April 7, 2022."
)


def question(*facts: ExpectedFact, task_type: TaskType = TaskType.entity_performance) -> Question:
    return Question(
        id="wld-ent-901",
        query="Value Knowles & Gilbert & Co. at the close on April 7, 2022.",
        task_type=task_type,
        segment="Investor & Funding",
        scenario="valuation_snapshot",
        expected=list(facts),
        gold_documents=[DOC],
    )


def prices(*closes: tuple[str, float]) -> ToolCall:
    items = [
        {"date": d, "close": c, "shares_outstanding": 158.0, "market_cap": 1.0} for d, c in closes
    ]
    return ToolCall(name="prices", output=json.dumps({"ticker": "KNO", "items": items}))


def trajectory(answer: str, *calls: ToolCall) -> TrajectoryRecord:
    fetch = ToolCall(name="fetch", output=f"{DOC}\nMarket capitalisation 1,234.5", documents=[DOC])
    return TrajectoryRecord(
        question_id="wld-ent-901",
        task_type=TaskType.entity_performance,
        harness="scripted",
        answer=answer,
        status=Termination.of(TerminationReason.completed).status,
        termination=Termination.of(TerminationReason.completed),
        latency_s=1.0,
        timeout_s=60,
        tool_calls=[fetch, *calls],
        started_at=START,
        finished_at=START + dt.timedelta(seconds=1),
    )


def grounded(answer: str, *calls: ToolCall) -> float | None:
    ctx = RuleContext(
        question(CAP, CHANGE), answer, None, "groundedness.supported", trajectory(answer, *calls)
    )
    return rule_world_groundedness(ctx).score


def test_a_price_change_is_grounded_by_the_two_closes_read() -> None:
    both = prices(("2022-01-06", 7.5), ("2022-03-31", 7.8), ("2022-04-07", 7.71))
    assert grounded(ANSWER, both) == 1.0


@pytest.mark.parametrize(
    "calls",
    [
        (),  # no prices call: the change is read nowhere
        (prices(("2022-04-07", 7.71)),),  # only the window's end
        (prices(("2022-01-06", 7.0), ("2022-04-07", 7.71)),),  # closes that give another change
    ],
)
def test_a_price_change_without_its_closes_is_not_grounded(calls) -> None:
    assert grounded(ANSWER, *calls) < 1.0


def test_a_briefs_last_payment_date_is_read_in_its_accounts_lines() -> None:
    paid = ExpectedFact(
        kind="date", field="vendor_last_payment_date", value="2025-09-26",
        subject="GBSI/SYNVEN-0949", ask="ar_ap",
    )  # fmt: skip
    q = question(paid, task_type=TaskType.business_brief)
    own = "- Payable to Adatum (SYNVEN-0949) in GBSI: GBP 0.00; last payment on September 26, 2025."
    other = (
        "- Payable to Adatum (SYNVEN-0198) in USMF: USD 514.08; last payment on September 26, 2025."
    )
    mine = "- Payable to Adatum (SYNVEN-0949) in GBSI: GBP 0.00; last payment on May 2, 2025."

    def score(answer: str) -> float | None:
        return rule_research_facts(RuleContext(q, answer, None, "accuracy.research_key")).score

    assert score(own) == 1.0
    assert score(f"{mine}\n{other}") == 0.0  # the date is another account's


def test_a_year_before_an_amount_is_no_figure_of_its_currency() -> None:
    """A currency sign between two numbers is the second one's prefix: "fiscal 2024 $2,057.8
    million" states no "2024 $" rivalling a net debt of 2,057.8 million."""
    text = "Net debt at the end of fiscal 2024 $2,057.8 million, so EV $5,217.3 million."
    year, debt, _ = find_numbers(text)
    assert (year.value, year.has_currency) == (2024.0, False)
    assert debt.has_currency and abs(debt.value - 2_057_800_000) < 1
    fact = ExpectedFact(
        kind="amount", field="net_debt", value=2057.8, scale="millions", currency="USD",
        tolerance=0.05, period="FY2024",
    )  # fmt: skip
    assert competing_figure(text, fact, (fact,)) is None
    assert competing_figure(text + " Another reading: $2,011.0 million.", fact, (fact,))


def test_a_multiple_is_no_figure_whatever_its_size() -> None:
    """ "109.24x" is a multiple (read by the ratio rule), not the figure 109 a groundedness check
    would look for in the documents, as "37.58x" never was."""
    assert find_numbers("Runway: cash / annual burn = 109.24x.") == []
    assert [m.value for m in find_numbers("EV 5.17x; revenue 12.5% up")] == [12.5]
