"""The conversation in every record: each harness captures its turns, tool calls and model calls.

Real harnesses against the real ERP MCP server and the protocol-faithful fake model servers.
"""

from __future__ import annotations

import pytest

from harnesses import AgentEnvironment, ErpEndpoint, HarnessOptions, Status, create_harness
from harnesses._runner import QuestionRunner, RunConfig
from ledgerbench_core.dataset import Question, TaskType
from ledgerbench_core.trajectory import ModelEvent, ToolEvent
from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel, ToolUse
from tests.fakes.openai_server import Call, Turn, serve_openai

pytestmark = pytest.mark.timeout(120)
QUERY = "What is the open balance of customer SYNCUS-0001 in USMF as of 2026-03-02?"


@pytest.fixture(autouse=True)
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


async def run_question(harness, server, timeout: float = 60.0):
    env = AgentEnvironment(
        erp=ErpEndpoint(url=server.url), instructions="Be exact.", work_dir="/tmp"
    )
    question = Question(
        id="q-t", query=QUERY, task_type=TaskType.obligations, segment="AR", scenario="t"
    )
    record = await QuestionRunner(harness, env, RunConfig(timeout=timeout, progress=False)).run(
        question, 0
    )
    await harness.aclose()
    return record


def model_events(record) -> list[ModelEvent]:
    return [e for e in record.events if isinstance(e, ModelEvent)]


def assert_linked(record) -> None:
    """Every tool turn points at its call, every model event at the turn it produced."""
    for event in model_events(record):
        if event.message_index is not None:
            assert record.messages[event.message_index].role == "assistant"
    tool_turns = [m.tool_call_index for m in record.messages if m.role == "tool"]
    assert sorted(tool_turns) == list(range(len(record.tool_calls)))
    tool_events = [e.tool_call_index for e in record.events if isinstance(e, ToolEvent)]
    assert sorted(tool_events) == list(range(len(record.tool_calls)))


async def test_openai_turns_reasoning_retries_and_request_ids(erp_server):
    script = [
        Turn(
            text="Checking the ERP first.",
            reasoning_summary="The ERP's date decides the aging.",
            tool_calls=[Call("erp_info", {})],
        ),
        Turn(status=429, error_message="Rate limit reached", retry_after_ms=300),
        Turn(text="The balance is 0.00 USD."),
    ]
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, erp_server)
    assert record.status == Status.ok, record.error
    assert record.input == QUERY
    roles = [(m.role, m.content) for m in record.messages]
    assert roles == [
        ("user", QUERY),
        ("assistant", "Checking the ERP first."),
        ("tool", ""),
        ("assistant", "The balance is 0.00 USD."),
    ]
    assert record.messages[1].reasoning == "The ERP's date decides the aging."
    assert [t.index for t in record.messages[1].tool_calls] == [0]
    # Every API attempt has its event: the rate-limited one too, with its error and status.
    first, limited, second = model_events(record)
    assert (first.message_index, limited.message_index, second.message_index) == (1, None, 3)
    assert (first.retries, second.retries) == (0, 1)
    assert limited.status_code == 429 and "Rate limit reached" in limited.error
    assert first.error is None and second.error is None
    assert first.request_id.startswith("req_") and first.request_id != second.request_id
    assert first.usage.input_tokens == 100 and first.model == "gpt-5.2"
    assert [e.type for e in record.events] == ["model", "tool", "model", "model"]
    assert_linked(record)
    # the 0.3 s Retry-After wait is not working time
    assert record.working_time_s <= record.latency_s - 0.3 + 1e-3


async def test_openai_failed_call_still_has_its_event(erp_server):
    script = [Turn(status=400, error_message="bad request: unsupported parameter")]
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, erp_server)
    assert record.status == Status.error
    (event,) = model_events(record)
    assert event.error.startswith("BadRequestError") and "unsupported parameter" in event.error
    assert event.status_code == 400
    assert event.message_index is None and event.duration_s is not None


async def test_custom_chat_completions_reasoning_content(erp_server):
    script = [
        Turn(reasoning_summary="Look the customer up.", tool_calls=[Call("erp_info", {})]),
        Turn(text="0.00 USD."),
    ]
    with serve_openai(script) as fake:
        harness = create_harness("custom", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, erp_server)
    assert record.status == Status.ok, record.error
    user = [m for m in record.messages if m.role == "user"]
    assert user[0].content.startswith(QUERY)  # the opening message as sent, notes included
    assistant = [m for m in record.messages if m.role == "assistant"]
    assert [m.reasoning for m in assistant] == ["Look the customer up.", None]
    assert assistant[-1].content == "0.00 USD."
    events = model_events(record)
    assert len(events) == record.turns == 2
    assert all(e.request_id and e.request_id.startswith("req_") for e in events)
    assert [record.messages[e.message_index].content for e in events] == ["", "0.00 USD."]
    assert_linked(record)


