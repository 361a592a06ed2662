"""The deterministic judge: every check on answers written to pass and to fail."""

from __future__ import annotations

import sqlite3

import pytest

from judge import RULES_BY_ASSERTION, RulesJudge, check_fact, rule_for
from judge import _extract as x
from judge._base import JudgeItem
from judge._erp_links import find_erp_links
from ledgerbench_core.dataset import Dimension, ExpectedFact, TaskType
from ledgerbench_core.dataset._rubric import build_tags
from ledgerbench_core.scores import DimensionStatus
from ledgerbench_core.trajectory import ToolCall
from tests.fakes.judge_data import question, trajectory, two_customers

pytestmark = pytest.mark.timeout(60)


def fact(kind: str, value, field: str = "f", **kw) -> ExpectedFact:
    return ExpectedFact(kind=kind, field=field, value=value, **kw)


def passes(answer: str, expected: ExpectedFact) -> bool:
    verdict = check_fact(answer, expected)
    assert verdict.score in (0.0, 1.0), verdict
    return verdict.score == 1.0


# -- amounts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "The open balance is $1,234,567.89.",
        "Balance: 1234567.89",
        "USD 1,234,567.89 is outstanding",
        "about $1,234,568 (rounded to whole dollars)",
        "approximately USD 1,234,568",
        "€1.234.567,89",
        "1.234.567,89 EUR",
        "1,234,567.89 USD",
        "The balance is US$ 1,234,567.89 as of March 2, 2026.",
    ],
)
def test_amount_in_any_common_format_passes(answer: str) -> None:
    assert passes(answer, fact("amount", 1234567.89, tolerance=0.01))


@pytest.mark.parametrize(
    "answer",
    [
        "The open balance is $1,234,576.89.",  # transposed digits
        "about $1.3M",  # rounded the wrong way
        "about $1.2M",  # rounded past whole units: amounts match to the cent
        "roughly USD 1.2M in total",
        "1.2 million dollars",
        "about USD 1 million",
        "$1,234,568",  # whole units without saying it rounds
        "USD 12,345,678.90",
        "The balance is 1234.56",
        "No balance figure given.",
    ],
)
def test_wrong_amount_fails(answer: str) -> None:
    assert not passes(answer, fact("amount", 1234567.89, tolerance=0.01))


def test_negative_amounts_parentheses_and_minus() -> None:
    expected = fact("amount", -250.0, tolerance=0.01)
    assert passes("Credit balance of (250.00)", expected)
    assert passes("Balance: -$250.00", expected)
    assert passes("Balance: (USD 250.00)", expected)
    assert passes("a credit balance of $250.00", expected)  # sign carried by the words
    assert not passes("Balance: (250.00)", fact("amount", 250.0, tolerance=0.01))


def test_rounding_only_when_stated_and_only_to_whole_units() -> None:
    expected = fact("amount", 1234.56, tolerance=0.01)
    assert not passes("$1,235", expected)  # fewer digits, no word that it rounds
    assert passes("about $1,235", expected)
    assert passes("$1,235 (rounded)", expected)
    assert passes("Amounts are rounded to whole dollars. Balance: $1,235", expected)
    assert not passes("about $1.2 thousand", expected)  # rounded past whole units
    assert not passes("$1,234.00", expected)  # cents shown, and wrong
    assert passes("$1.2M", fact("amount", 1_200_000.0))  # short form of an exact figure
    assert not passes("about CAD 0.1 million", fact("amount", 123775.94, tolerance=0.01))


def test_negated_or_contrasted_figures_do_not_count() -> None:
    expected = fact("amount", 1234.56, tolerance=0.01)
    assert not passes("The balance is USD 1,246.90 (1,234.56 is NOT the figure).", expected)
    assert not passes("USD 1,246.90 instead of USD 1,234.56", expected)
    assert not passes("The balance is USD 1,246.90; previously USD 1,234.56.", expected)
    assert not passes("The balance is not USD 1,234.56 but USD 1,246.90.", expected)
    assert passes("USD 1,234.56 instead of the USD 1,246.90 reported earlier", expected)
    assert passes("The customer has not paid: the balance is USD 1,234.56.", expected)
    assert passes("USD 1,234.56 is not yet due.", expected)
    assert not passes("84 unassigned customers (83 in the previous run)", fact("count", 83))
    assert passes("83 unassigned customers (84 in the previous run)", fact("count", 83))


