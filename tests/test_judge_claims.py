"""The rules judge reads what an answer claims (issue 25): the currency and ledger side of every
amount, figures per record, whole lists, the legal entity and date it answers for,
contradictions, hedges, mislabelled links and every number form people write. Each test here
failed on the rules before issue 25 (rules-3)."""

from __future__ import annotations

import datetime as dt

import pytest

from judge import RulesJudge, check_fact
from judge import _claims as claims
from judge import _extract as x
from judge._base import JudgeItem
from judge._rules import RULES_VERSION
from ledgerbench_core.dataset import Dimension, ExpectedFact, Money
from tests.fakes.judge_data import question, trajectory, two_customers

pytestmark = pytest.mark.timeout(60)

AS_OF = dt.date(2026, 3, 2)


def amount(value: float, field: str = "balance", **kw) -> ExpectedFact:
    return ExpectedFact(kind="amount", field=field, value=value, tolerance=0.01, **kw)


def score(answer: str, fact: ExpectedFact, *siblings: ExpectedFact, q=None) -> float | None:
    return check_fact(answer, fact, (fact, *siblings) if siblings else (), q).score


def accuracy(q, answer: str, judge: RulesJudge | None = None) -> tuple[float | None, str]:
    judge = judge or RulesJudge()
    dimension = judge.score(JudgeItem(q, trajectory(answer=answer))).dimensions[Dimension.accuracy]
    return dimension.score, dimension.assertions[0].reason


def test_rules_version_moved_so_older_scores_are_judged_again() -> None:
    assert RULES_VERSION == "rules-9"


# -- currency ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("The balance is USD 1,234.56.", True),
        ("The balance is $1,234.56.", True),
        ("The balance is 1,234.56.", True),  # no currency written: not a mismatch
        ("The balance is EUR 1,234.56.", False),
        ("The balance is €1,234.56.", False),
        ("The balance is 1,234.56 euros.", False),
        ("The balance is GBP 1,234.56.", False),
    ],
)
def test_the_currency_of_an_amount_must_be_the_keys(answer: str, right: bool) -> None:
    fact = amount(1234.56, currency="USD")
    verdict = check_fact(answer, fact)
    assert (verdict.score == 1.0) is right, verdict
    if not right:
        assert verdict.certain and "wrong currency" in verdict.reason


def test_a_dollar_sign_is_any_dollar_and_a_conversion_is_no_competitor() -> None:
    assert score("CAD 126,526.59 ($126,526.59)", amount(126526.59, currency="CAD")) == 1.0
    # the same balance converted into the accounting currency, 8% apart, competes with nothing
    answer = "EUR: EUR 49,295.05 (USD 53,252.97 accounting)"
    assert score(answer, amount(49295.05, field="balance_EUR", currency="EUR")) == 1.0


def test_a_table_column_header_gives_bare_figures_their_currency() -> None:
    answer = (
        "| Currency | Balance | Balance (USD) |\n|---|---|---|\n| EUR | 49,295.05 | 53,252.97 |"
    )
    assert score(answer, amount(49295.05, field="balance_EUR", currency="EUR")) == 1.0
    wrong = "| Customer | Balance (EUR) |\n|---|---|\n| SYNCUS-0001 | 1,234.56 |"
    assert score(wrong, amount(1234.56, currency="USD")) == 0.0


def test_an_amount_in_two_currencies_passes_in_either_when_labelled() -> None:
    fact = amount(
        10000.0, field="amount", currency="EUR", equivalents=[Money(value=10800.0, currency="USD")]
    )
    assert score("The largest invoice: EUR 10,000.00.", fact) == 1.0
    assert score("The largest invoice: USD 10,800.00 (accounting currency).", fact) == 1.0
    assert score("The largest invoice: 10,800.00.", fact) == 0.0  # the other currency, unlabelled
    assert score("The largest invoice: USD 10,000.00.", fact) == 0.0


# -- debit and credit -------------------------------------------------------------------------


