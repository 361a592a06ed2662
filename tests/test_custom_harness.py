"""The custom finance agent over Chat Completions (real ``openai`` SDK) and the Anthropic Messages
API (real ``anthropic`` SDK, streaming), against local protocol servers and the real MCP server."""

from __future__ import annotations

import json
import re
import time

import pytest
from sqlmodel import Session, select

from harnesses import (
    AgentEnvironment,
    ErpEndpoint,
    HarnessLoadError,
    HarnessOptions,
    Status,
    create_harness,
)
from harnesses._custom import FINAL_PROMPT, FINANCE_PRACTICE, as_of_date
from harnesses._openai import MissingApiKeyError
from harnesses._pricing import estimate_cost
from harnesses._runner import QuestionRunner, RunConfig
from ledgerbench_core.dataset import Question, TaskType
from synthetic_erp._db import open_engine
from synthetic_erp._schema import Customer
from tests.fakes.anthropic_server import (
    AnthropicFakeServer,
    Reply,
    ScriptedModel,
    ToolUse,
    tool_result_text,
    tool_results,
)
from tests.fakes.openai_server import Call, ModelRequest, Turn, serve_openai

pytestmark = pytest.mark.timeout(60)

INSTRUCTIONS = "You are a test finance assistant."
QUERY = "What is the open balance of the customer as of March 2, 2026 in USMF?"
URL_PATTERN = re.compile(r"https?://[^\s\"'<>)\]]+/erp/[^\s\"'<>)\],]+")


@pytest.fixture(autouse=True)
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def a_customer(db_url: str) -> Customer:
    engine = open_engine(db_url, read_only=True)
    with Session(engine) as session:
        customer = session.exec(select(Customer).order_by(Customer.account)).first()
    engine.dispose()
    assert customer is not None
    return customer


def first_party(output: str) -> tuple[str, str]:
    account = re.search(r'"account":\s*"([^"]+)"', output)
    legal_entity = re.search(r'"legal_entity":\s*"([^"]+)"', output)
    assert account and legal_entity, output[:500]
    return account.group(1), legal_entity.group(1)


def environment(server, research: str = "web") -> AgentEnvironment:
    """The published setup (``--research web``: web tools when web=true) unless told."""
    return AgentEnvironment(
        erp=ErpEndpoint(url=server.url),
        instructions=INSTRUCTIONS,
        work_dir="/tmp",
        research=research,
    )


async def run_question(harness, env, timeout: float = 20.0, stall_timeout: float | None = None):
    config = RunConfig(timeout=timeout, retries=3, progress=False, stall_timeout=stall_timeout)
    query = Question(
        id="q-custom", query=QUERY, task_type=TaskType.obligations, segment="AR", scenario="t"
    )
    record = await QuestionRunner(harness, env, config).run(query, 0)
    await harness.aclose()
    return record


def chat_tool_messages(fake) -> list[dict]:
    last = fake.model_requests[-1].body["messages"]
    return [message for message in last if message["role"] == "tool"]