def test_the_stated_figure_must_be_right_even_if_the_right_one_appears_later() -> None:
    expected = fact("amount", 12345.58, field="balance", tolerance=0.01)
    wrong_headline = "The balance is USD 12,469.04.\n\nLedger figure: USD 12,345.58."
    assert not passes(wrong_headline, expected)
    verdict = check_fact(wrong_headline, expected)
    assert verdict.certain and "12,469.04" in verdict.reason
    # another expected amount stated first is no competitor
    overdue = fact("amount", 12000.00, field="overdue", tolerance=0.01)
    answer = "Overdue USD 12,000.00 of a balance of USD 12,345.58."
    assert check_fact(answer, expected, (expected, overdue)).score == 1.0
    # a far-off figure first (a credit limit) is context, not a competing statement
    assert passes("Credit limit USD 50,000.00; balance USD 12,345.58.", expected)


def test_table_cell_for_the_record_decides() -> None:
    answer = (
        "| Customer | Over by |\n|---|---|\n| SYNCUS-0507 | 5,777.00 |\n| SYNCUS-0657 | 6,518.47 |"
    )
    first = fact("amount", 6518.47, field="excess_SYNCUS-0507", tolerance=0.01)
    second = fact("amount", 5777.0, field="excess_SYNCUS-0657", tolerance=0.01)
    assert check_fact(answer, first, (first, second)).score == 0.0  # rows swapped
    swapped_back = answer.replace("5,777.00", "X").replace("6,518.47", "5,777.00")
    swapped_back = swapped_back.replace("X", "6,518.47")
    assert check_fact(swapped_back, first, (first, second)).score == 1.0


def test_zero_amount_in_words() -> None:
    assert passes("The customer owes nothing: the balance is zero.", fact("amount", 0.0))


def test_account_ids_are_not_numbers() -> None:
    assert not passes("Customer SYNCUS-0001 has open invoices.", fact("count", 1))
    assert not x.find_numbers("SYNCUS-0001 INV-000123")


# Record links carry the ERP server's port, a free port that changes with every server start
# (32768-60999 on Linux): read as a figure, a port within 10% of an expected amount made a right
# answer wrong for some ports only, so the scripted agent's score moved from run to run.
EPHEMERAL_PORTS = range(32768, 61000, 97)


def _linked_answer(port: int) -> str:
    base = f"http://127.0.0.1:{port}/erp/USPI"
    return (
        f"The 2 largest sales orders of [Lozano Supply Co. (SYNCUS-0756)]({base}/customers/"
        f"SYNCUS-0756): [SO-0001872]({base}/sales-orders/SO-0001872) USD 35,958.00; "
        f"[SO-0001579]({base}/sales-orders/SO-0001579) USD 53,958.92.\n\n"
        f"| Sales order | Amount |\n|---|---|\n| {base}/sales-orders/SO-0001872 | 35,958.00 |\n"
        f"| /erp/USPI/vendor-groups/50000 | 53,958.92 |"
    )


def test_numbers_inside_record_links_are_not_stated_figures_whatever_the_port() -> None:
    first = fact("amount", 35958.0, field="largest", tolerance=0.01)
    second = fact("amount", 53958.92, field="second", tolerance=0.01)
    wrong = [
        port
        for port in EPHEMERAL_PORTS
        for expected in (first, second)
        if check_fact(_linked_answer(port), expected).score != 1.0
    ]
    assert not wrong, f"judged wrong with the server on ports {wrong[:5]}..."
    stated = [m.value for m in x.find_numbers(_linked_answer(35000))]
    assert stated == [2.0, 35958.0, 53958.92, 35958.0, 53958.92]