def test_cr_and_dr_are_read_against_the_facts_ledger_side() -> None:
    receivable = amount(2790.96, currency="GBP", side="debit")
    assert score("GBP 2,790.96", receivable) == 1.0
    assert score("GBP 2,790.96 DR", receivable) == 1.0
    verdict = check_fact("The balance is GBP 2,790.96 CR.", receivable)
    assert verdict.score == 0.0 and verdict.certain and "ledger side" in verdict.reason
    assert score("a credit balance of GBP 2,790.96", receivable) == 0.0
    payable = amount(1234.56, currency="USD", side="credit")
    assert score("We owe USD 1,234.56 CR.", payable) == 1.0
    assert score("We owe USD 1,234.56 Dr.", payable) == 0.0
    overpaid = amount(-500.0, currency="USD", side="debit")  # a customer in credit
    assert score("USD 500.00 CR", overpaid) == 1.0
    assert score("a credit balance of USD 500.00", overpaid) == 1.0
    assert score("USD 500.00 DR", overpaid) == 0.0
    assert score("its credit limit of USD 1,234.56", payable) == 1.0  # "credit limit" marks nothing


@pytest.mark.parametrize(
    "written",
    ["GBP 2,790.96CR", "GBP 2,790.96 Cr", "GBP 2,790.96 (CR)", "2,790.96 cr.", "CR GBP 2,790.96",
     "CR 2,790.96", "GBP 2,790.96 [CR]"],
)  # fmt: skip
def test_every_cr_notation_marks_a_credit(written: str) -> None:
    receivable = amount(2790.96, currency="GBP", side="debit")
    assert score(f"The balance is {written}.", receivable) == 0.0
    debit = written.replace("CR", "DR").replace("Cr", "Dr").replace("cr.", "dr.")
    assert score(f"The balance is {debit}.", receivable) == 1.0


def test_a_trailing_minus_is_a_minus() -> None:
    receivable = amount(2790.96, currency="GBP", side="debit")
    assert score("The balance is GBP 2,790.96-.", receivable) == 1.0  # a dash before the stop
    assert score("| SYNCUS-0001 | GBP 2,790.96- |", receivable) == 0.0
    assert score("The balance is GBP 2,790.96- as of today.", receivable) == 0.0


def test_a_dr_cr_column_or_a_credit_column_marks_the_figures_of_its_table() -> None:
    receivable = amount(2790.96, currency="GBP", side="debit")
    column = "| Account | Balance | Dr/Cr |\n|---|---|---|\n| SYNCUS-0001 | GBP 2,790.96 | {} |"
    assert score(column.format("CR"), receivable) == 0.0
    assert score(column.format("DR"), receivable) == 1.0
    split = "| Account | Debit | Credit |\n|---|---|---|\n| SYNCUS-0001 | {} |"
    assert score(split.format(" | GBP 2,790.96"), receivable) == 0.0
    assert score(split.format("GBP 2,790.96 | "), receivable) == 1.0
    payable = amount(2790.96, currency="GBP", side="credit")
    assert score(column.format("CR"), payable) == 1.0


def test_a_cr_mark_is_wrong_even_where_another_fact_has_the_same_value() -> None:
    balance = amount(5951.45, field="balance", currency="USD", side="debit")
    bucket = amount(5951.45, field="aging_current", currency="USD", side="debit")
    answer = "Balance **USD 5,951.45**.\n\n| Bucket | Amount | Dr/Cr |\n|---|---|---|\n"
    assert score(answer + "| current | USD 5,951.45 | DR |", bucket, balance) == 1.0
    assert score(answer + "| current | USD 5,951.45 | CR |", bucket, balance) == 0.0


