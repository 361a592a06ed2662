"""Every shape of reply a real model server sends, through every wire a harness reads: no shape
makes a harness raise, and each is recorded the same way whatever the wire.

Wires: the Responses API (``--harness openai``), Chat Completions and the Messages API
(``--harness custom``), streamed and not, and the Claude CLI's stream-json (``--harness claude``,
the real binary against the Messages fake). The fakes speak the real protocols, the real SDKs and
the real ``claude`` read them, and the tools are the real ERP MCP server's.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harnesses import AgentEnvironment, ErpEndpoint, HarnessOptions, create_harness
from harnesses._claude_cli import INSTALL_COMMAND
from harnesses._protocol import DEFAULT_MAX_TOOL_CALLS
from harnesses._runner import QuestionRunner, RunConfig
from ledgerbench_core.dataset import Question, TaskType
from ledgerbench_core.trajectory import ModelEvent, RunManifest, TerminationReason, TrajectoryRecord
from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel, ToolUse
from tests.fakes.openai_server import Call, Turn, serve_openai

pytestmark = pytest.mark.timeout(120)

CALLS = [
    ("list_reference_data", {"kind": "currencies"}),
    ("search_parties", {"query": "co", "limit": 3}),
]
ANSWER = "The open balance is 1,234.00 USD as of 2026-03-02."
WIRES = [
    *("responses", "responses-whole", "chat", "chat-whole", "messages", "messages-whole"),
    "claude",
]
TOOL_SHAPES = ["arguments_text", "arguments_object", "no_index", "same_index", "no_id"]
FINISH_SHAPES = ["finish_length", "finish_filter", "finish_unknown"]
CALLS_STOPPED = "calls_finish_stop"
"""Tool calls with the finish reason of a plain stop (``stop``, ``end_turn``) instead of
``tool_calls`` / ``tool_use``, as some servers' tool-call parsers send them: the calls still run
(Responses has no finish reason for a completed reply: plain calls there)."""
SHAPES = [*TOOL_SHAPES, CALLS_STOPPED, *FINISH_SHAPES, "empty", "no_usage", "content_parts"]
CALL_SHAPES = {*TOOL_SHAPES, CALLS_STOPPED, "no_usage"}
FINISH_WORDS = {  # shape -> the finish reason each family of wires sends for it
    "finish_length": dict(responses="max_output_tokens", chat="length", messages="max_tokens"),
    "finish_filter": dict(responses="content_filter", chat="content_filter", messages="refusal"),
    "finish_unknown": dict(responses="paused_oddly", chat="eos_weird", messages="odd_stop"),
}


@dataclass(frozen=True)
class Wire:
    name: str

    @property
    def family(self) -> str:
        return "messages" if self.name in {"messages-whole", "claude"} else self.name.split("-")[0]

    @property
    def streamed(self) -> bool:
        return not self.name.endswith("-whole")


@pytest.fixture(autouse=True)
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def question() -> Question:
    return Question(
        id="q-shape",
        query="What is the open balance of customer Contoso as of 2026-03-02?",
        task_type=TaskType.obligations,
        segment="AR",
        scenario="Customer Setup",
        timeout=40.0,
    )


# --------------------------------------------------------------------------------------------------
# the scripts: one reply shape per test, in each wire's own terms
# --------------------------------------------------------------------------------------------------


def openai_script(wire: Wire, shape: str) -> list[Turn]:
    finish = FINISH_WORDS.get(shape, {}).get(wire.family)
    if shape in TOOL_SHAPES:
        quirks = set() if shape == "arguments_text" else {shape}
        calls = [Call(name, arguments) for name, arguments in CALLS]
        return [Turn(tool_calls=calls, quirks=frozenset(quirks)), Turn(text=ANSWER)]
    if shape == CALLS_STOPPED:
        calls = [Call(name, arguments) for name, arguments in CALLS]
        stop = "stop" if wire.family == "chat" else None
        return [Turn(tool_calls=calls, finish_reason=stop), Turn(text=ANSWER)]
    if shape == "empty":
        return [Turn(quirks=frozenset({"no_choices"}))]
    if shape == "content_parts":
        return [Turn(text=ANSWER, quirks=frozenset({"content_parts"}))]
    if shape == "no_usage":
        calls = [Call(name, arguments) for name, arguments in CALLS]
        return [
            Turn(tool_calls=calls, quirks=frozenset({"no_usage"})),
            Turn(text=ANSWER, quirks=frozenset({"no_usage"})),
        ]
    return [Turn(text=ANSWER, finish_reason=finish)]


def messages_script(wire: Wire, shape: str) -> list[Reply]:
    prefix = "mcp__erp__" if wire.name == "claude" else ""
    finish = FINISH_WORDS.get(shape, {}).get("messages")
    if shape in TOOL_SHAPES:
        uses = [
            ToolUse(
                prefix + name,
                arguments,
                input_as_text=shape == "arguments_text",
                omit_id=shape == "no_id",
            )
            for name, arguments in CALLS
        ]
        return [Reply(text="Looking it up.", tool_uses=uses), Reply(text=ANSWER)]
    if shape == CALLS_STOPPED:
        uses = [ToolUse(prefix + name, arguments) for name, arguments in CALLS]
        stopped = Reply(text="Looking it up.", tool_uses=uses, stop_reason="end_turn")
        return [stopped, Reply(text=ANSWER)]
    if shape == "empty":
        return [Reply(empty=True)]
    if shape == "no_usage":
        uses = [ToolUse(prefix + name, arguments) for name, arguments in CALLS]
        return [Reply(tool_uses=uses, omit_usage=True), Reply(text=ANSWER, omit_usage=True)]
    return [Reply(text=ANSWER, stop_reason=finish)]


# --------------------------------------------------------------------------------------------------
# running one question
# --------------------------------------------------------------------------------------------------


def run_record(harness: Any, env: AgentEnvironment, agent: str = "scripted") -> TrajectoryRecord:
    runner = QuestionRunner(harness, env, RunConfig(harness=agent, retries=0, progress=False))
    try:
        return asyncio.run(runner.run(question(), 0))
    finally:
        asyncio.run(harness.aclose())


def environment(erp_server: Any, work_dir: Path) -> AgentEnvironment:
    return AgentEnvironment(
        erp=ErpEndpoint(url=erp_server.url),
        instructions="You are a test finance assistant.",
        work_dir=str(work_dir),
        research="none",
    )


def run_wire(wire: Wire, shape: str, erp_server: Any, work_dir: Path) -> tuple[Any, list[str]]:
    """The record of one question, and the tool-call ids the harness sent back to the server."""
    env = environment(erp_server, work_dir)
    stream = "true" if wire.streamed else "false"
    if wire.family in {"responses", "chat"}:
        with serve_openai(openai_script(wire, shape)) as fake:
            if wire.family == "responses":
                extra = {"stream": stream, "web_search": "false"}
                options = HarnessOptions(base_url=fake.base_url, extra=extra)
                harness = create_harness("openai", options)
            else:
                options = HarnessOptions(base_url=fake.base_url, extra={"stream": stream})
                harness = create_harness("custom", options)
            record = run_record(harness, env)
            return record, openai_ids_sent_back(fake)
    script = messages_script(wire, shape)
    if wire.name == "claude":
        if shutil.which("claude") is None:
            pytest.skip(f"claude CLI not installed (install: {INSTALL_COMMAND})")
        with AnthropicFakeServer(ScriptedModel(script)) as fake:
            options = HarnessOptions(model="claude-sonnet-4-6", base_url=fake.base_url)
            record = run_record(create_harness("claude", options), env, agent="claude")
            return record, messages_ids_sent_back(fake)
    with AnthropicFakeServer(ScriptedModel(script, all_requests_main=True)) as fake:
        extra = {"api": "anthropic", "stream": stream}
        options = HarnessOptions(base_url=fake.base_url, extra=extra)
        record = run_record(create_harness("custom", options), env)
        return record, messages_ids_sent_back(fake)


def openai_ids_sent_back(fake: Any) -> list[str]:
    """The call ids of the tool results in the last model request (Responses or chat)."""
    body = fake.model_requests[-1].body
    outputs = [i for i in body.get("input") or [] if isinstance(i, dict)]
    ids = [i.get("call_id") for i in outputs if i.get("type") == "function_call_output"]
    ids += [m.get("tool_call_id") for m in body.get("messages") or [] if m.get("role") == "tool"]
    return ids


def messages_ids_sent_back(fake: Any) -> list[str]:
    bodies = [r.body for r in fake.main_requests() if isinstance(r.body, dict)]
    ids = []
    for message in (bodies[-1] if bodies else {}).get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            ids += [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"]
    return ids


def model_events(record: TrajectoryRecord) -> list[ModelEvent]:
    return [e for e in record.events if isinstance(e, ModelEvent) and e.error is None]


def tool_name(name: str) -> str:
    return name.removeprefix("mcp__erp__")


# --------------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("wire_name", WIRES)
def test_every_reply_shape_is_read_the_same_in_every_wire(
    wire_name: str, shape: str, erp_server: Any, tmp_path: Path
) -> None:
    wire = Wire(wire_name)
    record, ids_sent_back = run_wire(wire, shape, erp_server, tmp_path)
    reason = record.termination.reason
    assert reason not in {TerminationReason.harness_error, TerminationReason.provider_error}, (
        record.termination,
        record.error,
    )
    if shape in CALL_SHAPES:
        assert reason == TerminationReason.completed, record.termination
        assert record.answer == ANSWER
        # both calls ran, with the arguments the model sent, each with a result of its own
        made = sorted((tool_name(c.name), c.arguments) for c in record.tool_calls)
        assert made == CALLS  # (parallel calls are recorded as they finish)
        if wire.name == "claude" and shape == "no_id":
            # the CLI reads the API itself and refuses a call without an id; the harness records
            # both refusals, one per call
            assert all("did not run" in c.output and c.is_error for c in record.tool_calls)
            return
        assert not any(call.is_error for call in record.tool_calls), record.tool_calls
        assert len(ids_sent_back) == 2 and len(set(ids_sent_back)) == 2, ids_sent_back
        assert all(ids_sent_back), ids_sent_back
    if shape in FINISH_SHAPES:
        sent = FINISH_WORDS[shape][wire.family]
        assert reason == TerminationReason.answer_cut, record.termination
        assert record.status.value == "max_turns"
        assert sent in (record.termination.detail or "")
        assert record.answer == ANSWER  # judged as it stands
        assert model_events(record)[-1].finish_reason == sent
    if shape == "empty":
        assert reason == TerminationReason.empty_answer, record.termination
        assert record.answer == ""
    if shape == "content_parts":  # a Messages reply is made of parts anyway
        assert reason == TerminationReason.completed, record.termination
        assert record.answer == ANSWER
    if shape == "no_usage":
        assert record.usage is None and record.cost_usd is None  # unknown, not 0
        assert all(event.usage is None for event in model_events(record))
        assert record.extra["replies_without_usage"] == 2
    elif shape != "no_usage":
        assert record.usage is not None and record.usage.input_tokens > 0


# --------------------------------------------------------------------------------------------------
# one tool-call cap for the run, applied the same way by every harness
# --------------------------------------------------------------------------------------------------

MANY_CALLS = [("list_reference_data", {"kind": "currencies"})] * 8
CAP = 3


def run_capped(agent: str, erp_server: Any, work_dir: Path, **limits: Any) -> TrajectoryRecord:
    """One question whose model asks for 8 calls in its first turn, then answers."""
    env = environment(erp_server, work_dir)
    config = RunConfig(harness=agent, retries=0, progress=False, **limits)
    if agent == "openai" or agent == "custom":
        calls = [Call(name, arguments) for name, arguments in MANY_CALLS]
        with serve_openai([Turn(tool_calls=calls), Turn(text=ANSWER)]) as fake:
            extra = {"web_search": "false"} if agent == "openai" else {}
            harness = create_harness(agent, HarnessOptions(base_url=fake.base_url, extra=extra))
            return asyncio.run(QuestionRunner(harness, env, config).run(question(), 0))
    if shutil.which("claude") is None:
        pytest.skip(f"claude CLI not installed (install: {INSTALL_COMMAND})")
    uses = [ToolUse(f"mcp__erp__{name}", arguments) for name, arguments in MANY_CALLS]
    script = [Reply(text="Looking.", tool_uses=uses), Reply(text=ANSWER)]
    with AnthropicFakeServer(ScriptedModel(script)) as fake:
        options = HarnessOptions(model="claude-sonnet-4-6", base_url=fake.base_url)
        harness = create_harness("claude", options)
        return asyncio.run(QuestionRunner(harness, env, config).run(question(), 0))


@pytest.mark.parametrize("agent", ["openai", "custom", "claude"])
def test_one_tool_call_cap_for_every_harness(agent: str, erp_server: Any, tmp_path: Path) -> None:
    record = run_capped(agent, erp_server, tmp_path, max_tool_calls=CAP)
    assert record.termination.reason == TerminationReason.max_turns, record.termination
    assert len(record.tool_calls) == CAP
    assert not any(call.is_error for call in record.tool_calls), record.tool_calls
    assert record.extra["tool_call_cap"] == {"cap": CAP, "dropped": len(MANY_CALLS) - CAP}
    assert record.termination.detail == (
        f"tool-call cap of {CAP} reached: {len(MANY_CALLS) - CAP} further call(s) not run"
    )


def test_max_tokens_stops_the_run_against_a_server_that_reports_no_usage(
    erp_server: Any, tmp_path: Path
) -> None:
    from harnesses._runner import run
    from tests.test_runner_plugins import numbered_dataset, snapshot_of

    quirk = frozenset({"no_usage"})
    with serve_openai(lambda request: Turn(text=ANSWER, quirks=quirk)) as fake:
        dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_server.db_url))
        config = RunConfig(
            dataset=dataset,
            harness="custom",
            base_url=fake.base_url,
            erp_url=erp_server.url,
            max_tokens=10_000,
            concurrency=1,
            out=tmp_path / "run",
            progress=False,
        )
        lines: list[str] = []
        summary = run(config, log=lines.append)
    assert summary.stopped is not None and summary.ran == 1  # the first question, then no more
    stop = summary.stopped
    assert stop.startswith("stopped: --max-tokens 10000 cannot be enforced: the model server")
    assert "resume" not in stop and "\n" not in stop  # one line: a resume could not help
    assert stop in lines
    # the run's one tool-call cap is in the manifest, also when not given
    manifest = RunManifest.model_validate_json((tmp_path / "run" / "manifest.json").read_text())
    assert manifest.config["max_tool_calls"] == DEFAULT_MAX_TOOL_CALLS


def test_the_rules_judge_scores_a_cut_answer_as_it_stands_and_says_it_was_cut() -> None:
    from judge import RulesJudge
    from judge._runner import score_trajectory
    from ledgerbench_core.trajectory import Status, Termination
    from tests.fakes.judge_data import question as judged_question
    from tests.fakes.judge_data import trajectory

    detail = "the reply was cut at the output-token cap (finish reason 'length')"
    cut = trajectory(answer="The open balance is USD 1,234.56 and", status=Status.max_turns)
    cut = cut.model_copy(
        update={"termination": Termination.of(TerminationReason.answer_cut, detail)}
    )
    finished = trajectory(answer="The open balance is USD 1,234.56 and")
    score = score_trajectory(RulesJudge(), judged_question(), cut)
    assert score.extra["termination_reason"] == "answer_cut"
    assert score.extra["answer_cut"] == detail
    # judged on its text, exactly like the same text finished (the cut is shown, not penalised)
    assert score.overall == score_trajectory(RulesJudge(), judged_question(), finished).overall
    assert "answer_cut" not in score_trajectory(RulesJudge(), judged_question(), finished).extra


def test_the_run_summary_shows_unknown_usage_as_unknown() -> None:
    from rich.console import Console

    from harnesses._run_summary import RunSummary, summarize_records, summary_table
    from tests.fakes.judge_data import trajectory

    known = trajectory("q1")
    unknown = trajectory("q2").model_copy(update={"usage": None})
    rows = summarize_records([known, unknown])
    assert rows[0].usage_unknown == 1
    assert rows[0].input_tokens == (known.usage.input_tokens if known.usage else 0)

    def shown(records: list[TrajectoryRecord]) -> str:
        summary = RunSummary(
            run_dir=Path("runs/x"), run_id="x", expected=len(records), recorded=len(records),
            resumed=0, ran=len(records), interrupted=False, by_status={},
            by_task_type=summarize_records(records),
        )  # fmt: skip
        console = Console(width=200, record=True)
        console.print(summary_table(summary))
        return console.export_text()

    assert "(+1 unknown)" in shown([known, unknown])
    only_unknown = shown([unknown])
    assert "unknown" in only_unknown and "0/0" not in only_unknown


def test_version_2_records_still_read() -> None:
    """Records written before usage could be unknown and before finish reasons keep their
    meaning: usage as counted, no finish reason."""
    line = {
        "version": 2,
        "question_id": "q1",
        "task_type": "obligations",
        "harness": "custom",
        "answer": "done",
        "status": "ok",
        "termination": {"reason": "completed", "infrastructure": False},
        "latency_s": 1.0,
        "timeout_s": 60.0,
        "usage": {"input_tokens": 10, "output_tokens": 2},
        "events": [{"type": "model", "started_s": 0.0, "usage": {"input_tokens": 10}}],
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:00:01Z",
    }
    record = TrajectoryRecord.model_validate(line)
    assert record.version == 2 and record.usage is not None and record.usage.input_tokens == 10
    event = record.events[0]
    assert isinstance(event, ModelEvent) and event.finish_reason is None
    assert event.usage is not None and event.usage.input_tokens == 10


def test_the_inspect_export_says_how_a_model_call_ended() -> None:
    from types import SimpleNamespace

    from ledgerbench._inspect_log import _stop_reason

    def stop(finish: str | None, calls: list[str] | None = None) -> str:
        event = ModelEvent(started_s=0.0, finish_reason=finish)
        return _stop_reason(event, SimpleNamespace(tool_calls=calls))

    assert stop("length") == stop("max_tokens") == stop("max_output_tokens") == "max_tokens"
    assert stop("content_filter") == stop("refusal") == "content_filter"
    assert stop("end_turn") == stop(None) == "stop"
    assert stop("tool_use", ["call"]) == "tool_calls"