def test_a_link_does_not_hide_the_wrong_figure_next_to_it() -> None:
    answer = "[SO-0001872](http://127.0.0.1:35958/erp/USPI/sales-orders/SO-0001872) USD 36,958.00"
    verdict = check_fact(answer, fact("amount", 35958.0, tolerance=0.01))
    assert verdict.score == 0.0 and "36,958.00" in verdict.reason


def test_years_of_dates_are_not_stated_figures() -> None:
    balance = fact("amount", 2038.26, field="balance", tolerance=0.01)
    for written in ("March 2, 2026", "2 March 2026", "2026-03-02", "03/02/2026"):
        answer = f"The balance as of {written} is **USD 2,038.26** over 1 open transaction."
        assert check_fact(answer, balance).score == 1.0, written
    assert passes("USD 2,026.00 was paid on March 2, 2026.", fact("amount", 2026.0))
    assert not passes("Paid on March 2, 2026.", fact("amount", 2026.0))
    # a day-month-year look-alike with a two-digit year is a range, not a date
    assert [m.value for m in x.find_numbers("from 12.5-13.5% on 1.25-35")] == [12.5, 1.25]


# -- counts, percents, dates --------------------------------------------------------------------


def test_counts_digits_words_and_not_dates() -> None:
    assert passes("There are 3 overdue invoices.", fact("count", 3))
    assert passes("Three invoices are overdue.", fact("count", 3))
    assert not passes("As of March 3, 2026 the customer owes $3.00.", fact("count", 3))
    assert passes("There are no open invoices.", fact("count", 0))
    assert not passes("There are 4 overdue invoices.", fact("count", 3))


def test_percent() -> None:
    assert passes("A 2% cash discount applies within 10 days.", fact("percent", 2.0, tolerance=0.1))
    assert passes("Discount: 2.0 percent", fact("percent", 2.0, tolerance=0.1))
    assert not passes("A 3% discount applies.", fact("percent", 2.0, tolerance=0.1))


@pytest.mark.parametrize(
    "answer",
    [
        "Due on 2026-03-02.",
        "Due March 2, 2026.",
        "due 2 Mar 2026",
        "due 03/02/2026",
        "2nd of March, 2026",
    ],
)
def test_dates_in_common_formats(answer: str) -> None:
    assert passes(answer, fact("date", "2026-03-02"))


def test_wrong_date_fails() -> None:
    assert not passes("Due March 12, 2026.", fact("date", "2026-03-02"))


# -- ids, names, top-N, no records, booleans ----------------------------------------------------


def test_ids_and_names() -> None:
    assert passes("Customer syncus-0001 owes...", fact("id", "SYNCUS-0001"))
    assert not passes("Customer SYNCUS-00011 owes...", fact("id", "SYNCUS-0001"))
    assert passes("FOREST   wholesale, inc owes", fact("name", "Forest Wholesale, Inc."))
    assert not passes("Forest Traders owes", fact("name", "Forest Wholesale"))


TOP = ["SYNCUS-0003", "SYNCUS-0001", "SYNCUS-0007"]


def test_top_n_membership_and_order() -> None:
    in_order = (
        "| # | customer |\n|---|---|\n| 1 | SYNCUS-0003 |\n| 2 | SYNCUS-0001 |\n| 3 | SYNCUS-0007 |"
    )
    swapped = in_order.replace("SYNCUS-0003", "TMP").replace("SYNCUS-0001", "SYNCUS-0003")
    swapped = swapped.replace("TMP", "SYNCUS-0001")
    missing = in_order.replace("SYNCUS-0007", "SYNCUS-0009")
    assert passes(in_order, fact("top_n", TOP))
    assert not passes(swapped, fact("top_n", TOP))
    assert passes(swapped, fact("top_n", TOP, ordered=False))
    assert not passes(missing, fact("top_n", TOP, ordered=False))


def test_top_ten_out_of_order_fails() -> None:
    ids = [f"SYNCUS-{n:04d}" for n in (12, 5, 33, 8, 41, 2, 19, 27, 3, 50)]
    rows = "\n".join(f"| {i + 1} | {cid} |" for i, cid in enumerate(ids))
    table = "| rank | account |\n|---|---|\n" + rows
    assert passes(table, fact("top_n", ids))
    reordered = [*ids[:4], ids[5], ids[4], *ids[6:]]
    rows = "\n".join(f"| {i + 1} | {cid} |" for i, cid in enumerate(reordered))
    assert not passes("| rank | account |\n|---|---|\n" + rows, fact("top_n", ids))