def test_an_html_table_is_read_as_the_markdown_table_it_renders() -> None:
    rendered = claims.html_as_markdown(
        "Top two:<table><tr><th>Account</th><th>Past due</th></tr>"
        '<tr><td><a href="/erp/USMF/customers/SYNCUS-0473">SYNCUS-0473</a></td>'
        "<td>USD 61,501.75</td></tr><tr><td>SYNCUS-0096</td><td>USD&nbsp;43,201.00</td></tr>"
        "</table>"
    )
    assert "| Account | Past due |\n|---|---|\n" in rendered
    assert "[SYNCUS-0473](/erp/USMF/customers/SYNCUS-0473)" in rendered
    assert "| SYNCUS-0096 | USD\u00a043,201.00 |" in rendered
    assert score(rendered, FIRST, SECOND) == 1.0 and score(rendered, SECOND, FIRST) == 1.0
    page = claims.html_as_markdown(
        "<p>SYNCUS-0473 owes <strong>USD 61,501.75</strong>;<br>SYNCUS-0096 owes USD"
        " 43,201.00 (Hall &amp; Sons).</p><ul><li>due in &lt; 30 days</li></ul>"
    )
    assert page.startswith("SYNCUS-0473 owes USD 61,501.75;\nSYNCUS-0096 owes USD 43,201.00")
    assert "(Hall & Sons)" in page and "- due in < 30 days" in page
    assert score(page, FIRST, SECOND) == 1.0
    assert claims.html_as_markdown("less than < 30 days") == "less than < 30 days"
    swapped = rendered.replace("61,501.75", "x").replace("43,201.00", "61,501.75")
    assert score(swapped.replace("x", "43,201.00"), FIRST, SECOND) == 0.0


# -- per record -------------------------------------------------------------------------------


FIRST = amount(61501.75, field="past_due_SYNCUS-0473", currency="USD")
SECOND = amount(43201.00, field="past_due_SYNCUS-0096", currency="USD")


@pytest.mark.parametrize(
    "line",
    [
        "Top 2: Mccarthy (SYNCUS-0473) USD {a}; Thompson (SYNCUS-0096) USD {b}.",
        "Top 2: SYNCUS-0473 USD {a}, SYNCUS-0096 USD {b}.",
        "USD {a} for SYNCUS-0473 and USD {b} for SYNCUS-0096.",
        "- SYNCUS-0473: USD {a}\n- SYNCUS-0096: USD {b}",
    ],
)
def test_a_figure_counts_for_the_record_it_is_attached_to(line: str) -> None:
    right = line.format(a="61,501.75", b="43,201.00")
    swapped = line.format(a="43,201.00", b="61,501.75")
    assert score(right, FIRST, SECOND) == 1.0 and score(right, SECOND, FIRST) == 1.0
    assert score(swapped, FIRST, SECOND) == 0.0 and score(swapped, SECOND, FIRST) == 0.0


def test_a_wrong_table_cell_contradicts_the_right_prose() -> None:
    prose = "Mccarthy (SYNCUS-0473) USD 61,501.75; Thompson (SYNCUS-0096) USD 43,201.00.\n\n"
    table = (
        "| Customer | Past due |\n|---|---|\n| SYNCUS-0473 | USD {a} |\n"
        "| SYNCUS-0096 | USD 43,201.00 |"
    )
    assert score(prose + table.format(a="61,501.75"), FIRST, SECOND) == 1.0
    verdict = check_fact(prose + table.format(a="62,116.77"), FIRST, (FIRST, SECOND))
    assert verdict.score == 0.0 and "62,116.77" in verdict.reason


def test_other_columns_of_the_right_row_are_not_restatements() -> None:
    row = "| SYNCUS-0236 | Soto Corp. | 50,000.00 | 49,072.09 |"
    fact = amount(49072.09, field="excess_SYNCUS-0236", currency="USD")
    answer = "| Customer | Name | Credit limit | Over by |\n|---|---|---|---|\n" + row
    assert score(answer, fact) == 1.0


# -- contradictions, either order -------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "The balance is USD 12,345.58.\n\nLedger figure: USD 12,469.04.",  # right first (new)
        "The balance is USD 12,469.04.\n\nLedger figure: USD 12,345.58.",  # wrong first
    ],
)
def test_a_fact_stated_twice_and_disagreeing_fails_in_either_order(answer: str) -> None:
    verdict = check_fact(answer, amount(12345.58, currency="USD"))
    assert verdict.score == 0.0 and verdict.certain and "12,469.04" in verdict.reason