async def test_chat_completions_rounds_with_parallel_calls_against_the_real_erp(
    erp_server, erp_db_url
):
    customer = a_customer(erp_db_url)
    seen: dict[str, str] = {}

    def model(request: ModelRequest) -> Turn:
        if request.index == 0:
            calls = [
                Call("search_parties", {"query": customer.name, "party_type": "customer"}),
                Call("list_reference_data", {"kind": "legal_entities"}),
            ]
            return Turn(text="Resolving the entity.", tool_calls=calls, reasoning_tokens=3)
        if request.index == 1:
            seen["account"], seen["le"] = first_party(request.tool_outputs[0])
            args = {"account": seen["account"], "legal_entity": seen["le"]}
            return Turn(tool_calls=[Call("get_customer", args)])
        url = URL_PATTERN.search(request.tool_outputs[0]).group(0)
        return Turn(
            text=f"Used customer {seen['account']} ({seen['le']}): [{seen['account']}]({url})"
        )

    with serve_openai(model) as fake:
        harness = create_harness("custom", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server))

    assert record.status == Status.ok, record.error
    assert record.answer.startswith(f"Used customer {seen['account']}")
    assert record.model == "gpt-5.2" and record.turns == 3
    names = [call.name for call in record.tool_calls]
    # the model's parallel pair, then one call; erp_info is the harness's own context step, kept
    # apart (it is not a tool call of the model)
    assert sorted(names[0:2]) == ["list_reference_data", "search_parties"]
    assert names[2:] == ["get_customer"]
    assert [call["name"] for call in record.extra["harness_tool_calls"]] == ["erp_info"]
    assert not any(call.is_error for call in record.tool_calls)
    tool_messages = chat_tool_messages(fake)
    assert [m["content"] for m in tool_messages] == [
        next(c.output for c in record.tool_calls if c.name == name)
        for name in ("search_parties", "list_reference_data", "get_customer")
    ]
    first = fake.model_requests[0].body
    system, user = first["messages"][0]["content"], first["messages"][1]["content"]
    assert system.startswith(INSTRUCTIONS) and FINANCE_PRACTICE in system
    assert user.startswith(QUERY)
    assert "As-of date in the question: 2026-03-02" in user
    assert "ERP context (erp_info)" in user
    assert first["parallel_tool_calls"] is True
    tool_names = {tool["function"]["name"] for tool in first["tools"]}
    assert {"search_parties", "get_customer", "erp_info"} <= tool_names
    assert "fetch_url" not in tool_names and "web_search" not in tool_names
    assert record.usage.input_tokens == 300 and record.usage.reasoning_tokens == 3
    assert record.cost_usd == pytest.approx(estimate_cost("gpt-5.2", record.usage))


async def test_anthropic_messages_streaming_with_tool_errors(erp_server):
    seen: dict[str, object] = {}

    def model(body: dict, turn: int) -> Reply:
        if turn == 0:
            seen["tools"] = [tool["name"] for tool in body["tools"]]
            seen["system"] = body["system"]
            return Reply(
                text="Checking.",
                tool_uses=[
                    ToolUse("get_customer", {"account": "NO-SUCH", "legal_entity": "USMF"}),
                    ToolUse("erp_info", {}),
                ],
                thinking="plan: look up",
                cache_read_input_tokens=30,
            )
        results = tool_results(body)
        seen["results"] = [(r["is_error"], tool_result_text(r)) for r in results]
        return Reply(text="No customer NO-SUCH exists in USMF as of 2026-03-02.")

    with AnthropicFakeServer(ScriptedModel(model, all_requests_main=True)) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"api": "anthropic"})
        record = await run_question(create_harness("custom", options), environment(erp_server))

    assert record.status == Status.ok, record.error
    assert record.answer == "No customer NO-SUCH exists in USMF as of 2026-03-02."
    assert record.model == "claude-sonnet-4-6"
    main = fake.main_requests()
    assert all(request.body["stream"] is True for request in main)
    assert "get_customer" in seen["tools"] and FINANCE_PRACTICE in seen["system"]
    by_name = {call.name: call for call in record.tool_calls}
    assert by_name["get_customer"].is_error and "NO-SUCH" in by_name["get_customer"].output
    errors = dict((text.removeprefix("Error: "), flag) for flag, text in seen["results"])
    assert errors[by_name["get_customer"].output] is True
    # the assistant turn went back with its thinking block and tool uses intact
    assistant = main[1].body["messages"][1]
    assert [block["type"] for block in assistant["content"]] == [
        "thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    assert record.usage.cached_input_tokens == 30
    assert record.cost_usd == pytest.approx(estimate_cost("claude-sonnet-4-6", record.usage))


async def test_anthropic_overload_then_success(erp_server):
    script = [Reply(http_error=(529, "overloaded_error")), Reply(text="Done.")]

    def model(body: dict, turn: int) -> Reply:
        return script.pop(0)

    with AnthropicFakeServer(ScriptedModel(model, all_requests_main=True)) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"api": "anthropic"})
        record = await run_question(create_harness("custom", options), environment(erp_server))
    assert record.status == Status.ok and record.answer == "Done."
    assert record.extra["provider_errors"] == ["OverloadedError 529"]
    assert len(fake.main_requests()) == 2


