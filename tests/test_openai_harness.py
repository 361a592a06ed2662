"""The OpenAI Responses harness, driven by the real ``openai`` SDK against a local Responses server
that plays a scripted model, with the ERP tools served by the real MCP server."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest
from sqlmodel import Session, select

from harnesses import (
    AgentEnvironment,
    AgentTask,
    ErpEndpoint,
    HarnessLoadError,
    HarnessOptions,
    Status,
    TrajectoryDraft,
    create_harness,
)
from harnesses._erp_client import ErpClient
from harnesses._openai import MissingApiKeyError
from harnesses._pricing import estimate_cost
from harnesses._protocol import DEFAULT_MAX_TOOL_CALLS, SampleLimits
from harnesses._runner import QuestionRunner, RunConfig
from ledgerbench_core._trial import TRIAL_HEADER
from ledgerbench_core.dataset import Question, TaskType
from synthetic_erp._db import open_engine
from synthetic_erp._schema import Customer
from tests.fakes.openai_server import (
    Call,
    McpCall,
    ModelRequest,
    Turn,
    WebSearch,
    serve_openai,
)

pytestmark = pytest.mark.timeout(180)  # a ceiling: servers start slowly on a loaded machine

INSTRUCTIONS = "You are a test finance assistant."
URL_PATTERN = re.compile(r"https?://[^\s\"'<>)\]]+/erp/[^\s\"'<>)\],]+")


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def a_customer(db_url: str) -> Customer:
    engine = open_engine(db_url, read_only=True)
    with Session(engine) as session:
        customer = session.exec(select(Customer).order_by(Customer.account)).first()
    engine.dispose()
    assert customer is not None
    return customer


def first_party(output: str) -> tuple[str, str]:
    """(account, legal entity) of the first candidate in a ``search_parties`` result."""
    account = re.search(r'"account":\s*"([^"]+)"', output)
    legal_entity = re.search(r'"legal_entity":\s*"([^"]+)"', output)
    assert account and legal_entity, output[:500]
    return account.group(1), legal_entity.group(1)


def environment(
    server, *, public_url: str | None = None, token: str | None = None, research: str = "web"
):
    """The published setup (``--research web``: the hosted web_search is offered) unless told."""
    endpoint = ErpEndpoint(url=server.url, token=token, public_url=public_url)
    return AgentEnvironment(
        erp=endpoint, instructions=INSTRUCTIONS, work_dir="/tmp", research=research
    )


def question(text: str = "What is the balance of the customer?", qid: str = "q-test") -> Question:
    return Question(
        id=qid, query=text, task_type=TaskType.obligations, segment="AR", scenario="test"
    )


async def run_question(
    harness,
    env,
    timeout: float = 20.0,
    retries: int = 3,
    stall_timeout: float | None = None,
    **limits,
):
    config = RunConfig(
        timeout=timeout, retries=retries, progress=False, stall_timeout=stall_timeout, **limits
    )
    record = await QuestionRunner(harness, env, config).run(question(), 0)
    await harness.aclose()
    return record


def sent_outputs(fake) -> list[str]:
    """Every function_call_output the model server received, in order."""
    outputs = []
    for request in fake.model_requests:
        for item in request.body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                outputs.append(item["output"])
    return outputs


async def test_local_mode_plays_tool_rounds_against_the_real_erp(erp_server, erp_db_url):
    customer = a_customer(erp_db_url)
    seen: dict[str, str] = {}

    def model(request: ModelRequest) -> Turn:
        if request.index == 0:
            calls = [
                Call("search_parties", {"query": customer.name, "party_type": "customer"}),
                Call("erp_info", {}),
            ]
            return Turn(text="Resolving the customer first.", tool_calls=calls, reasoning_tokens=5)
        if request.index == 1:
            seen["account"], seen["le"] = first_party(request.tool_outputs[0])
            args = {"account": seen["account"], "legal_entity": seen["le"]}
            return Turn(tool_calls=[Call("get_customer", args)], cached_tokens=40)
        url = URL_PATTERN.search(request.tool_outputs[0]).group(0)
        seen["url"] = url
        text = f"Customer {seen['account']} in {seen['le']}: see [{seen['account']}]({url})."
        return Turn(text=text, citations=[(url, seen["account"])])

    with serve_openai(model) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server))

    assert record.status == Status.ok, record.error
    assert record.answer.startswith(f"Customer {seen['account']}")
    assert record.model == "gpt-5.2"
    assert record.turns == 3
    names = [call.name for call in record.tool_calls]
    assert sorted(names[:2]) == ["erp_info", "search_parties"] and names[2] == "get_customer"
    assert record.tool_calls[2].arguments == {
        "account": seen["account"],
        "legal_entity": seen["le"],
    }
    assert not any(call.is_error for call in record.tool_calls)
    # what was recorded is exactly what the model was sent back
    assert sorted(call.output for call in record.tool_calls) == sorted(sent_outputs(fake))
    assert seen["account"] in record.tool_calls[2].output
    assert [source.url for source in record.sources] == [seen["url"]]
    # usage and cost summed over the three responses
    assert record.usage.input_tokens == 300
    assert record.usage.reasoning_tokens == 5
    assert record.usage.output_tokens == 65
    assert record.usage.cached_input_tokens == 40
    assert record.cost_usd == pytest.approx(estimate_cost("gpt-5.2", record.usage))
    # the conversation continued with previous_response_id, and the request shape is right
    bodies = [request.body for request in fake.model_requests]
    assert record.extra["response_ids"] == list(fake.responses)
    assert [body.get("previous_response_id") for body in bodies] == [
        None,
        *record.extra["response_ids"][:2],
    ]
    async with ErpClient(environment(erp_server).erp) as erp:
        mcp_names = {spec.name for spec in await erp.list_tools()}
    first = bodies[0]
    functions = [tool for tool in first["tools"] if tool["type"] == "function"]
    assert {tool["name"] for tool in functions} == mcp_names
    assert all("parameters" in tool and "strict" in tool for tool in functions)
    assert {"type": "web_search"} in first["tools"]
    assert "reasoning" not in first  # sent only when asked: not every model takes it
    assert first["max_tool_calls"] == DEFAULT_MAX_TOOL_CALLS  # the run's one cap
    assert first["instructions"] == INSTRUCTIONS
    assert first["input"] == [{"role": "user", "content": question().query}]


async def test_stateless_mode_resends_the_whole_conversation(erp_server):
    script = [
        Turn(tool_calls=[Call("erp_info", {}, call_id="call_a")]),
        Turn(text="The ERP is up."),
    ]
    with serve_openai(script) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"stateless": "true"})
        record = await run_question(create_harness("openai", options), environment(erp_server))
    assert record.status == Status.ok
    second = fake.model_requests[1].body
    assert "previous_response_id" not in second and second["store"] is False
    kinds = [item.get("type", item.get("role")) for item in second["input"]]
    assert kinds == ["user", "function_call", "function_call_output"]
    assert second["input"][2]["output"] == record.tool_calls[0].output


async def test_rate_limit_then_success(erp_server):
    script = [Turn(status=429, error_message="Rate limit reached"), Turn(text="All good.")]
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server))
    assert record.status == Status.ok
    assert record.answer == "All good."
    assert record.extra["provider_errors"] == ["RateLimitError 429"]
    assert [r.status for r in fake.requests] == [429, 200]


async def test_server_errors_until_the_deadline_end_as_error(erp_server):
    with serve_openai(
        lambda r: Turn(status=500, error_message="boom", retry_after_ms=None)
    ) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server), timeout=20.0)
    assert record.status == Status.error
    assert record.termination.reason == "provider_unavailable"
    assert record.termination.infrastructure
    assert record.error.class_ == "ProviderUnavailableError"
    assert "InternalServerError 500" in record.error.message
    assert len(fake.requests) >= 3, "backoff 0.5, 1, 2 s fits the 5 s retry window"
    assert record.extra["provider_errors"] == ["InternalServerError 500"] * len(fake.requests)
    assert all(request.status == 500 for request in fake.requests)
    # Retries stop when the window (a quarter of the budget) closes, far before the deadline.
    assert record.latency_s < 20.0 / 2, record.latency_s


async def test_malformed_arguments_go_back_to_the_model_as_an_error(erp_server):
    script = [
        Turn(tool_calls=[Call("get_customer", '{"account": "SYN', call_id="call_bad")]),
        Turn(text="I could not look the customer up."),
    ]
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server))
    assert record.status == Status.ok
    [call] = record.tool_calls
    assert call.is_error and call.arguments == {"_raw_arguments": '{"account": "SYN'}
    [output] = sent_outputs(fake)
    assert output.startswith("Error: arguments are not valid JSON")
    assert output == call.output


async def test_a_tool_error_is_recorded_and_the_model_recovers(erp_server):
    script = [
        Turn(
            tool_calls=[
                Call("get_customer", {"account": "NO-SUCH-ACCOUNT", "legal_entity": "USMF"})
            ]
        ),
        Turn(text="No customer NO-SUCH-ACCOUNT exists in USMF."),
    ]
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server))
    assert record.status == Status.ok
    [call] = record.tool_calls
    assert call.is_error and call.server == "erp"
    assert "NO-SUCH-ACCOUNT" in call.output
    assert sent_outputs(fake) == [f"Error: {call.output}"]


async def test_tool_call_cap_forces_an_answer_and_reports_max_turns(erp_server):
    def model(request: ModelRequest) -> Turn:
        if request.body.get("tool_choice") == "none":
            return Turn(text="Answer from what I have.")
        return Turn(tool_calls=[Call("erp_info", {}), Call("erp_info", {})])

    with serve_openai(model) as fake:
        options = HarnessOptions(base_url=fake.base_url)
        harness = create_harness("openai", options)
        record = await run_question(harness, environment(erp_server), max_tool_calls=3)
    assert record.status == Status.max_turns
    assert record.answer == "Answer from what I have."
    assert len(record.tool_calls) == 3
    assert record.extra["tool_call_cap"] == {"cap": 3, "dropped": 1}
    assert record.termination.detail == "tool-call cap of 3 reached: 1 further call(s) not run"
    assert sent_outputs(fake)[-1].startswith("Tool-call limit of 3 reached")
    assert fake.model_requests[-1].body["tool_choice"] == "none"


async def test_deadline_stops_a_slow_model_and_keeps_the_partial_answer(erp_server):
    script = [
        Turn(
            text="Interim: the ERP answered; checking the balance.", tool_calls=[Call("erp_info")]
        ),
        Turn(delay_s=60.0, text="never sent"),
    ]
    # A budget generous enough for the first turn and the ERP call on a loaded machine; the
    # second turn never comes, so the deadline always falls while the model is thinking (in
    # silence: allowed here with a stall bound past the budget; a hung provider is tested apart).
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server), 6.0, stall_timeout=120)
    assert record.status == Status.timeout
    assert record.answer == "Interim: the ERP answered; checking the balance."
    assert [call.name for call in record.tool_calls] == ["erp_info"]
    assert record.extra["cancelled_during"] == "model"
    assert record.latency_s < 6.0 + 2.0


async def test_deadline_keeps_the_text_streamed_so_far(erp_server):
    # A live model that types slowly (a word every 0.3 s, never silent for the stall bound).
    text = "The balance is 1,234.00 USD as of" + " still typing" * 200
    script = [Turn(text=text, trickle_s=0.3)]
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server), timeout=6.0)
    assert record.status == Status.timeout
    assert record.termination.reason == "time_limit" and not record.termination.infrastructure
    assert record.answer.startswith("The balance is 1,234.00 USD as of still typing")
    assert len(record.answer) < len(text)
    # The text is also the partial assistant turn, and the cut-off call points at it.
    (turn,) = [m for m in record.messages if m.role == "assistant"]
    assert turn.content == record.answer
    (event,) = [e for e in record.events if e.type == "model"]
    assert event.error == "cut off by the deadline" and event.duration_s is None
    assert record.messages[event.message_index] is not None
    assert record.messages[event.message_index].content == record.answer


async def test_hosted_mode_sends_exactly_the_mcp_entry(erp_server):
    error = {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "unknown"}]}
    script = [
        Turn(
            mcp_calls=[
                McpCall("erp_info", {}, output='{"today": "2026-03-02"}'),
                McpCall("get_customer", {"account": "X"}, error=error),
            ],
            web_searches=[WebSearch("acme annual report", ["https://example.com/ar"])],
            text="Acme's revenue was 1.2 bn USD in FY2025 (Acme annual report).",
            citations=[("https://example.com/ar", "Acme annual report")],
            reasoning_tokens=12,
        )
    ]
    env = environment(erp_server, public_url="https://erp.example.test/mcp", token="tok-123")
    with serve_openai(script) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"mcp_mode": "hosted"})
        record = await run_question(create_harness("openai", options), env)
    async with ErpClient(environment(erp_server).erp) as erp:
        read_only = sorted(spec.name for spec in await erp.list_tools() if spec.read_only)
    [request] = fake.model_requests
    assert request.body["tools"] == [
        {
            "type": "mcp",
            "server_label": "erp",
            "server_url": "https://erp.example.test/mcp",
            "require_approval": "never",
            "allowed_tools": read_only,
            # the provider's calls carry the question's trial key, like the local ones
            "headers": {"Authorization": "Bearer tok-123", TRIAL_HEADER: "q-test#0"},
        },
        {"type": "web_search"},
    ]
    assert read_only
    assert record.status == Status.ok
    calls = {call.name: call for call in record.tool_calls}
    assert calls["erp_info"].output == '{"today": "2026-03-02"}' and not calls["erp_info"].is_error
    assert calls["get_customer"].is_error
    assert json.loads(calls["get_customer"].output) == {"error": error}
    assert calls["web_search"].arguments["query"] == "acme annual report"
    assert calls["web_search"].server == "web"
    assert [source.url for source in record.sources] == ["https://example.com/ar"]
    assert record.usage.reasoning_tokens == 12
    assert "tok-123" not in record.model_dump_json()


async def test_hosted_mode_without_a_public_url_is_a_clear_error(erp_server):
    with serve_openai([Turn(text="unused")]) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"mcp_mode": "hosted"})
        record = await run_question(create_harness("openai", options), environment(erp_server))
    assert record.status == Status.error
    assert "--erp-public-url" in record.error.message
    assert fake.model_requests == []


def test_missing_key_names_the_variable_and_the_offline_harness(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError) as caught:
        create_harness("openai", HarnessOptions())
    message = str(caught.value)
    assert "OPENAI_API_KEY" in message and "--harness scripted" in message
    assert "\n" not in message
    assert isinstance(caught.value, HarnessLoadError)


def test_unknown_and_bad_options_are_refused():
    with pytest.raises(HarnessLoadError, match="web_serch"):
        create_harness("openai", HarnessOptions(extra={"web_serch": "false"}))
    with pytest.raises(HarnessLoadError, match="mcp_mode=remote"):
        create_harness("openai", HarnessOptions(extra={"mcp_mode": "remote"}))
    with pytest.raises(HarnessLoadError, match=r"max_tool_calls.*--max-tool-calls"):
        create_harness("openai", HarnessOptions(extra={"max_tool_calls": "7"}))


async def test_options_shape_the_request(erp_server, monkeypatch):
    with serve_openai([Turn(text="ok")]) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        options = HarnessOptions(
            model="gpt-5-mini",
            reasoning_effort="high",
            extra={"web_search": "false", "stream": "false"},
        )
        harness = create_harness("openai", options)
        draft = TrajectoryDraft()
        task = AgentTask(
            "q", 0, "Hi", TaskType.obligations, 10.0, time.monotonic() + 10,
            limits=SampleLimits(max_tool_calls=7),
        )  # fmt: skip
        outcome = await harness.run(task, environment(erp_server), draft)
        await harness.aclose()
    body = fake.model_requests[0].body
    assert outcome.answer == "ok"
    assert body["model"] == "gpt-5-mini" and body["reasoning"] == {"effort": "high"}
    assert body["max_tool_calls"] == 7 and "stream" not in body
    assert all(tool["type"] == "function" for tool in body["tools"])
    assert draft.cost_usd == pytest.approx((100 * 0.25 + 20 * 2.0) / 1e6)


@pytest.fixture(scope="module")
def slow_erp_server(erp_db_url):
    """The real MCP server with 20 s of injected latency on every tool call (not on listing)."""
    from tests.conftest import start_mcp_server, stop_process

    server, _ = start_mcp_server(erp_db_url, "--latency-ms", "20000")

    async def first_contact() -> None:  # a fresh server answers its first session slowly
        async with ErpClient(ErpEndpoint(url=server.url)) as erp:
            await erp.list_tools()

    asyncio.run(first_contact())
    yield server
    stop_process(server.process)


async def test_a_tool_call_cut_off_by_the_deadline_is_recorded(slow_erp_server):
    script = [Turn(text="Looking it up.", tool_calls=[Call("erp_info", {})])]
    with serve_openai(script) as fake:
        harness = create_harness("openai", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(slow_erp_server), timeout=6.0)
    assert record.status == Status.timeout
    assert record.answer == "Looking it up."
    [call] = record.tool_calls
    assert call.name == "erp_info" and call.is_error
    assert call.output.startswith("Cancelled: the time budget ran out")
    assert call.cancelled and call.duration_s is None
    assert record.extra["cancelled_during"] == "tools"