def test_other_records_figures_are_not_restatements_of_the_fact() -> None:
    q = question(
        ground_truth="Silver Supply Co. (SYNCUS-0434) has the highest total: USD 92,107.86.",
        expected=[
            ExpectedFact(kind="id", field="customer_account", value="SYNCUS-0434"),
            amount(92107.86, field="total_invoiced", currency="USD"),
        ],
    )
    answer = (
        "SYNCUS-0434 has the highest total invoiced: USD 92,107.86.\n\n"
        "| Customer | Invoiced |\n|---|---|\n| SYNCUS-0434 | USD 92,107.86 |\n"
        "| SYNCUS-0236 | USD 85,100.50 |"
    )
    assert accuracy(q, answer)[0] == 1.0
    assert accuracy(q, answer.replace("| USD 92,107.86", "| USD 93,028.94"))[0] < 1.0


# -- whole lists ------------------------------------------------------------------------------


def test_a_list_that_is_the_whole_set_admits_no_invented_member() -> None:
    members = ["SYNCUS-0903", "SYNCUS-0920"]
    whole = ExpectedFact(
        kind="top_n", field="customers", value=members, ordered=False, complete=True
    )
    right = "2 customers are on credit hold: SYNCUS-0903; SYNCUS-0920."
    assert score(right, whole) == 1.0
    verdict = check_fact(
        "2 customers are on credit hold: SYNCUS-0903, SYNCUS-9999; SYNCUS-0920.", whole
    )
    assert verdict.score == 0.0 and "SYNCUS-9999" in verdict.reason
    assert score("SYNCUS-0903; SYNCUS-0920 (not SYNCUS-0921).", whole) == 1.0  # denied: no claim
    top = whole.model_copy(update={"complete": False})  # a top-N of a larger set
    assert score("SYNCUS-0903, SYNCUS-0920, then SYNCUS-0921.", top) == 1.0


# -- the legal entity and the date the answer answers for ---------------------------------------


def _scoped(**kw):
    return question(
        legal_entity="USMF",
        as_of=AS_OF,
        expected=[amount(1234.56, currency="USD")],
        record_refs=["/erp/USMF/customers/SYNCUS-0001"],
        ground_truth="SYNCUS-0001 in USMF owes USD 1,234.56 as of March 2, 2026.",
        **kw,
    )


def test_an_answer_about_another_legal_entity_fails() -> None:
    link = "[SYNCUS-0001](http://erp.ledgerbench.test/erp/USMF/customers/SYNCUS-0001)"
    good = f"{link} in USMF owes USD 1,234.56 as of March 2, 2026."
    assert accuracy(_scoped(), good)[0] == 1.0
    value, reason = accuracy(_scoped(), good.replace("in USMF", "in USPI"))
    assert value == 0.0 and "USPI" in reason
    both = good + " A customer of the same name exists in USPI."
    assert accuracy(_scoped(), both)[0] == 1.0


@pytest.mark.parametrize(
    ("written", "right"),
    [
        ("as of March 2, 2026", True),
        ("as of 2026-03-02", True),
        ("as of 03/02/2026", True),
        ("as of February 2", False),
        ("as of February 2, 2026", False),
        ("as at 2 February 2026", False),
    ],
)
def test_the_as_of_date_the_answer_states_must_be_the_questions(written: str, right: bool) -> None:
    value, reason = accuracy(_scoped(), f"SYNCUS-0001 in USMF owes USD 1,234.56 {written}.")
    assert (value == 1.0) is right, reason


# -- hedges -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hedge",
    [
        "I could not verify this in the ERP; it may be wrong.",
        "These figures may be inaccurate.",
        "I was unable to confirm the balance.",
        "Please do not rely on these numbers.",
    ],
)
def test_a_hedge_that_disowns_the_figures_scores_them_as_not_stated(hedge: str) -> None:
    value, reason = accuracy(_scoped(), f"SYNCUS-0001 in USMF owes USD 1,234.56. {hedge}")
    assert value == 0.0 and "disowns" in reason