async def test_malformed_arguments_and_unknown_tools_are_fed_back(erp_server):
    script = [
        Turn(tool_calls=[Call("get_customer", "{not json"), Call("drop_tables", {"x": 1})]),
        Turn(text="I could not run those lookups."),
    ]
    with serve_openai(script) as fake:
        harness = create_harness("custom", HarnessOptions(base_url=fake.base_url))
        record = await run_question(harness, environment(erp_server))
    assert record.status == Status.ok
    model_calls = [call for call in record.tool_calls if call.name != "erp_info"]
    assert [call.is_error for call in model_calls] == [True, True]
    assert model_calls[0].arguments == {"_raw_arguments": "{not json"}
    contents = [message["content"] for message in chat_tool_messages(fake)]
    assert contents[0].startswith("Error: arguments are not valid JSON")
    assert contents[1].startswith("Error: unknown tool 'drop_tables'")


async def test_near_the_deadline_the_model_is_asked_for_a_final_answer(erp_server):
    def model(request: ModelRequest) -> Turn:
        if request.body.get("tool_choice") == "none":
            assert request.body["messages"][-1] == {"role": "user", "content": FINAL_PROMPT}
            return Turn(text="Final: the ERP is reachable; balance not checked in time.")
        if request.index == 0:
            return Turn(
                text="Looking.", tool_calls=[Call("list_reference_data", {"kind": "currencies"})]
            )
        return Turn(delay_s=60.0, text="too late")

    # Budget and reserve generous enough for a loaded machine (the slow turn never returns).
    with serve_openai(model) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"final_reserve_s": "5"})
        started = time.monotonic()
        harness = create_harness("custom", options)
        # The slow turn thinks in silence: allowed here (a stall bound past the budget), since
        # this test is about the final answer, not about a hung provider.
        record = await run_question(harness, environment(erp_server), 12, stall_timeout=120)
    assert record.status == Status.timeout, record.error
    assert record.termination.reason == "time_limit" and not record.termination.infrastructure
    assert record.answer == "Final: the ERP is reachable; balance not checked in time."
    assert record.extra["finished_by"] == "deadline_near"
    assert time.monotonic() - started < 12.0
    assert fake.model_requests[-1].body["tool_choice"] == "none"


async def test_when_even_the_final_call_is_too_slow_a_partial_answer_is_composed(erp_server):
    def model(request: ModelRequest) -> Turn:
        if request.index == 0:
            calls = [Call("list_reference_data", {"kind": "currencies"})]
            return Turn(text="Looking.", tool_calls=calls)
        return Turn(delay_s=60.0, text="too late")

    with serve_openai(model) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"final_reserve_s": "5"})
        harness = create_harness("custom", options)
        # Silent slow turns allowed (stall bound past the budget): the deadline decides here.
        record = await run_question(harness, environment(erp_server), 12, stall_timeout=120)
    assert record.status == Status.timeout, record.error
    assert record.termination.reason == "time_limit"
    assert record.answer == "Looking.", "the answer is only text the model wrote"
    composed = record.extra["composed_answer"]
    assert composed.startswith("Partial answer")
    lookup = next(call for call in record.tool_calls if call.name == "list_reference_data")
    assert "list_reference_data(kind=currencies)" in composed
    assert re.sub(r"\s+", " ", lookup.output)[:100].replace("|", "/") in composed
    posts = [request for request in fake.requests if request.method == "POST"]
    assert len(posts) == 3
    assert posts[-1].body["tool_choice"] == "none"


async def test_step_cap_ends_with_a_final_answer_and_max_turns(erp_server):
    def model(request: ModelRequest) -> Turn:
        if request.body.get("tool_choice") == "none":
            return Turn(text="Best answer after two steps.")
        return Turn(tool_calls=[Call("erp_info", {})])

    with serve_openai(model) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"max_steps": "2"})
        record = await run_question(create_harness("custom", options), environment(erp_server))
    assert record.status == Status.max_turns
    assert record.answer == "Best answer after two steps."
    assert len(fake.model_requests) == 3