def test_no_records_phrases() -> None:
    expected = fact("no_records", True)
    for answer in [
        "There are no open invoices for SYNCUS-0001.",
        "No records were found for that vendor.",
        "I could not find any disputes in USMF.",
        "The customer does not exist in USMF.",
    ]:
        assert passes(answer, expected), answer
    assert not passes("SYNCUS-0001 has 2 open invoices totalling $500.", expected)


def test_boolean() -> None:
    assert passes("Yes - the customer is on hold.", fact("boolean", True))
    assert not passes("No, the customer is not on hold.", fact("boolean", True))
    assert passes("No, the customer is not on hold.", fact("boolean", False))


def test_tables() -> None:
    assert x.has_markdown_table("| a | b |\n|---|:---:|\n| 1 | 2 |")
    assert not x.has_markdown_table("a | b\nno separator row")


# -- mapping ------------------------------------------------------------------------------------


def test_every_rule_mapping_targets_real_rubric_ids() -> None:
    """The ids the rules decide are the ids the dataset's rubric produces."""
    obligation = build_tags(
        TaskType.obligations, scenario="Aged Balance", records=3, ground_truth="x", segment="AR"
    )
    brief = build_tags(TaskType.business_brief, scenario="Business Brief", erp_grounded=True)
    keyed_entity = build_tags(
        TaskType.entity_performance, scenario="revenue", period="FY2024", ground_truth="x"
    )
    keyed_brief = build_tags(TaskType.business_brief, scenario="Business Brief", ground_truth="x")
    from synthetic_erp._operations import operations_tags  # conversations' one assertion

    conversation = operations_tags("x")
    rubric_ids = {
        a.id
        for tags in (obligation, brief, keyed_entity, keyed_brief, conversation)
        for items in tags.values()
        for a in items
    }
    separate_parts = {
        "citations.erp_link_present",
        "citations.erp_link_resolves",
        "citations.erp_link_on_topic",
    }
    assert set(RULES_BY_ASSERTION) - separate_parts <= rubric_ids
    decided = {
        a.id for d, items in obligation.items() for a in items if rule_for(d, a.id) is not None
    }
    assert decided == {
        "accuracy.ground_truth",
        "citations.erp_link",
        "structure.answer_first",
        "structure.table_for_many",
        "relevance.erp_reached",
        "groundedness.supported",  # its rule abstains (needs an LLM) unless the item is keyed
    }
    assert rule_for(Dimension.clarity, "clarity.acronyms") is None


# -- the rules judge on whole items -------------------------------------------------------------


def test_rules_judge_accuracy_partial_credit_and_needs_llm() -> None:
    q = question(
        tags={
            Dimension.accuracy: ["accuracy.ground_truth"],
            Dimension.clarity: ["clarity.acronyms"],
        },
        expected=[
            fact("amount", 1234.56, field="balance", tolerance=0.01),
            fact("id", "SYNCUS-0001", field="account"),
            fact("count", 2, field="open_invoices"),
            fact("date", "2026-03-02", field="as_of"),
        ],
    )
    answer = "As of March 2, 2026, SYNCUS-0001 owes $1,234.56 on 5 open invoices."
    outcome = RulesJudge().score(JudgeItem(q, trajectory(answer=answer)))
    accuracy = outcome.dimensions[Dimension.accuracy]
    assert accuracy.status is DimensionStatus.scored
    assert accuracy.score == 0.75  # 3 of 4 facts
    assert "open_invoices" in accuracy.assertions[0].reason
    clarity = outcome.dimensions[Dimension.clarity]
    assert clarity.status is DimensionStatus.needs_llm
    assert clarity.score is None
    assert clarity.assertions[0].reason == "needs an LLM judge"