def test_words_that_disown_nothing_are_no_hedge() -> None:
    answer = "SYNCUS-0001 in USMF owes USD 1,234.56; I could not find any disputes."
    assert accuracy(_scoped(), answer)[0] == 1.0


# -- mislabelled links, with or without record_refs --------------------------------------------


def test_a_mislabelled_link_fails_citations_without_record_refs(erp_db_url: str) -> None:
    le, account, other = two_customers(erp_db_url)
    judge = RulesJudge(erp_db_url=erp_db_url)
    q = question(tags={Dimension.citations: ["citations.erp_link"]}, record_refs=[])
    link = f"http://erp.ledgerbench.test/erp/{le}/customers/{account}"

    def citations(answer: str) -> tuple[float | None, str]:
        dim = judge.score(JudgeItem(q, trajectory(answer=answer))).dimensions[Dimension.citations]
        return dim.score, dim.assertions[0].reason

    assert citations(f"[{account}]({link}) owes USD 1,234.56.")[0] == 1.0
    value, reason = citations(f"[{other}]({link}) owes USD 1,234.56.")
    assert value == 0.0 and f"labelled {other}" in reason
    name = judge.resolver.party_name(x_ref(le, account))
    other_name = judge.resolver.party_name(x_ref(le, other))
    assert citations(f"[{name}]({link}) owes USD 1,234.56.")[0] == 1.0
    value, reason = citations(f"[{other_name}]({link}) owes USD 1,234.56.")
    assert value == 0.0 and other_name in reason
    assert citations(f"[customer record]({link}) owes USD 1,234.56.")[0] == 1.0
    judge.close()


def test_a_table_row_that_contradicts_the_document_it_cites_fails_citations(
    erp_db_url: str,
) -> None:
    import sqlite3

    with sqlite3.connect(erp_db_url.removeprefix("sqlite:///")) as db:
        le, voucher, number, amount, day = db.execute(
            "select legal_entity, voucher, document_number, amount_cur, txn_date from "
            "customer_transaction where amount_cur > 100 order by voucher limit 1"
        ).fetchone()
    judge = RulesJudge(erp_db_url=erp_db_url)
    q = question(tags={Dimension.citations: ["citations.erp_link"]}, record_refs=[])
    link = f"http://erp.ledgerbench.test/erp/{le}/customer-transactions/{voucher}"
    stated = dt.date.fromisoformat(day)

    def citations(cells: str) -> tuple[float | None, str]:
        answer = f"One document.\n\n| Invoice | Date | Amount |\n|---|---|---|\n{cells}"
        dim = judge.score(JudgeItem(q, trajectory(answer=answer))).dimensions[Dimension.citations]
        return dim.score, dim.assertions[0].reason

    right_day = f"{stated:%B} {stated.day}, {stated.year}"
    assert citations(f"| [{number}]({link}) | {right_day} | {float(amount):,.2f} |")[0] == 1.0
    value, reason = citations(f"| [{number}]({link}) | {right_day} | {float(amount) * 1.02:,.2f} |")
    assert value == 0.0 and voucher in reason
    later = stated + dt.timedelta(days=1)
    value, _ = citations(
        f"| [{number}]({link}) | {later:%B} {later.day}, {later.year} | {float(amount):,.2f} |"
    )
    assert value == 0.0
    assert citations(f"| [{number}]({link}) | {right_day} | 3 lines |")[0] == 1.0  # not a figure
    judge.close()
    unjudged = RulesJudge().score(JudgeItem(q, trajectory(answer=f"[{number}]({link})")))
    assert unjudged.dimensions == {} and "ERP" in (unjudged.unscored or "")
    # without the ERP the answer is unscored, never passed


