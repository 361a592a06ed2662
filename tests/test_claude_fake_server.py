"""The fake Anthropic server speaks the Messages API well enough for the real ``anthropic`` 2.x SDK
(``Authorization: Bearer``, its own ``anthropic-version``), so other harnesses can test with it."""

from __future__ import annotations

import importlib
import json
from types import ModuleType

import pytest

from tests.fakes.anthropic_server import (
    AnthropicFakeServer,
    Reply,
    ScriptedModel,
    ToolUse,
    request_turn,
    tool_result_text,
    tool_results,
)

pytestmark = pytest.mark.timeout(60)

KEY = "sk-fake-sdk"
TOOL = {
    "name": "get_customer",
    "description": "One customer.",
    "input_schema": {"type": "object", "properties": {"account": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def anthropic() -> ModuleType:
    """The real SDK, imported only by the worker that runs these tests (it takes seconds)."""
    return importlib.import_module("anthropic")


def client(server: AnthropicFakeServer, key: str = KEY) -> object:
    sdk = importlib.import_module("anthropic")
    return sdk.Anthropic(base_url=server.base_url, api_key=key, max_retries=0)


def echo_script(body: dict, turn: int) -> Reply:
    if turn == 0:
        return Reply(
            text="Looking.",
            tool_uses=[ToolUse("get_customer", {"account": "C-7"})],
            input_tokens=11,
            output_tokens=7,
        )
    return Reply(
        text=f"Tool said: {tool_result_text(tool_results(body)[-1])}",
        input_tokens=23,
        output_tokens=5,
    )


def test_tool_round_trip_without_streaming() -> None:
    with AnthropicFakeServer(
        ScriptedModel(echo_script, all_requests_main=True), api_key=KEY
    ) as fake:
        api = client(fake)
        messages = [{"role": "user", "content": "Who is C-7?"}]
        first = api.messages.create(
            model="claude-x", max_tokens=100, messages=messages, tools=[TOOL]
        )
        assert first.stop_reason == "tool_use"
        assert [block.type for block in first.content] == ["text", "tool_use"]
        use = first.content[1]
        assert (use.name, use.input) == ("get_customer", {"account": "C-7"})
        assert (first.usage.input_tokens, first.usage.output_tokens) == (11, 7)
        messages += [
            {"role": "assistant", "content": [block.model_dump() for block in first.content]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "Contoso Ltd"}
                ],
            },
        ]
        second = api.messages.create(
            model="claude-x", max_tokens=100, messages=messages, tools=[TOOL]
        )
        assert second.stop_reason == "end_turn"
        assert second.content[0].text == "Tool said: Contoso Ltd"
        requests = fake.main_requests()
    assert [request_turn(r.body) for r in requests] == [0, 1]
    assert requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert requests[0].headers["anthropic-version"]


def test_streaming_text_and_tool_input() -> None:
    text = "A long answer " * 20
    model = ScriptedModel(
        [Reply(text=text, tool_uses=[ToolUse("get_customer", {"account": "Z"})])],
        all_requests_main=True,
    )
    with (
        AnthropicFakeServer(model) as fake,
        client(fake).messages.stream(
            model="claude-x",
            max_tokens=100,
            messages=[{"role": "user", "content": "hi"}],
            system=[{"type": "text", "text": "<system-reminder>x</system-reminder>"}],
        ) as stream,
    ):
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == text
    assert final.content[1].input == {"account": "Z"}
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens > 1


def test_system_role_message_and_count_tokens_are_accepted() -> None:
    with AnthropicFakeServer(ScriptedModel([Reply(text="ok")], all_requests_main=True)) as fake:
        api = client(fake)
        reply = api.messages.create(
            model="claude-x",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                ]
            },
        )
        counted = api.messages.count_tokens(
            model="claude-x", messages=[{"role": "user", "content": "hello there"}]
        )
        models = api.models.list()
    assert reply.content[0].text == "ok"
    assert counted.input_tokens > 0
    assert [m.id for m in models.data] == ["claude-sonnet-4-5"]


def test_wrong_key_and_scripted_errors_use_the_sdk_error_classes(anthropic: ModuleType) -> None:
    model = ScriptedModel([Reply(http_error=(529, "overloaded_error"))], all_requests_main=True)
    with AnthropicFakeServer(model, api_key=KEY) as fake:
        with pytest.raises(anthropic.AuthenticationError):
            client(fake, key="wrong").messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        with pytest.raises(anthropic.APIStatusError) as caught:
            client(fake).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
    assert caught.value.status_code == 529
    assert caught.value.body["error"]["type"] == "overloaded_error"


def test_a_broken_script_is_reported_not_hidden(anthropic: ModuleType) -> None:
    def broken(body: dict, turn: int) -> Reply:
        raise KeyError("no such field")

    with AnthropicFakeServer(ScriptedModel(broken, all_requests_main=True)) as fake:
        with pytest.raises(anthropic.BadRequestError):
            client(fake).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        assert fake.script_errors == ["KeyError: 'no such field'"]


def test_stall_ends_when_the_server_closes(anthropic: ModuleType) -> None:
    import threading
    import time

    model = ScriptedModel([Reply(text="late", stall_s=60)], all_requests_main=True)
    fake = AnthropicFakeServer(model).start()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            anthropic.Anthropic(
                base_url=fake.base_url, api_key="k", max_retries=0, timeout=30
            ).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
        except BaseException as error:  # the connection is dropped when the stall is abandoned
            errors.append(error)

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(0.5)
    started = time.monotonic()
    fake.close()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert time.monotonic() - started < 10
    assert json.dumps([type(e).__name__ for e in errors])  # the client saw the drop, not a reply
    assert errors