def test_rules_judge_structure_table_and_answer_first() -> None:
    ids = ["SYNCUS-0003", "SYNCUS-0001"]
    q = question(
        tags={Dimension.structure: ["structure.answer_first", "structure.table_for_many"]},
        expected=[
            fact("top_n", ids, field="largest"),
            fact("amount", 900.0, field="total", tolerance=0.01),
        ],
    )
    good = (
        "The two largest balances total $900.00.\n\n| account | balance |\n|---|---|\n"
        "| SYNCUS-0003 | $600.00 |\n| SYNCUS-0001 | $300.00 |"
    )
    bad = (
        "Here is some background on aging.\nBalances are computed daily.\n"
        "We looked at all customers.\n"
        "SYNCUS-0003 has $600.00 and SYNCUS-0001 has $300.00, $900.00 in total."
    )
    judge = RulesJudge()
    scored = judge.score(JudgeItem(q, trajectory(answer=good))).dimensions[Dimension.structure]
    assert [a.score for a in scored.assertions] == [1.0, 1.0]
    scored = judge.score(JudgeItem(q, trajectory(answer=bad))).dimensions[Dimension.structure]
    assert [a.score for a in scored.assertions] == [0.0, 0.0]
    as_list = "Total: $900.00\n- SYNCUS-0003: $600.00\n- SYNCUS-0001: $300.00"
    scored = judge.score(JudgeItem(q, trajectory(answer=as_list))).dimensions[Dimension.structure]
    assert [a.score for a in scored.assertions] == [1.0, None]


def test_erp_reached_fails_only_for_certain() -> None:
    q = question(tags={Dimension.relevance: ["relevance.erp_reached"]})
    judge = RulesJudge()
    failed = ToolCall(name="get_customer", server="erp", is_error=True, output="connection refused")
    ok = ToolCall(name="mcp__erp__get_customer", output="{}")
    no_calls = judge.score(JudgeItem(q, trajectory())).dimensions[Dimension.relevance]
    assert no_calls.assertions[0].score == 0.0
    all_failed = judge.score(JudgeItem(q, trajectory(tool_calls=[failed]))).dimensions[
        Dimension.relevance
    ]
    assert all_failed.assertions[0].score == 0.0
    reached = judge.score(JudgeItem(q, trajectory(tool_calls=[failed, ok]))).dimensions[
        Dimension.relevance
    ]
    assert reached.assertions[0].score is None
    assert reached.status is DimensionStatus.needs_llm


# -- ERP links, resolved against a real generated ERP -------------------------------------------


@pytest.fixture(scope="module")
def erp_records(erp_db_url: str) -> dict[str, str]:
    le, account, other = two_customers(erp_db_url)
    return {"le": le, "account": account, "other": other}


def _link_question(records: dict[str, str], **kw):
    path = f"/erp/{records['le']}/customers/{records['account']}"
    return question(
        tags={Dimension.citations: ["citations.erp_link"]},
        record_refs=[path],
        expected=[fact("amount", 1234.56, tolerance=0.01)],
        **kw,
    )


def _citation_score(judge: RulesJudge, q, answer: str) -> tuple[float | None, str]:
    dim = judge.score(JudgeItem(q, trajectory(answer=answer))).dimensions[Dimension.citations]
    return dim.assertions[0].score, dim.assertions[0].reason


def test_erp_links_present_resolving_and_on_topic(
    erp_db_url: str, erp_records: dict[str, str]
) -> None:
    judge = RulesJudge(erp_db_url=erp_db_url)
    q = _link_question(erp_records)
    le, account, other = erp_records["le"], erp_records["account"], erp_records["other"]
    good = f"The balance is $1,234.56 ([{account}](http://127.0.0.1:8000/erp/{le}/customers/{account}))."
    assert _citation_score(judge, q, good)[0] == 1.0
    bare_path = f"Balance $1,234.56, see /erp/{le}/customers/{account}."
    assert _citation_score(judge, q, bare_path)[0] == 1.0

    score, reason = _citation_score(judge, q, "The balance is $1,234.56.")
    assert score == 0.0 and "no ERP record link" in reason

    invented = f"See http://erp.local/erp/{le}/customers/SYNCUS-9999 for details."
    score, reason = _citation_score(judge, q, invented)
    assert score == 0.0 and "point to no record" in reason

    wrong_record = f"See http://erp.local/erp/{le}/customers/{other}."
    score, reason = _citation_score(judge, q, wrong_record)
    assert score == 0.0 and "but the answer is about" in reason

    malformed = f"See http://erp.local/erp/{le}/no-such-set/{account}."
    score, reason = _citation_score(judge, q, malformed)
    assert score == 0.0 and "malformed" in reason
    judge.close()