def test_the_prose_and_the_table_must_give_a_record_the_same_figure() -> None:
    table = (
        "| Account | Past due |\n|---|---|\n"
        "| SYNCUS-0473 | USD 61,501.75 |\n| SYNCUS-0096 | USD 43,201.00 |"
    )
    right = "SYNCUS-0473 owes USD 61,501.75 and SYNCUS-0096 owes USD 43,201.00.\n\n" + table
    swapped = "SYNCUS-0096 owes USD 61,501.75 and SYNCUS-0473 owes USD 43,201.00.\n\n" + table
    assert claims.table_contradiction(right) is None
    assert "SYNCUS-0096" in (claims.table_contradiction(swapped) or "")
    cell = right.replace("| USD 43,201.00 |", "| USD 44,497.03 |")
    assert "SYNCUS-0096" in (claims.table_contradiction(cell) or "")
    total = "The two owe USD 104,702.75 in all.\n\n" + table  # a total is no record's figure
    assert claims.table_contradiction(total) is None


def x_ref(le: str, account: str):
    from synthetic_erp._catalog import RecordRef

    return RecordRef(legal_entity=le, entity_set="customers", key=account)


# -- number forms -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    [
        "57\u2009907.13",  # thin space
        "57\u202f907.13",  # narrow no-break space
        "57\u00a0907.13",  # no-break space
        "57'907.13",
        "57\u2019907.13",
        "57\u202f907,13",  # SI style with a decimal comma
    ],
)
def test_thousands_separated_by_spaces_and_apostrophes(written: str) -> None:
    assert score(f"The balance is EUR {written}.", amount(57907.13, currency="EUR")) == 1.0
    assert score(f"The balance is {written} EUR.", amount(57907.13, currency="EUR")) == 1.0


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("thirteen", 13),
        ("twenty-three", 23),
        ("ninety nine", 99),
        ("one hundred and five", 105),
        ("two thousand three hundred forty-one", 2341),
        ("a dozen", 12),
        ("one million two hundred thousand", 1_200_000),
    ],
)
def test_counts_in_words_to_any_size(written: str, value: int) -> None:
    count = ExpectedFact(kind="count", field="invoices", value=value)
    assert score(f"There are {written} open invoices.", count) == 1.0
    assert (
        score(f"There are {written} open invoices.", count.model_copy(update={"value": value + 1}))
        == 0.0
    )


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("Per the ERP records I queried: yes. The vendor offers 2% within 10 days.", True),
        ("Having checked the ERP, the answer is no: Net45 carries no discount.", False),
        ("Acme Co. in USMF: no, its terms carry no discount.", False),
        (
            "The vendor has terms Net45. Yes, there is no discount.",
            None,
        ),  # not in the first sentence
    ],
)
def test_yes_or_no_anywhere_in_the_first_sentence(answer: str, said: bool | None) -> None:
    assert x.says_boolean(answer, True) is (None if said is None else said)


def test_a_line_item_near_the_total_is_that_items_figure() -> None:
    """The total of two invoices, one of them 93% of it: the table row of that invoice states the
    invoice's figure, not the total (the reference attaches the total to the customer only)."""
    q = question(
        ground_truth="Shaw & Marshall LLC (SYNCUS-0328) in USMF has 2 unpaid invoice(s) totalling "
        "EUR 2,276.84, largest first: FTI-0000737 open EUR 2,111.24; CIV-0001474 open EUR 165.60.",
        expected=[amount(2276.84, field="unpaid_total", currency="EUR", side="debit")],
        query="Show the open invoices for Shaw & Marshall LLC in USMF.",
    )
    answer = (
        "Shaw & Marshall LLC (SYNCUS-0328) has 2 unpaid invoices totalling EUR 2,276.84, largest "
        "first: FTI-0000737; CIV-0001474.\n\n| Invoice | Open |\n|---|---|\n"
        "| FTI-0000737 | 2,111.24 |\n| CIV-0001474 | 165.60 |"
    )
    assert accuracy(q, answer)[0] == 1.0
    assert accuracy(q, answer.replace("EUR 2,276.84", "EUR 2,299.61"))[0] == 0.0