async def test_web_tools_fetch_pages_and_record_sources(erp_server):
    page = "<html><title>Acme 10-K</title><body><p>Revenue 1.2 bn USD in FY2025</p></body></html>"
    results = {"results": [{"title": "Acme IR", "url": "https://ir.example/acme", "content": "IR"}]}

    def model(request: ModelRequest) -> Turn:
        if request.index == 0:
            base = fake.base_url.removesuffix("/v1")
            return Turn(
                tool_calls=[
                    Call("fetch_url", {"url": f"{base}/acme-10k"}),
                    Call("web_search", {"query": "acme investor relations"}),
                ]
            )
        return Turn(text="Acme's revenue was 1.2 bn USD in FY2025 (Acme 10-K).")

    pages = {
        "/acme-10k": ("text/html", page),
        "/search": ("application/json", json.dumps(results)),
    }
    with serve_openai(model, pages=pages) as fake:
        base = fake.base_url.removesuffix("/v1")
        options = HarnessOptions(
            base_url=fake.base_url, extra={"web": "true", "search_url": f"{base}/search"}
        )
        record = await run_question(create_harness("custom", options), environment(erp_server))
    assert record.status == Status.ok
    web_calls = {call.name: call for call in record.tool_calls if call.server == "web"}
    assert set(web_calls) == {"fetch_url", "web_search"}
    assert "Revenue 1.2 bn USD in FY2025" in web_calls["fetch_url"].output
    sources = {source.url: source for source in record.sources}
    assert sources[f"{base}/acme-10k"].title == "Acme 10-K"
    assert "Revenue 1.2 bn USD" in sources[f"{base}/acme-10k"].text
    assert "https://ir.example/acme" in sources
    search = [r for r in fake.requests if r.method == "GET" and r.path.startswith("/search")]
    assert "q=acme+investor+relations" in search[0].path


def test_as_of_dates_are_read_from_the_question():
    assert as_of_date("balance as of March 2, 2026 in USMF") == "2026-03-02"
    assert as_of_date("aging as at 2026-01-31") == "2026-01-31"
    assert as_of_date("open items as of 5 Feb 2026") == "2026-02-05"
    assert as_of_date("what is the balance today?") is None


def test_missing_keys_and_bad_options(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match=r"ANTHROPIC_API_KEY.*--harness scripted"):
        create_harness("custom", HarnessOptions(extra={"api": "anthropic"}))
    with pytest.raises(HarnessLoadError, match="api=gemini"):
        create_harness("custom", HarnessOptions(extra={"api": "gemini"}))
    with pytest.raises(HarnessLoadError, match="max_steps"):
        create_harness("custom", HarnessOptions(extra={"max_steps": "0"}))


def test_anthropic_web_search_blocks_become_tool_calls_and_sources():
    from anthropic.types import Message

    from harnesses import TrajectoryDraft
    from harnesses._custom import record_server_blocks

    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srv_1",
                    "name": "web_search",
                    "input": {"query": "acme 10-k"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srv_1",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": "https://sec.example/acme",
                            "title": "Acme 10-K",
                            "encrypted_content": "x",
                        }
                    ],
                },
                {
                    "type": "server_tool_use",
                    "id": "srv_2",
                    "name": "web_search",
                    "input": {"query": "acme peers"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srv_2",
                    "content": {
                        "type": "web_search_tool_result_error",
                        "error_code": "max_uses_exceeded",
                    },
                },
            ],
        }
    )
    draft = TrajectoryDraft()
    record_server_blocks(message.content, draft)
    first, second = draft.tool_calls
    assert (first.name, first.arguments, first.is_error) == (
        "web_search",
        {"query": "acme 10-k"},
        False,
    )
    assert json.loads(first.output) == {"sources": ["https://sec.example/acme"]}
    assert second.is_error and json.loads(second.output) == {"error": "max_uses_exceeded"}
    assert [(s.url, s.title) for s in draft.sources] == [("https://sec.example/acme", "Acme 10-K")]