def test_erp_link_not_needed_when_nothing_found(erp_db_url: str) -> None:
    q = question(
        tags={Dimension.citations: ["citations.erp_link"]},
        expected=[fact("no_records", True)],
        record_refs=[],
    )
    score, _ = _citation_score(RulesJudge(erp_db_url=erp_db_url), q, "There are no open invoices.")
    assert score == 1.0


def test_an_answer_whose_links_need_the_erp_is_unscored_without_it(
    erp_records: dict[str, str],
) -> None:
    q = _link_question(erp_records)
    answer = f"See /erp/{erp_records['le']}/customers/{erp_records['account']}."
    outcome = RulesJudge(erp_db_url=None).score(JudgeItem(q, trajectory(answer=answer)))
    assert outcome.unscored and "ERP" in outcome.unscored and outcome.dimensions == {}
    # Without a link the same item is scored: no check of this answer reads the ERP.
    plain = RulesJudge(erp_db_url=None).score(JudgeItem(q, trajectory(answer="$1,234.56")))
    assert plain.unscored is None and Dimension.citations in plain.dimensions


def test_find_erp_links_deduplicates_url_and_path() -> None:
    text = "[A](http://h:1/erp/USMF/customers/SYNCUS-0001), again http://h:1/erp/USMF/customers/SYNCUS-0001."
    links = find_erp_links(text)
    assert [link.path for link in links] == ["/erp/USMF/customers/SYNCUS-0001"]


def test_run_finds_the_erp_by_snapshot_or_refuses(
    tmp_path, erp_db_url: str, erp_records: dict[str, str]
) -> None:
    from judge import JudgeRunConfig, JudgeRunError, read_scores, run_judge
    from judge._grading import RULES_GRADING
    from judge._inputs import erp_snapshot
    from tests.fakes.judge_data import write_run

    q = _link_question(erp_records)
    link = f"/erp/{erp_records['le']}/customers/{erp_records['account']}"
    t = trajectory(q.id, answer=f"The balance is $1,234.56 ({link}).")
    snapshot = erp_snapshot(erp_db_url)

    run_dir = write_run(
        tmp_path / "ok", [q], [t], erp_db_url=erp_db_url, erp_snapshot_hash=snapshot
    )
    result = run_judge(JudgeRunConfig(run_dir=run_dir, progress=False))
    (record,), _ = read_scores(result.scores_path)
    assert record.dimensions[Dimension.citations].score == 1.0  # found at the manifest's path
    assert record.erp_snapshot_hash == snapshot and record.grading_version == RULES_GRADING

    other = write_run(
        tmp_path / "other", [q], [t], erp_db_url=erp_db_url, erp_snapshot_hash="0" * 64
    )
    with pytest.raises(JudgeRunError, match="no ERP database with the run's snapshot 000000000000"):
        run_judge(JudgeRunConfig(run_dir=other, progress=False))
    with pytest.raises(JudgeRunError, match=r"--erp-db .* holds ERP snapshot .* but the run used"):
        run_judge(JudgeRunConfig(run_dir=other, erp_db=erp_db_url, progress=False))
    assert not (other / "scores").exists(), "a refusal writes nothing"

    redacted = write_run(tmp_path / "pg", [q], [t], erp_db_url="postgresql://u:***@db.example/erp")
    with pytest.raises(JudgeRunError, match=r"older format.*--erp-db"):
        run_judge(JudgeRunConfig(run_dir=redacted, progress=False))

    missing = f"sqlite:///{tmp_path / 'missing.db'}"
    with pytest.raises(JudgeRunError, match="--erp-db"):
        run_judge(JudgeRunConfig(run_dir=run_dir, erp_db=missing, progress=False, overwrite=True))


