"""Unit tests of the stream-json parser on event streams recorded from the real Claude CLI 2.1.197.

The streams in ``tests/data/claude_streams`` were produced by ``--harness claude`` (its exact
command line, ``save_stream``) against the scripted fake Anthropic server and a small FastMCP server
with ``get_customer`` / ``list_invoices`` tools; ``malformed.jsonl`` is ``multi_tool.jsonl`` with
junk lines spliced in. The expected values below come from the recorded ``result`` events and the
scripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnesses._pricing import estimate_cost
from harnesses._protocol import TrajectoryDraft
from harnesses._stream_json import UNFINISHED_TOOL_OUTPUT, StreamParser, tool_server

STREAMS = Path(__file__).parent / "data" / "claude_streams"
FINAL_TABLE_ANSWER = (
    "**C1 (Forest Wholesale)** owes 1,234.50 USD.\n\n| invoice | amount |\n|---|---|\n"
    "| INV-0 | 0 |\n| INV-1 | 100 |"
)


def lines_of(name: str) -> list[str]:
    return (STREAMS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()


def events_of(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines_of(name) if line.strip()]


def result_event(name: str) -> dict[str, Any]:
    return next(event for event in events_of(name) if event["type"] == "result")


def parse(name: str) -> tuple[StreamParser, TrajectoryDraft]:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    for line in lines_of(name):
        parser.feed_line(line)
    parser.finish()
    return parser, draft


def assert_multi_tool_record(draft: TrajectoryDraft, result: dict[str, Any]) -> None:
    calls = [(call.name, call.arguments, call.is_error, call.server) for call in draft.tool_calls]
    assert calls == [
        ("mcp__erp__get_customer", {"customer_id": "C1"}, False, "erp"),
        ("mcp__erp__get_customer", {"customer_id": "bad"}, True, "erp"),
        ("mcp__erp__list_invoices", {"customer_id": "C1", "limit": 2}, False, "erp"),
    ]
    assert json.loads(draft.tool_calls[0].output) == {
        "id": "C1",
        "name": "Forest Wholesale",
        "balance": 1234.5,
    }
    assert draft.tool_calls[1].output == "customer bad not found"
    assert json.loads(draft.tool_calls[2].output)["result"][1] == {
        "invoice": "INV-1",
        "amount": 100,
    }
    assert draft.answer == FINAL_TABLE_ANSWER
    assert draft.turns == result["num_turns"]
    raw = result["usage"]
    assert draft.usage.input_tokens == (
        raw["input_tokens"] + raw["cache_read_input_tokens"] + raw["cache_creation_input_tokens"]
    )
    assert draft.usage.cached_input_tokens == raw["cache_read_input_tokens"] == 1000
    assert draft.usage.output_tokens == raw["output_tokens"] == 240
    assert draft.cost_usd == pytest.approx(result["total_cost_usd"])
    assert draft.extra["result_subtype"] == "success"
    assert draft.extra["duration_ms"] == result["duration_ms"]


def test_multi_tool_stream_is_recorded_faithfully() -> None:
    parser, draft = parse("multi_tool")
    assert_multi_tool_record(draft, result_event("multi_tool"))
    assert parser.erp_status("erp") == "connected"
    assert parser.malformed_lines == 0
    assert draft.extra["cli_version"] == "2.1.197"
    assert draft.extra["permission_denials"] == []
    started = [call.started_s for call in draft.tool_calls]
    assert all(value is not None and value >= 0 for value in started)


def test_stream_without_partial_messages_gives_the_same_record() -> None:
    _, draft = parse("no_partials")
    assert_multi_tool_record(draft, result_event("no_partials"))


def test_draft_is_updated_as_each_event_arrives() -> None:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    seen_calls: list[int] = []
    answers: list[str] = []
    for line in lines_of("multi_tool"):
        event = parser.feed_line(line)
        seen_calls.append(len(draft.tool_calls))
        answers.append(draft.answer)
        if event and event["type"] == "result":
            break
        if event and event["type"] == "user":
            assert draft.tool_calls, "a tool result must be recorded the moment it arrives"
    result_index = next(i for i, e in enumerate(events_of("multi_tool")) if e["type"] == "result")
    # the final answer is already known before the result event (from the streamed text)
    assert answers[result_index - 1] == FINAL_TABLE_ANSWER
    assert seen_calls == sorted(seen_calls)
    assert draft.usage.output_tokens > 0 and draft.cost_usd is not None


def test_timeout_stream_keeps_partial_answer_tool_calls_and_usage() -> None:
    parser, draft = parse("timeout_partial")
    assert parser.result is None
    # the last message was still being typed (its block never closed): the deltas are kept
    assert draft.answer == "The balance of C1 is 1,234.50 USD as of"
    assert [call.name for call in draft.tool_calls] == ["mcp__erp__get_customer"]
    assert not draft.tool_calls[0].is_error
    starts = [
        e["event"]["message"]["usage"]
        for e in events_of("timeout_partial")
        if e["type"] == "stream_event" and e["event"]["type"] == "message_start"
    ]
    assert draft.usage.input_tokens == sum(usage["input_tokens"] for usage in starts)
    assert draft.usage.output_tokens > 0
    # The CLI never reported a cost: the price table's estimate of the tokens so far (never 0),
    # marked as an estimate (the runner's --max-cost-usd reads it while the CLI works).
    assert draft.cost_usd == estimate_cost("claude-sonnet-4-5", draft.usage) > 0
    assert draft.extra["cost_estimated"] is True
    assert draft.turns == 2


def test_tool_calls_without_result_are_kept_as_unfinished() -> None:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    for event in events_of("multi_tool"):
        if event["type"] == "user":
            break
        parser.feed_line(json.dumps(event))
    assert draft.tool_calls == []
    parser.finish()
    assert [call.arguments for call in draft.tool_calls] == [
        {"customer_id": "C1"},
        {"customer_id": "bad"},
    ]
    assert all(call.is_error and call.output == UNFINISHED_TOOL_OUTPUT for call in draft.tool_calls)
    assert draft.answer == "I'll look up the customer first."


def test_parallel_calls_are_recorded_in_issue_order() -> None:
    def use(tool_id: str, account: str) -> str:
        block = {
            "type": "tool_use",
            "id": tool_id,
            "name": "mcp__erp__get_customer",
            "input": {"account": account},
        }
        message = {"id": "m1", "content": [block], "usage": {}}
        return json.dumps({"type": "assistant", "message": message, "parent_tool_use_id": None})

    def result(tool_id: str, text: str) -> str:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
        return json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": [block]},
                "parent_tool_use_id": None,
            }
        )

    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    for line in (
        use("t1", "A"),
        use("t2", "B"),
        use("t3", "C"),
        result("t3", "c"),
        result("t1", "a"),
        result("t2", "b"),
    ):
        parser.feed_line(line)
    assert [(call.arguments["account"], call.output) for call in draft.tool_calls] == [
        ("A", "a"),
        ("B", "b"),
        ("C", "c"),
    ]


def test_max_turns_stream() -> None:
    parser, draft = parse("max_turns")
    assert parser.result is not None and parser.result["subtype"] == "error_max_turns"
    assert draft.extra["result_subtype"] == "error_max_turns"
    assert draft.extra["terminal_reason"] == "max_turns"
    assert len(draft.tool_calls) == 2
    assert draft.answer == "Checking."
    assert draft.turns == result_event("max_turns")["num_turns"]


def test_erp_status_from_init() -> None:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    assert parser.erp_status("erp") is None
    for line in lines_of("erp_failed"):
        parser.feed_line(line)
    assert parser.erp_status("erp") == "failed"
    assert parser.erp_status("other") == "missing"
    assert draft.extra["mcp_servers"] == [{"name": "erp", "status": "failed"}]
    assert "mcp__erp__get_customer" not in draft.extra["tools_offered"]


def test_permission_denials_are_recorded() -> None:
    _, draft = parse("permission_denied")
    denials = draft.extra["permission_denials"]
    assert [(d["tool_name"], d["tool_input"]) for d in denials] == [
        ("WebSearch", {"query": "Contoso revenue 2025"})
    ]
    denied = draft.tool_calls[0]
    assert denied.name == "WebSearch" and denied.is_error and denied.server == "web"
    assert draft.sources == []
    # the refused call's turn says what the model was told, in the conversation itself
    (turn,) = [m for m in draft.messages if m.role == "tool"]
    assert turn.tool_call_index == 0
    assert turn.content.startswith("Permission to use WebSearch has been denied")


def test_denials_are_known_before_the_result_event() -> None:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    for event in events_of("permission_denied"):
        if event["type"] == "result":
            break
        parser.feed_line(json.dumps(event))
    assert [d["tool_name"] for d in draft.extra["permission_denials"]] == ["WebSearch"]


def test_disabled_web_tool_is_an_error_not_a_denial() -> None:
    _, draft = parse("web_disabled")
    assert [call.is_error for call in draft.tool_calls] == [True, True]
    assert "No such tool available: WebSearch" in draft.tool_calls[0].output
    assert draft.extra["permission_denials"] == []


def test_web_search_results_become_sources() -> None:
    _, draft = parse("web_search")
    (call,) = draft.tool_calls
    assert call.name == "WebSearch" and call.server == "web" and not call.is_error
    assert call.arguments == {"query": "Contoso revenue 2025"}
    assert [(s.url, s.title) for s in draft.sources] == [
        ("https://example.com/contoso-annual-report-2025", "Contoso annual report 2025"),
        ("https://example.org/news/contoso-q3", "Contoso third-quarter results"),
    ]


def test_subagent_messages_are_kept_apart_from_the_answer() -> None:
    _, draft = parse("subagent")
    assert draft.answer == "Final: C1 owes 1,234.50 USD."
    (prompt,) = draft.extra["subagent_messages"]
    assert prompt["role"] == "user" and prompt["text"] == "SUBTASK: find C1 balance"
    names = [call.name for call in draft.tool_calls]
    assert names == [
        "Agent",
        "mcp__erp__get_customer",
    ]  # issue order; the sub-agent's finished first
    assert draft.tool_calls[0].output.startswith("Sub-agent result: C1 owes 1234.50.")
    marked = draft.extra["subagent_tool_calls"]
    assert [entry["index"] for entry in marked] == [1]
    assert marked[0]["parent_tool_use_id"] == prompt["parent_tool_use_id"]


def test_subagent_text_never_becomes_the_answer() -> None:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    main = {"id": "m1", "content": [{"type": "text", "text": "Main answer."}], "usage": {}}
    sub = {"id": "s1", "content": [{"type": "text", "text": "Sub-agent musing."}], "usage": {}}
    parser.feed_line(json.dumps({"type": "assistant", "message": main, "parent_tool_use_id": None}))
    parser.feed_line(json.dumps({"type": "assistant", "message": sub, "parent_tool_use_id": "t1"}))
    assert draft.answer == "Main answer."
    assert draft.extra["subagent_messages"] == [
        {"parent_tool_use_id": "t1", "role": "assistant", "text": "Sub-agent musing."}
    ]
    assert draft.turns == 1


def test_malformed_lines_are_counted_and_skipped() -> None:
    parser, draft = parse("malformed")
    assert_multi_tool_record(draft, result_event("multi_tool"))
    assert parser.malformed_lines == 5
    assert draft.extra["malformed_lines"] == 5
    assert draft.extra["malformed_samples"][0].startswith("Warning: could not read settings")


def test_feed_line_accepts_bytes_and_ignores_blank_lines() -> None:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    assert parser.feed_line(b"\n") is None
    assert parser.feed_line(b"\xff\xfe not json") is None
    event = parser.feed_line(lines_of("multi_tool")[0].encode())
    assert event is not None and event["subtype"] == "init"
    assert parser.malformed_lines == 1


def test_answer_is_the_whole_final_message_not_its_last_fragment() -> None:
    """A final message of two text blocks: the CLI's ``result`` holds only the last block."""

    def assistant(message_id: str, block: dict[str, Any]) -> str:
        message = {"id": message_id, "role": "assistant", "content": [block], "usage": {}}
        return json.dumps({"type": "assistant", "message": message, "parent_tool_use_id": None})

    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    parser.feed_line(assistant("m1", {"type": "text", "text": "Looking it up."}))
    parser.feed_line(assistant("m2", {"type": "text", "text": "Balance: 10 USD. "}))
    parser.feed_line(assistant("m2", {"type": "thinking", "thinking": "hmm"}))
    parser.feed_line(
        assistant("m2", {"type": "text", "text": "Source: [R1](http://x/erp/USMF/r/1)."})
    )
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "result": "Source: [R1](http://x/erp/USMF/r/1).",
    }
    parser.feed_line(json.dumps(result))
    assert draft.answer == "Balance: 10 USD. Source: [R1](http://x/erp/USMF/r/1)."
    assert draft.turns == 2