async def test_cancelled_mid_question_the_draft_holds_a_composed_partial_answer(erp_server):
    import asyncio

    from harnesses import AgentTask, TrajectoryDraft

    script = [
        Turn(text="Resolving.", tool_calls=[Call("list_reference_data", {"kind": "currencies"})]),
        Turn(delay_s=8.0, text="too late"),
    ]
    with serve_openai(script) as fake:
        harness = create_harness("custom", HarnessOptions(base_url=fake.base_url))
        draft = TrajectoryDraft()
        task = AgentTask("q", 0, QUERY, TaskType.obligations, 60.0, time.monotonic() + 60.0)
        running = asyncio.create_task(harness.run(task, environment(erp_server), draft))
        # Cancel once the model is thinking about its second turn (an event, not a timer).
        for _ in range(600):
            if sum(r.method == "POST" for r in fake.requests) >= 2 or running.done():
                break
            await asyncio.sleep(0.1)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await harness.aclose()
    assert draft.extra["cancelled_during"] == "model"
    assert draft.answer == "Resolving.", "the answer is only text the model wrote"
    composed = draft.extra["composed_answer"]
    assert composed.startswith("Partial answer")
    assert "Analysis so far:\nResolving." in composed
    assert "list_reference_data(kind=currencies)" in composed


async def test_anthropic_final_answer_without_tools_near_the_deadline(erp_server):
    def model(body: dict, turn: int) -> Reply:
        if body.get("tool_choice") == {"type": "none"}:
            return Reply(text="Final: only the currency list was read in time.")
        if turn == 0:
            return Reply(tool_uses=[ToolUse("list_reference_data", {"kind": "currencies"})])
        return Reply(text="too late", stall_s=60.0)

    # Generous budget and reserve: the final call must fit on a loaded machine.
    with AnthropicFakeServer(ScriptedModel(model, all_requests_main=True)) as fake:
        options = HarnessOptions(
            base_url=fake.base_url, extra={"api": "anthropic", "final_reserve_s": "5"}
        )
        harness = create_harness("custom", options)
        # The slow turn is silent: allowed here (stall bound past the budget), see above.
        record = await run_question(harness, environment(erp_server), 12, stall_timeout=120)
    assert record.status == Status.timeout, "an answer forced by the deadline is a timeout"
    assert record.answer == "Final: only the currency list was read in time."
    final = fake.main_requests()[-1].body
    roles = [message["role"] for message in final["messages"]]
    assert roles == ["user", "assistant", "user"]
    last = final["messages"][-1]["content"]
    assert [block["type"] for block in last] == ["tool_result", "text"]
    assert last[-1]["text"] == FINAL_PROMPT


async def test_anthropic_malformed_tool_json_is_fed_back_and_recorded(erp_server):
    seen: dict[str, object] = {}

    def model(body: dict, turn: int) -> Reply:
        if turn == 0:
            bad = ToolUse("get_customer", {}, raw_input='{"account": "C-1", "legal_entity": ')
            return Reply(text="Looking.", tool_uses=[bad])
        (result,) = tool_results(body)
        seen["result"] = (result["is_error"], tool_result_text(result))
        return Reply(text="I could not read the customer: my lookup was malformed.")

    with AnthropicFakeServer(ScriptedModel(model, all_requests_main=True)) as fake:
        options = HarnessOptions(base_url=fake.base_url, extra={"api": "anthropic"})
        record = await run_question(create_harness("custom", options), environment(erp_server))
    assert record.status == Status.ok, record.error
    assert record.answer == "I could not read the customer: my lookup was malformed."
    is_error, text = seen["result"]
    assert is_error and text.startswith("Error: arguments are not valid JSON")
    (call,) = [call for call in record.tool_calls if call.name == "get_customer"]
    assert call.is_error
    assert call.arguments == {"_raw_arguments": '{"account": "C-1", "legal_entity": '}