def test_links_with_quoted_keys_resolve(erp_db_url: str) -> None:
    """The catalogue quotes keys like ``2%10Net30``; such links are real records, not malformed."""
    from synthetic_erp import record_path

    path = erp_db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        row = db.execute(
            "select legal_entity, terms_id from payment_terms "
            "where instr(terms_id, '%') > 0 limit 1"
        ).fetchone()
    if row is None:
        pytest.skip("the generated ERP has no payment terms with a % in their id")
    link = record_path("payment-terms", row[0], row[1])
    assert "%25" in link
    q = question(tags={Dimension.citations: ["citations.erp_link"]}, record_refs=[link])
    score, reason = _citation_score(RulesJudge(erp_db_url=erp_db_url), q, f"Terms: http://h{link}")
    assert score == 1.0, reason
    bogus = link.replace("payment-terms", "no-such-set")
    score, reason = _citation_score(RulesJudge(erp_db_url=erp_db_url), q, f"See http://h{bogus}")
    assert score == 0.0 and "malformed" in reason


def test_citations_cover_every_record_the_answer_names_up_to_five(
    erp_db_url: str, erp_records: dict[str, str]
) -> None:
    judge = RulesJudge(erp_db_url=erp_db_url)
    le, account, other = erp_records["le"], erp_records["account"], erp_records["other"]
    q = question(
        tags={Dimension.citations: ["citations.erp_link"]},
        record_refs=[f"/erp/{le}/customers/{account}", f"/erp/{le}/customers/{other}"],
        expected=[fact("count", 2, field="customers")],
        ground_truth=f"2 customers: {account}, {other}.",
        query="Which customers are on credit hold?",
    )
    first, second = (f"http://h:1/erp/{le}/customers/{key}" for key in (account, other))
    both = f"2 customers: [{account}]({first}), [{other}]({second})."
    assert _citation_score(judge, q, both)[0] == 1.0
    one = f"2 customers: [{account}]({first}), {other}."
    score, reason = _citation_score(judge, q, one)
    assert score == 0.0 and "up to 5" in reason and other in reason
    # a link labelled with one account but pointing at another
    swapped = f"2 customers: [{other}]({first}), [{account}]({second})."
    score, reason = _citation_score(judge, q, swapped)
    assert score == 0.0 and f"labelled {other}" in reason


def test_the_answer_must_name_the_party_asked_about() -> None:
    q = question(
        tags={Dimension.accuracy: ["accuracy.ground_truth"]},
        expected=[fact("amount", 2787.20, field="balance", tolerance=0.01)],
        record_refs=["/erp/USPI/customers/SYNCUS-0713"],
        ground_truth="The balance of Rios Hardware (SYNCUS-0713) in USPI is USD 2,787.20.",
        query="What is the total unpaid customer balance for Rios Hardwre in USPI?",  # typo
    )
    link = "(http://h:1/erp/USPI/customers/SYNCUS-0713)"

    def accuracy(answer: str) -> tuple[float | None, str]:
        dim = RulesJudge().score(JudgeItem(q, trajectory(answer=answer))).dimensions
        return dim[Dimension.accuracy].score, dim[Dimension.accuracy].assertions[0].reason

    assert accuracy(f"[SYNCUS-0713]{link} owes USD 2,787.20.")[0] == 1.0
    assert accuracy("Rios Hardware owes USD 2,787.20.")[0] == 1.0  # the exact name will do
    score, reason = accuracy(f"[SYNCUS-0714]{link} owes USD 2,787.20.")
    assert score == 0.0 and "SYNCUS-0714" in reason
    score, reason = accuracy(f"The [customer]{link} owes USD 2,787.20.")  # only the link names it
    assert score == 0.0 and "does not name SYNCUS-0713" in reason


def test_ids_inside_urls_are_not_stated() -> None:
    answer = "The largest invoice is [here](http://h:1/erp/USMF/customer-transactions/CIV-0001461)."
    assert not passes(answer, fact("id", "CIV-0001461"))
    assert passes(answer.replace("[here]", "[CIV-0001461]"), fact("id", "CIV-0001461"))