def test_result_text_is_the_fallback_when_no_message_text_was_seen() -> None:
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    parser.feed_line(json.dumps({"type": "result", "subtype": "success", "result": "Only here."}))
    assert draft.answer == "Only here."
    assert draft.cost_usd is None


@pytest.mark.parametrize(
    ("name", "server"),
    [
        ("mcp__erp__get_customer", "erp"),
        ("mcp__other__x", "other"),
        ("WebFetch", "web"),
        ("WebSearch", "web"),
        ("Agent", None),
    ],
)
def test_tool_server(name: str, server: str | None) -> None:
    assert tool_server(name) == server


def test_api_retries_are_recorded() -> None:
    """A ``system/api_retry`` event as CLI 2.1.197 prints it when the API answers 529."""
    retry = {
        "type": "system",
        "subtype": "api_retry",
        "attempt": 1,
        "max_retries": 10,
        "retry_delay_ms": 541.225428676619,
        "error_status": 529,
        "error": "overloaded",
        "session_id": "ab147628-237c-4401-81ee-27889becbdd7",
    }
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    parser.feed_line(json.dumps(retry))
    parser.feed_line(json.dumps({**retry, "attempt": 2, "retry_delay_ms": 1117.8}))
    assert draft.extra["api_retries"] == [
        {"attempt": 1, "error_status": 529, "error": "overloaded", "delay_ms": 541.2},
        {"attempt": 2, "error_status": 529, "error": "overloaded", "delay_ms": 1117.8},
    ]
    assert parser.init is None


