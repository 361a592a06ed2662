"""A hung provider is infrastructure, a slow one is the agent's: first-byte and idle-stream
deadlines, and every protocol violation a provider error, for the harnesses that speak a provider's
wire format themselves (openai: Responses; custom: Chat Completions and Anthropic Messages).

The providers are the local fakes (real HTTP, the real SDKs): one that accepts the request and
sends nothing, one that stops mid-stream, one that streams slowly, and ones that break the protocol
(a cut stream, an HTML body, an unknown event type). The Claude CLI's cases are in
test_claude_cli.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from harnesses import AgentEnvironment, ErpEndpoint, HarnessOptions, Status, create_harness
from harnesses._protocol import stall_timeout_s
from harnesses._runner import QuestionRunner, RunConfig
from ledgerbench_core.dataset import Question, TaskType
from ledgerbench_core.trajectory import ModelEvent, TerminationReason
from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel
from tests.fakes.openai_server import Turn, serve_openai

pytestmark = pytest.mark.timeout(120)

BUDGET = 30.0
"""Room for the first question's start-up on a loaded machine (MCP client, SDK: seconds); the
retry window is a quarter of it (7.5 s), so a hung provider is given up well before the end."""
STALL = 1.5
"""The stall bound the runner is given."""
SLOW_BUDGET = 25.0
"""For the slow model: long enough to start on a loaded machine (imports and the first MCP session
took over 12 s at load 11 on 2 cores), and it never finishes typing."""
PARTIAL = "The open balance of the customer is"
SLOW_TEXT = PARTIAL + " still being typed" * 300
HARNESSES = ["openai", "custom-chat", "custom-anthropic"]
TIMED = [
    "openai",
    pytest.param("custom-chat", marks=pytest.mark.slow),
    pytest.param("custom-anthropic", marks=pytest.mark.slow),
]
"""The cases that wait out a stall or a deadline (about 12 s each, mostly asleep): one harness in
the default tier, all of them in the slow tier."""


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def openai_turn(kind: str) -> Turn:
    return {
        "hang": Turn(fault="hang"),
        "stall": Turn(text=PARTIAL, stall_after_text_s=60.0),
        "trickle": Turn(text=SLOW_TEXT, trickle_s=0.2),
        "truncate": Turn(text=PARTIAL, fault="truncate"),
        "non_json": Turn(text=PARTIAL, fault="non_json"),
        "unknown_event": Turn(text=PARTIAL, fault="unknown_event"),
    }[kind]


def anthropic_reply(kind: str) -> Reply:
    return {
        "hang": Reply(fault="hang"),
        "stall": Reply(text=PARTIAL, stall_s=60.0, stall_after_text=True),
        "trickle": Reply(text=SLOW_TEXT, trickle_s=0.2),
        "truncate": Reply(text=PARTIAL, fault="truncate"),
        "non_json": Reply(text=PARTIAL, fault="non_json"),
        "unknown_event": Reply(text=PARTIAL, fault="unknown_event"),
    }[kind]


@contextmanager
def provider(harness: str, kind: str) -> Iterator[tuple[str, HarnessOptions, Any]]:
    """(harness name, options, fake) for a provider that always answers as ``kind``."""
    if harness == "custom-anthropic":
        model = ScriptedModel(lambda body, turn: anthropic_reply(kind), all_requests_main=True)
        with AnthropicFakeServer(model) as fake:
            yield "custom", HarnessOptions(base_url=fake.base_url, extra={"api": "anthropic"}), fake
        return
    with serve_openai(lambda request: openai_turn(kind)) as fake:
        yield harness.split("-")[0], HarnessOptions(base_url=fake.base_url), fake


def model_posts(fake: Any) -> int:
    return sum(1 for r in fake.requests if r.method == "POST" and "/messages" in r.path) or sum(
        1 for r in fake.requests if r.method == "POST"
    )


async def run(harness: str, options: HarnessOptions, erp_server, budget: float = BUDGET):
    agent = create_harness(harness, options)
    env = AgentEnvironment(
        erp=ErpEndpoint(url=erp_server.url), instructions="Be exact.", work_dir="/tmp"
    )
    config = RunConfig(harness=harness, timeout=budget, stall_timeout=STALL, progress=False)
    question = Question(
        id="q-fault",
        query="Open balance?",
        task_type=TaskType.obligations,
        segment="AR",
        scenario="t",
    )
    runner = QuestionRunner(agent, env, config)
    try:
        return await runner.run(question, 0)
    finally:
        await runner.aclose()


def failed_events(record) -> list[ModelEvent]:
    return [e for e in record.events if isinstance(e, ModelEvent) and e.error]


def test_the_default_stall_bound_fits_the_budget() -> None:
    assert [stall_timeout_s(b) for b in (2, 6, 60, 300)] == [1.0, 1.5, 15.0, 15.0]


@pytest.mark.parametrize("harness", TIMED)
async def test_a_hung_provider_is_unavailable_retried_and_fast(harness, erp_server) -> None:
    with provider(harness, "hang") as (name, options, fake):
        record = await run(name, options, erp_server)
        posts = model_posts(fake)
    assert record.status == Status.error, record.termination
    assert record.termination.reason == TerminationReason.provider_unavailable
    assert record.termination.infrastructure, "never judged, re-run by --retry-errors"
    assert "no response headers within 1.5 s" in (record.termination.detail or "")
    assert posts >= 2, "a hung request is retried within the retry window"
    stalls = failed_events(record)
    assert len(stalls) >= 2 and all("no response headers" in e.error for e in stalls)
    # Retries start while the window (a quarter of the budget, from the first failure) is open.
    window = 0.25 * BUDGET
    given_up = stalls[-1].started_s + stalls[-1].duration_s
    assert given_up - stalls[0].started_s <= STALL + window + STALL + 1.0
    assert record.latency_s < BUDGET - 5.0, "given up well before the deadline"
    assert record.answer == ""


@pytest.mark.parametrize("harness", TIMED)
async def test_a_stream_that_goes_silent_is_unavailable(harness, erp_server) -> None:
    with provider(harness, "stall") as (name, options, _):
        record = await run(name, options, erp_server)
    assert record.termination.reason == TerminationReason.provider_unavailable, record.termination
    assert "the response stream sent nothing for 1.5 s" in (record.termination.detail or "")
    assert record.latency_s < BUDGET - 5.0
    assert any("sent nothing" in e.error for e in failed_events(record))


@pytest.mark.parametrize("harness", TIMED)
async def test_a_model_that_streams_slowly_is_the_agents_time_limit(harness, erp_server) -> None:
    with provider(harness, "trickle") as (name, options, _):
        record = await run(name, options, erp_server, SLOW_BUDGET)
    assert record.status == Status.timeout, record.termination
    assert record.termination.reason == TerminationReason.time_limit
    assert not record.termination.infrastructure, "slow is the agent's failure: judged"
    # What the model typed by the deadline (how much depends on the machine's load).
    assert record.answer and SLOW_TEXT.startswith(record.answer) and record.answer != SLOW_TEXT
    turns = [m for m in record.messages if m.role == "assistant"]
    assert turns and turns[-1].content == record.answer, "the partial text is an assistant turn"
    cuts = failed_events(record)  # custom: its step, then its final-answer call
    assert cuts and all(e.error == "cut off by the deadline" for e in cuts)
    assert record.messages[cuts[-1].message_index].content == record.answer


@pytest.mark.parametrize("harness", HARNESSES)
@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("truncate", "ended"),
        ("non_json", "text/html instead of an event stream"),
        ("unknown_event", "unknown event type"),
    ],
)
async def test_protocol_violations_are_provider_errors(harness, kind, words, erp_server) -> None:
    with provider(harness, kind) as (name, options, fake):
        record = await run(name, options, erp_server)
        posts = model_posts(fake)
    assert record.status == Status.error, record.termination
    assert record.termination.reason == TerminationReason.provider_error, record.termination
    assert record.termination.infrastructure
    detail = record.termination.detail or ""
    assert words in detail and detail.startswith("ProviderError: "), detail
    assert len(detail.splitlines()) == 1 and "validation error" not in detail
    assert posts == 1, "a broken reply is not retried"
    (event,) = failed_events(record)
    assert words in event.error
