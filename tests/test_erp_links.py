"""Record links as the ERP MCP server hands them out: http(s) URLs, bare ``/erp/`` paths, and the
``erp://`` MCP resource URIs of stdio. All three name the same record and cite alike."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from harnesses._protocol import (
    AgentEnvironment,
    AgentTask,
    ErpEndpoint,
    HarnessOptions,
    TrajectoryDraft,
)
from harnesses.scripted import ScriptedAgent
from judge import RulesJudge
from judge import _extract as x
from judge._base import JudgeItem
from judge._erp_links import find_erp_links
from ledgerbench_core.dataset import Dimension, ExpectedFact, TaskType
from synthetic_erp import RecordRef, parse_record_url, record_resource_uri
from tests.fakes.judge_data import question, trajectory, two_customers

pytestmark = pytest.mark.timeout(60)

CUSTOMER = RecordRef(legal_entity="USMF", entity_set="customers", key="SYNCUS-0001")


# -- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("erp://USMF/customers/SYNCUS-0001", CUSTOMER),
        ("ERP://USMF/customers/SYNCUS-0001", CUSTOMER),  # schemes are case-insensitive
        ("erp://USMF/customers/SYNCUS-0001/", CUSTOMER),
        ("erp://USMF/customers/SYNCUS-0001?view=json#top", CUSTOMER),
        (
            "erp://USMF/payment-terms/2%2510Net30",  # the catalogue's own quoting of "2%10Net30"
            RecordRef(legal_entity="USMF", entity_set="payment-terms", key="2%10Net30"),
        ),
    ],
)
def test_resource_uris_parse_to_the_record_their_url_names(uri: str, expected: RecordRef) -> None:
    assert parse_record_url(uri) == expected
    url = "http://127.0.0.1:8765/erp/" + uri.split("://", 1)[1]
    assert parse_record_url(url) == parse_record_url(uri)


def test_the_catalogue_writes_resource_uris_it_parses_back() -> None:
    uri = record_resource_uri("payment-terms", "USMF", "2%10Net30")
    assert uri == "erp://USMF/payment-terms/2%2510Net30"
    assert parse_record_url(uri) == RecordRef("USMF", "payment-terms", "2%10Net30")


def test_record_paths_quote_each_segment_as_quote_does() -> None:
    """Plain ids skip the quoting (a fast path): every segment still comes out as
    ``quote(segment, safe="")`` gives it, for ids, reserved characters and non-ASCII text."""
    import random
    import string
    from urllib.parse import quote

    from synthetic_erp import record_path

    rng = random.Random(5)
    alphabet = string.printable + "éü€/%~"
    texts = ["SYNCUS-0001", "2%10Net30", "a b", "", "~x_y.z", "..", "é"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(5000)]
    for text in texts:
        expected = f"/erp/{quote(text, safe='')}/customers/{quote(text, safe='')}"
        assert record_path("customers", text, text) == expected, text


@pytest.mark.parametrize(
    "uri",
    [
        "erp://USMF/customers",  # too few segments
        "erp://USMF",
        "erp://",
        "erp://USMF/customers/SYNCUS-0001/extra",  # too many
        "erp://host/erp/USMF/customers/SYNCUS-0001",  # a URL path under an erp:// host
        "erp://USMF//customers/SYNCUS-0001",  # empty segment
        "erp://USMF/no-such-set/SYNCUS-0001",  # unknown entity set
        "erp://USMF/customers/..",
        "erp://../customers/SYNCUS-0001",
        "erp://USMF/customers/%2E%2E",  # encoded ..
        "erp://USMF/customers/a%2F..%2Fb",  # encoded separator
        "erp://USMF%2Fx/customers/SYNCUS-0001",
        "erp://user@USMF/customers/SYNCUS-0001",  # unsafe segments
        "erp://USMF:80/customers/SYNCUS-0001",
        "erp://USMF/customers/SYNCUS 0001",
        "erp://USMF/customers/-SYNCUS-0001",
    ],
)
def test_malformed_resource_uris_name_no_record(uri: str) -> None:
    assert parse_record_url(uri) is None


# -- finding links in answers --------------------------------------------------------------------


def test_resource_uris_are_found_among_urls_and_paths() -> None:
    text = (
        "Customer [SYNCUS-0001](erp://USMF/customers/SYNCUS-0001) owes USD 10.00; its invoice "
        "<erp://USMF/customer-transactions/CIV-0001>, vendor http://h:1/erp/USMF/vendors/V-1, "
        "and /erp/USMF/customers/SYNCUS-0002. Over stdio links use the erp:// scheme; "
        "xerp://USMF/customers/SYNCUS-0003 is no link."
    )
    links = find_erp_links(text)
    assert [(link.text, link.path) for link in links] == [
        ("erp://USMF/customers/SYNCUS-0001", "/erp/USMF/customers/SYNCUS-0001"),
        ("erp://USMF/customer-transactions/CIV-0001", "/erp/USMF/customer-transactions/CIV-0001"),
        ("http://h:1/erp/USMF/vendors/V-1", "/erp/USMF/vendors/V-1"),
        ("/erp/USMF/customers/SYNCUS-0002", "/erp/USMF/customers/SYNCUS-0002"),
    ]
    assert [link.is_resource for link in links] == [True, True, False, False]


def test_a_malformed_resource_uri_is_found_as_a_malformed_link() -> None:
    (link,) = find_erp_links("See erp://USMF/no-such-set/SYNCUS-0001.")
    assert link.text == "erp://USMF/no-such-set/SYNCUS-0001" and link.ref is None


@pytest.mark.parametrize(
    "text",
    [
        "[A](http://h:1/erp/USMF/customers/SYNCUS-0001) also erp://USMF/customers/SYNCUS-0001.",
        "erp://USMF/customers/SYNCUS-0001 and [A](http://h:1/erp/USMF/customers/SYNCUS-0001)",
        "erp://USMF/customers/SYNCUS-0001, /erp/USMF/customers/SYNCUS-0001, "
        "ERP://USMF/customers/SYNCUS-0001",
    ],
)
def test_one_record_cited_in_both_forms_is_one_citation(text: str) -> None:
    assert [link.path for link in find_erp_links(text)] == ["/erp/USMF/customers/SYNCUS-0001"]


def test_the_custom_harness_lists_resource_links_it_read_in_a_partial_answer() -> None:
    from harnesses._custom import RECORD_URL_PATTERN

    tool_output = (
        '{"url": "erp://USMF/customers/SYNCUS-0001", "invoices": [{"url": '
        '"http://h:1/erp/USMF/customer-transactions/CIV-1"}], "note": "erp:// links are resources"}'
    )
    assert RECORD_URL_PATTERN.findall(tool_output) == [
        "erp://USMF/customers/SYNCUS-0001",
        "http://h:1/erp/USMF/customer-transactions/CIV-1",
    ]


def test_ids_inside_resource_uris_are_not_stated() -> None:
    answer = "The largest invoice is erp://USMF/customer-transactions/CIV-0001461 (see SYNCUS-7)."
    assert x.find_id_tokens(answer) == ["SYNCUS-7"]
    assert not x.find_id(answer, "CIV-0001461")


# -- the rules judge ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def customers(erp_db_url: str) -> tuple[str, str, str]:
    return two_customers(erp_db_url)


@pytest.fixture(scope="module")
def judge(erp_db_url: str):
    rules = RulesJudge(erp_db_url=erp_db_url)
    yield rules
    rules.close()


def _citations(judge: RulesJudge, q, answer: str) -> tuple[float | None, str]:
    dim = judge.score(JudgeItem(q, trajectory(q.id, answer=answer))).dimensions
    return dim[Dimension.citations].score, dim[Dimension.citations].assertions[0].reason


def _balance_question(le: str, account: str):
    return question(
        tags={Dimension.citations: ["citations.erp_link"]},
        record_refs=[f"/erp/{le}/customers/{account}"],
        expected=[ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)],
    )


def test_resource_and_url_citations_score_the_same(
    judge: RulesJudge, customers: tuple[str, str, str]
) -> None:
    le, account, other = customers
    q = _balance_question(le, account)

    def both(template: str) -> tuple[tuple[float | None, str], tuple[float | None, str]]:
        """The answer citing by URL, then the same answer citing by resource URI."""
        url = template.replace("BASE", f"http://127.0.0.1:8765/erp/{le}")
        resource = template.replace("BASE", f"erp://{le}")
        return _citations(judge, q, url), _citations(judge, q, resource)

    cited, resource_cited = both(
        f"The balance is $1,234.56 ([{account}](BASE/customers/{account}))."
    )
    assert cited[0] == resource_cited[0] == 1.0, resource_cited[1]
    uncited = _citations(judge, q, "The balance is $1,234.56.")
    assert uncited[0] == 0.0 and "no ERP record link" in uncited[1]

    invented, resource_invented = both("See BASE/customers/SYNCUS-9999 for details.")
    assert invented[0] == resource_invented[0] == 0.0
    assert "point to no record" in resource_invented[1]

    wrong, resource_wrong = both(f"See BASE/customers/{other}.")
    assert wrong[0] == resource_wrong[0] == 0.0 and "but the answer is about" in resource_wrong[1]

    malformed, resource_malformed = both(f"See BASE/no-such-set/{account}.")
    assert malformed[0] == resource_malformed[0] == 0.0 and "malformed" in resource_malformed[1]

    swapped, resource_swapped = both(f"See [{other}](BASE/customers/{account}).")
    assert swapped[0] == resource_swapped[0] == 0.0 and f"labelled {other}" in resource_swapped[1]


def test_a_record_cited_in_both_forms_counts_once(
    judge: RulesJudge, customers: tuple[str, str, str]
) -> None:
    le, account, _ = customers
    q = _balance_question(le, account)
    answer = (
        f"The balance is $1,234.56 ([{account}](http://h:1/erp/{le}/customers/{account}); "
        f"resource erp://{le}/customers/{account})."
    )
    score, reason = _citations(judge, q, answer)
    assert score == 1.0 and "all 1 links resolve" in reason


def test_a_link_only_in_a_resource_uri_does_not_name_the_party() -> None:
    q = question(
        tags={Dimension.accuracy: ["accuracy.ground_truth"]},
        expected=[ExpectedFact(kind="amount", field="balance", value=2787.20, tolerance=0.01)],
        record_refs=["/erp/USPI/customers/SYNCUS-0713"],
        ground_truth="The balance of Rios Hardware (SYNCUS-0713) in USPI is USD 2,787.20.",
        query="What is the total unpaid customer balance for Rios Hardwre in USPI?",
    )
    for link in (
        "(http://h:1/erp/USPI/customers/SYNCUS-0713)",
        "(erp://USPI/customers/SYNCUS-0713)",
    ):
        dim = (
            RulesJudge()
            .score(JudgeItem(q, trajectory(answer=f"The [customer]{link} owes USD 2,787.20.")))
            .dimensions
        )
        assert dim[Dimension.accuracy].score == 0.0
        assert "does not name SYNCUS-0713" in dim[Dimension.accuracy].assertions[0].reason


# -- end to end: the scripted agent over stdio cites resources, and is scored as over HTTP -------
# The runner's own stdio servers get --public-url (http links); a client that starts the server
# without it, as here, gets erp:// links.

CREDIT_QUERY = "What is the credit limit for SYNCUS-0001 in USMF as of March 2, 2026?"


def _scripted_answer(endpoint: ErpEndpoint, transport: str, work_dir: Path) -> str:
    agent = ScriptedAgent(HarnessOptions(extra={"transport": transport}))
    task = AgentTask(
        question_id="q1",
        trial=0,
        query=CREDIT_QUERY,
        task_type=TaskType.obligations,
        timeout_s=60.0,
        deadline=time.monotonic() + 60.0,
    )
    env = AgentEnvironment(erp=endpoint, instructions="", work_dir=str(work_dir))
    draft = TrajectoryDraft()
    outcome = asyncio.run(agent.run(task, env, draft))
    return outcome.answer


@pytest.mark.slow  # an ERP MCP server started over stdio costs ~6 s of CPU
def test_scripted_agent_over_stdio_cites_resources_scored_as_over_http(
    erp_db_url: str, erp_server, judge: RulesJudge, tmp_path: Path
) -> None:
    stdio = ErpEndpoint(
        url="http://127.0.0.1:9/unused",
        # No --public-url: over stdio the server's record links are erp:// resources.
        stdio_command=(sys.executable, "-m", "erp_mcp", "--db", erp_db_url, "--transport", "stdio"),
    )
    over_stdio = _scripted_answer(stdio, "stdio", tmp_path)
    over_http = _scripted_answer(ErpEndpoint(url=erp_server.url), "http", tmp_path)
    assert "erp://USMF/customers/SYNCUS-0001" in over_stdio
    assert "/erp/USMF/customers/SYNCUS-0001" in over_http and "erp://" not in over_http

    q = question(
        tags={Dimension.citations: ["citations.erp_link"]},
        record_refs=["/erp/USMF/customers/SYNCUS-0001"],
        query=CREDIT_QUERY,
    )
    stdio_score, reason = _citations(judge, q, over_stdio)
    assert stdio_score == 1.0, reason
    assert _citations(judge, q, over_http)[0] == stdio_score