@pytest.mark.parametrize("name", ["multi_tool", "no_partials"])
def test_transcript_has_every_turn_and_one_model_event_per_api_message(name: str) -> None:
    _, draft = parse(name)
    turns = [(m.role, m.content) for m in draft.messages]
    assert turns == [
        ("assistant", "I'll look up the customer first."),
        ("tool", ""),
        ("tool", ""),
        ("assistant", "Now the invoices."),
        ("tool", ""),
        ("assistant", FINAL_TABLE_ANSWER),
    ]
    assert [[t.index for t in m.tool_calls] for m in draft.messages if m.role == "assistant"] == [
        [0, 1],
        [2],
        [],
    ]
    models = [e for e in draft.events if e.type == "model"]
    assert [e.message_index for e in models] == [0, 3, 5]
    assert all(e.request_id.startswith("msg_") for e in models)
    if name == "multi_tool":  # per-message output tokens come only with partial messages
        assert sum(e.usage.output_tokens for e in models) == draft.usage.output_tokens
    assert all(e.usage.input_tokens > 0 for e in models)
    assert all(e.duration_s is not None and e.duration_s >= 0 for e in models)


def test_thinking_retries_and_start_up_are_captured() -> None:
    import time

    lines = lines_of("no_partials")
    retry = {
        "type": "system",
        "subtype": "api_retry",
        "attempt": 1,
        "error_status": 529,
        "error": "overloaded",
        "retry_delay_ms": 1500,
    }
    thinking = json.loads(lines[1])
    thinking["message"]["content"] = [
        {"type": "thinking", "thinking": "C1 first.", "signature": ""}
    ]
    draft = TrajectoryDraft()
    parser = StreamParser(draft)
    time.sleep(0.05)  # the CLI starting up before its init event
    for line in [lines[0], json.dumps(retry), json.dumps(thinking), *lines[1:]]:
        parser.feed_line(line)
    parser.finish()
    failed, first = [e for e in draft.events if e.type == "model"][:2]
    # The failed attempt has its own event (error and status); the one that answered counts it.
    assert (failed.error, failed.status_code) == ("API HTTP 529 (overloaded)", 529)
    assert failed.message_index is None and failed.duration_s is not None
    assert first.retries == 1 and first.error is None
    assert draft.messages[0].reasoning == "C1 first."
    assert draft.excluded_s >= 1.5 + 0.05  # the retry wait and the start-up