async def test_custom_anthropic_thinking_and_request_ids(erp_server):
    replies = [
        Reply(thinking="Start from erp_info.", tool_uses=[ToolUse("erp_info", {})]),
        Reply(text="0.00 USD.", thinking="Nothing is open."),
    ]

    def model(body: dict, turn: int) -> Reply:
        return replies.pop(0)

    with AnthropicFakeServer(ScriptedModel(model, all_requests_main=True)) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"api": "anthropic"})
        record = await run_question(create_harness("custom", options), erp_server)
    assert record.status == Status.ok, record.error
    assistant = [m for m in record.messages if m.role == "assistant"]
    assert [m.reasoning for m in assistant] == ["Start from erp_info.", "Nothing is open."]
    events = model_events(record)
    assert len(events) == 2 and all(e.request_id.startswith("req_") for e in events)
    assert all(e.usage.output_tokens > 0 for e in events)
    assert_linked(record)


async def test_scripted_agent_transcript(erp_server):
    harness = create_harness("scripted", HarnessOptions())
    record = await run_question(harness, erp_server)
    assert record.messages[0].role == "user" and record.messages[0].content == QUERY
    assert record.messages[-1].role == "assistant"
    assert record.messages[-1].content == record.answer
    assert model_events(record) == []  # no model behind it
    assert len([m for m in record.messages if m.role == "tool"]) == len(record.tool_calls) > 0
    assert_linked(record)


async def test_a_plugin_record_starts_with_its_question_turn(erp_server):
    from tests.test_runner_plugins import InstantHarness

    record = await run_question(InstantHarness(HarnessOptions()), erp_server)
    assert record.messages[0].role == "user" and record.messages[0].content == QUERY
    assert [m.role for m in record.messages] == ["user", "tool"]
    assert_linked(record)


async def test_an_answer_past_the_cap_is_cut_once_and_recorded_as_such(erp_server):
    import hashlib

    from harnesses._answer_cap import ANSWER_CAP_CHARS

    huge = "The balance is 0.00 USD. " + "x" * (2 * 1024 * 1024)
    with serve_openai([Turn(text=huge)]) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, erp_server)
    assert record.status == Status.ok, record.error
    assert record.answer == huge[:ANSWER_CAP_CHARS]
    assert all(len(m.content) <= ANSWER_CAP_CHARS for m in record.messages)
    assert record.extra["answer_cap"] == {
        "cap_chars": ANSWER_CAP_CHARS,
        "answer_chars": len(huge),
        "answer_sha256": hashlib.sha256(huge.encode()).hexdigest(),
        "turns_cut": 1,
    }
    assert "cap of 100,000 characters" in record.termination.detail
    assert len(record.model_dump_json()) < 3 * ANSWER_CAP_CHARS  # not 2 MiB twice


@pytest.mark.parametrize("harness_name", ["openai", "custom"])
async def test_an_erp_that_dies_mid_run_leaves_the_whole_transcript(erp_db_url, harness_name):
    """An ``erp_unavailable`` record keeps every turn, call and event up to the failure: the
    model calls, the call that worked and the one the dead server failed."""
    from tests.conftest import start_mcp_server, stop_process

    server, _ = start_mcp_server(erp_db_url)

    def script(request):
        if request.index == 0:
            return Turn(text="Checking.", tool_calls=[Call("erp_info", {})])
        stop_process(server.process)  # the ERP goes away between the two tool calls
        lookup = Call("get_customer", {"account": "SYNCUS-0001", "legal_entity": "USMF"})
        return Turn(text="Now the customer.", tool_calls=[lookup])

    try:
        with serve_openai(script) as fake:
            harness = create_harness(harness_name, HarnessOptions(base_url=fake.base_url))
            record = await run_question(harness, server)
    finally:
        stop_process(server.process)
    assert record.termination.reason.value == "erp_unavailable"
    assert record.termination.infrastructure
    roles = [m.role for m in record.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool"]
    assert [(c.name, c.is_error) for c in record.tool_calls] == [
        ("erp_info", False),
        ("get_customer", True),
    ]
    assert [e.type for e in record.events] == ["model", "tool", "model", "tool"]
    assert_linked(record)
