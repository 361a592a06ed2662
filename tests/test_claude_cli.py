"""The real ``claude`` binary, driven by a scripted model on a local Anthropic-protocol server,
against the real ERP MCP server, through the real question runner.

Skipped (with the reason shown) only where the binary is not installed; ``.ci/run`` installs it with
``npm install -g @anthropic-ai/claude-code``. Every test also checks that no CLI or MCP process is
left over, by listing ``/proc``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnesses import AgentEnvironment, ErpEndpoint, HarnessOptions, Status, create_harness
from harnesses._claude_cli import (
    INSTALL_COMMAND,
    PINNED_CLI_VERSION,
    TOKEN_VARIABLE,
    ClaudeCliUnavailable,
    build_command,
    mcp_config,
    retry_settings,
)
from harnesses._runner import QuestionRunner, RunConfig
from ledgerbench_core._trial import TRIAL_HEADER, trial_key
from ledgerbench_core.dataset import Question, TaskType
from tests.conftest import TEST_TOKEN, RunningServer, start_mcp_server, stop_process
from tests.fakes.anthropic_server import (
    AnthropicFakeServer,
    Reply,
    ScriptedModel,
    ToolUse,
    tool_result_text,
    tool_results,
)

CLAUDE = shutil.which("claude")
needs_claude = pytest.mark.skipif(
    CLAUDE is None, reason=f"claude CLI not installed (install: {INSTALL_COMMAND})"
)
pytestmark = [pytest.mark.claude_cli, pytest.mark.timeout(120)]

API_KEY = "sk-ant-test-key"
MODEL = "claude-sonnet-4-6"
INSTRUCTIONS = "You are the LedgerBench test agent. ANSWER-FIRST-MARKER."
SONNET_PRICE = (3e-6, 15e-6, 0.3e-6)
"""USD per input, output and cache-read token (the CLI's own price table for this model)."""


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def processes_under(folder: Path) -> list[str]:
    """Live processes whose command line mentions ``folder`` or whose working directory is in it."""
    marker = str(folder)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
            state = next(
                line
                for line in (entry / "status").read_text().splitlines()
                if line.startswith("State:")
            )
        except (OSError, StopIteration):
            continue
        if "zombie" in state:
            continue
        if marker in cmdline or cwd.startswith(marker):
            found.append(f"{entry.name}: {cmdline[:160]} (cwd {cwd})")
    return found


def wait_no_processes(folder: Path, timeout: float = 5.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        left = processes_under(folder)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def files_containing(folder: Path, needle: str) -> list[Path]:
    return [
        path
        for path in folder.rglob("*")
        if path.is_file() and needle.encode() in path.read_bytes()
    ]


def question(query: str, timeout: float = 30.0, qid: str = "q-test-001") -> Question:
    return Question(
        id=qid,
        query=query,
        task_type=TaskType.obligations,
        segment="AR",
        scenario="Customer Setup",
        timeout=timeout,
    )


def run_question(
    fake: AnthropicFakeServer,
    erp: ErpEndpoint,
    work_dir: Path,
    query: str,
    *,
    timeout: float = 30.0,
    extra: dict[str, str] | None = None,
    effort: str | None = None,
    model: str | None = MODEL,
    stall_timeout: float | None = None,
    research: str = "web",
    **limits: Any,
) -> Any:
    """One question through the CLI; the published setup (``--research web``) unless told."""
    options = HarnessOptions(
        model=model, reasoning_effort=effort, base_url=fake.base_url, extra=extra or {}
    )
    harness = create_harness("claude", options)
    env = AgentEnvironment(
        erp=erp, instructions=INSTRUCTIONS, work_dir=str(work_dir), research=research
    )
    config = RunConfig(
        harness="claude",
        model=model,
        retries=0,
        progress=False,
        stall_timeout=stall_timeout,
        **limits,
    )
    runner = QuestionRunner(harness, env, config)
    return asyncio.run(runner.run(question(query, timeout), 0))


def first_customer(db_url: str) -> dict[str, str]:
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT legal_entity, account, name FROM customer ORDER BY account LIMIT 1")
        ).one()
    engine.dispose()
    return {"legal_entity": row[0], "account": row[1], "name": row[2]}


async def direct_calls(
    server: RunningServer, calls: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, bool]]:
    """The same tools called straight through an MCP client: what the CLI should have recorded."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    headers = {"Authorization": f"Bearer {server.token}"} if server.token else {}
    results = []
    async with Client(StreamableHttpTransport(server.url, headers=headers)) as client:
        for name, arguments in calls:
            result = await client.call_tool_mcp(name, arguments)
            text = "\n".join(block.text for block in result.content if hasattr(block, "text"))
            results.append((text, bool(result.is_error)))
    return results


def as_json(text: str) -> Any:
    # CLI 2.1.3xx appends a <system-reminder> block to the last tool result it sends the model
    text = re.sub(r"\s*<system-reminder>.*?</system-reminder>\s*$", "", text, flags=re.S)
    try:
        return json.loads(text)
    except ValueError:
        return text


def last_result_json(body: dict[str, Any]) -> Any:
    return as_json(tool_result_text(tool_results(body)[-1]))


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    return API_KEY


def endpoint(server: RunningServer, token: str | None = None) -> ErpEndpoint:
    return ErpEndpoint(url=server.url, token=token if token is not None else server.token)


# --------------------------------------------------------------------------------------------------
# a full conversation
# --------------------------------------------------------------------------------------------------


def conversation_script(customer: dict[str, str]) -> ScriptedModel:
    """erp_info + search_parties, then get_customer with the account the search found (and a
    lookup that fails), then an answer built from the tool output the CLI passed back."""

    def script(body: dict[str, Any], turn: int) -> Reply:
        if turn == 0:
            return Reply(
                text=f"Looking up {customer['name']}.",
                tool_uses=[
                    ToolUse("mcp__erp__erp_info", {}),
                    ToolUse(
                        "mcp__erp__search_parties",
                        {"query": customer["name"], "party_type": "customer"},
                    ),
                ],
                input_tokens=1000,
                output_tokens=50,
            )
        if turn == 1:
            # parallel calls: find the search result whatever order the CLI sent them back in
            found = [as_json(tool_result_text(block)) for block in tool_results(body)]
            searches = [r for r in found if isinstance(r, dict) and "candidates" in r]
            assert searches, f"no search result among {[str(r)[:120] for r in found]}"
            best = searches[0]["candidates"][0]
            return Reply(
                text="Reading the customer record.",
                tool_uses=[
                    ToolUse(
                        "mcp__erp__get_customer",
                        {"account": best["account"], "legal_entity": best["legal_entity"]},
                    ),
                    ToolUse("mcp__erp__get_customer", {"account": "NO-SUCH-ACCOUNT-404"}),
                ],
                input_tokens=2000,
                output_tokens=60,
                cache_read_input_tokens=500,
            )
        found = next(
            parsed["customer"]
            for parsed in map(as_json, map(tool_result_text, tool_results(body)))
            if isinstance(parsed, dict) and "customer" in parsed
        )
        return Reply(
            text=f"**{found['name']}** ({found['account']}) has credit limit "
            f"{found.get('credit_limit')}. [record]({found.get('url')})",
            input_tokens=3000,
            output_tokens=70,
        )

    return ScriptedModel(script)


@pytest.fixture
def audited_erp_server(erp_db_url: str, tmp_path: Path) -> Iterator[tuple[RunningServer, Path]]:
    """An ERP server with a token and an audit log (outside the CLI's work folder)."""
    audit = tmp_path / "audit" / "calls.jsonl"
    server, _ = start_mcp_server(erp_db_url, "--audit-log", str(audit), token=TEST_TOKEN)
    yield server, audit
    stop_process(server.process)


@needs_claude
def test_multi_tool_conversation_is_recorded_faithfully(
    api_key: str, audited_erp_server: tuple[RunningServer, Path], tmp_path: Path
) -> None:
    erp_server_with_token, audit = audited_erp_server
    customer = first_customer(erp_server_with_token.db_url)
    work = tmp_path / "work"
    work.mkdir()
    with AnthropicFakeServer(conversation_script(customer), api_key=api_key) as fake:
        record = run_question(
            fake,
            endpoint(erp_server_with_token),
            work,
            f"What is the credit limit of {customer['name']}?",
            effort="low",
        )
    assert record.status == Status.ok, record.error
    # every call the CLI made told the ERP which question it was for (the trial header)
    entries = [json.loads(line) for line in audit.read_text().splitlines()]
    assert sorted(entry["tool"] for entry in entries) == sorted(
        call.name.removeprefix("mcp__erp__") for call in record.tool_calls
    )
    assert {entry["trial"] for entry in entries} == {trial_key(record.question_id, 0)}
    assert wait_no_processes(work) == []

    expected_calls = [
        ("mcp__erp__erp_info", {}),
        ("mcp__erp__search_parties", {"query": customer["name"], "party_type": "customer"}),
        (
            "mcp__erp__get_customer",
            {"account": customer["account"], "legal_entity": customer["legal_entity"]},
        ),
        ("mcp__erp__get_customer", {"account": "NO-SUCH-ACCOUNT-404"}),
    ]
    assert [(call.name, call.arguments) for call in record.tool_calls] == expected_calls
    direct = asyncio.run(
        direct_calls(
            erp_server_with_token,
            [(call.name.removeprefix("mcp__erp__"), call.arguments) for call in record.tool_calls],
        )
    )
    for call, (direct_text, direct_error) in zip(record.tool_calls, direct, strict=True):
        assert call.is_error == direct_error
        assert call.server == "erp"
        if call.name == "mcp__erp__erp_info":
            continue  # holds nothing call-specific; compared below by key set only
        assert as_json(call.output) == as_json(direct_text), call.name
    assert [call.is_error for call in record.tool_calls] == [False, False, False, True]
    assert "NO-SUCH-ACCOUNT-404" in record.tool_calls[3].output
    assert set(as_json(record.tool_calls[0].output)) >= {"today"}

    details = as_json(record.tool_calls[2].output)["customer"]
    assert record.answer.startswith(f"**{details['name']}** ({customer['account']})")
    assert str(details.get("credit_limit")) in record.answer

    assert record.usage.input_tokens == 1000 + 2000 + 500 + 3000
    assert record.usage.cached_input_tokens == 500
    assert record.usage.output_tokens == 50 + 60 + 70
    price_in, price_out, price_cache = SONNET_PRICE
    assert record.cost_usd == pytest.approx(6000 * price_in + 180 * price_out + 500 * price_cache)
    assert record.turns >= 3
    assert record.extra["result_subtype"] == "success"
    assert record.extra["cli_model"] == MODEL
    servers = [{key: s[key] for key in ("name", "status")} for s in record.extra["mcp_servers"]]
    assert servers == [{"name": "erp", "status": "connected"}]

    main = fake.main_requests()
    assert len(main) == 3
    for request in main:
        assert request.headers["x-api-key"] == api_key
        assert request.body["model"] == MODEL
        assert request.body["output_config"]["effort"] == "low"
        system = json.dumps(request.body["system"])
        assert "ANSWER-FIRST-MARKER" in system
        names = {tool["name"] for tool in request.body["tools"]}
        builtins = {name for name in names if not name.startswith("mcp__erp__")}
        assert builtins == {"WebSearch", "WebFetch"}
        assert "mcp__erp__get_customer" in names

    stream = work / "claude_streams" / "q-test-001__0.jsonl"
    assert stream.exists()
    assert sorted(p.name for p in work.iterdir()) == ["claude_streams"]  # temp HOME removed
    assert files_containing(work, TEST_TOKEN) == []
    assert files_containing(work, api_key) == []


# --------------------------------------------------------------------------------------------------
# failures
# --------------------------------------------------------------------------------------------------


@needs_claude
def test_erp_server_refusing_the_token_fails_the_question(
    api_key: str, erp_server_with_token: RunningServer, tmp_path: Path
) -> None:
    model = ScriptedModel([Reply(text="I could not reach the ERP.")], all_requests_main=True)
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(
            fake, endpoint(erp_server_with_token, token="wrong-token"), tmp_path, "Any question?"
        )
    assert record.status == Status.error
    assert record.error is not None
    assert record.error.class_ == "ErpNotConnectedError"
    assert "could not connect to the ERP MCP server" in record.error.message
    servers = [{key: s[key] for key in ("name", "status")} for s in record.extra["mcp_servers"]]
    assert servers == [{"name": "erp", "status": "failed"}]
    assert wait_no_processes(tmp_path) == []
    assert files_containing(tmp_path, "wrong-token") == []


@needs_claude
@pytest.mark.parametrize(
    "cap", [{"extra": {"max_turns": "2"}}, {"max_turns": 2, "extra": {"max_turns": "9"}}]
)
def test_turn_cap_gives_max_turns(
    api_key: str, erp_server: RunningServer, tmp_path: Path, cap: dict
) -> None:
    """The harness option, or the runner's --max-turns where it is tighter (the CLI's own
    --max-turns gets the tighter of the two)."""
    model = ScriptedModel(
        [Reply(text="Checking again.", tool_uses=[ToolUse("mcp__erp__erp_info", {})])]
    )
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(fake, endpoint(erp_server), tmp_path, "Loop forever", **cap)
        assert len(fake.main_requests()) == 2
    assert record.status == Status.max_turns
    assert record.answer == "Checking again."
    assert [call.name for call in record.tool_calls] == ["mcp__erp__erp_info"] * 2
    assert record.extra["result_subtype"] == "error_max_turns"
    assert record.cost_usd is not None and record.cost_usd > 0
    assert wait_no_processes(tmp_path) == []


@needs_claude
def test_api_error_is_an_error_not_an_answer(
    api_key: str, erp_server: RunningServer, tmp_path: Path
) -> None:
    model = ScriptedModel([Reply(http_error=(400, "invalid_request_error"))])
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(fake, endpoint(erp_server), tmp_path, "Anything")
    assert record.status == Status.error
    assert record.error is not None and record.error.class_ == "ProviderError"
    assert record.termination.reason == "provider_error" and record.termination.infrastructure
    assert record.answer == "", "the CLI's 'API Error' text is not the model's answer"
    assert wait_no_processes(tmp_path) == []


@needs_claude
@pytest.mark.parametrize(
    ("status", "kind"), [(500, "api_error"), (401, "authentication_error")], ids=["500", "401"]
)
def test_a_failing_provider_is_unavailable_not_a_timeout(
    api_key: str, erp_server: RunningServer, tmp_path: Path, status: int, kind: str
) -> None:
    budget = 40.0
    model = ScriptedModel([Reply(http_error=(status, kind))], all_requests_main=True)
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(
            fake, endpoint(erp_server), tmp_path, "Anything", timeout=budget, model=None
        )
        failed = [r for r in fake.requests if r.path.startswith("/v1/messages")]
    assert record.status == Status.error, record.termination
    assert record.termination.reason == "provider_unavailable"
    assert record.termination.infrastructure
    assert record.error is not None and record.error.class_ == "ProviderUnavailableError"
    assert str(status) in record.error.message
    assert record.answer == "", "the CLI's 'API Error' message is not the model's answer"
    retries = record.extra["api_retries"]
    assert retries and all(retry["error_status"] == status for retry in retries)
    # CLAUDE_CODE_MAX_RETRIES sized to the budget: a 10 s retry window allows 4 retries (the
    # harness may stop the CLI sooner when a loaded machine stretches the waits past the window).
    assert len(retries) <= 4 and len(failed) <= 5
    # No --model: the record names the model the CLI reported in its init event.
    assert record.model is not None and record.model == record.extra["cli_model"]
    assert record.latency_s < budget / 2, "a dead provider must not eat the budget"
    assert wait_no_processes(tmp_path) == []


def test_retry_settings_follow_the_budget() -> None:
    short, default, long = (retry_settings(b, b) for b in (8.0, 60.0, 300.0))
    assert [int(s["CLAUDE_CODE_MAX_RETRIES"]) for s in (short, default, long)] == [2, 4, 5]
    # The CLI's request timeout covers the wait for headers: it is the stall bound.
    assert [s["API_TIMEOUT_MS"] for s in (short, default, long)] == ["2000", "15000", "15000"]
    assert retry_settings(60.0, 3.0, stall_s=15.0)["API_TIMEOUT_MS"] == "3000"
    assert retry_settings(60.0, 60.0, stall_s=4.5)["API_TIMEOUT_MS"] == "4500"


@needs_claude
def test_installed_cli_is_the_pinned_version() -> None:
    import subprocess

    version = subprocess.run(
        [CLAUDE, "--version"], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()[0]
    assert version == PINNED_CLI_VERSION, f"install it with {INSTALL_COMMAND}"


@needs_claude
@pytest.mark.parametrize("web", [True, False])
def test_web_search_is_recorded_or_switched_off(
    api_key: str, erp_server: RunningServer, tmp_path: Path, web: bool
) -> None:
    model = ScriptedModel(
        [
            Reply(
                text="Searching.", tool_uses=[ToolUse("WebSearch", {"query": "Contoso revenue"})]
            ),
            Reply(
                text="Contoso revenue: see [report](https://example.com/contoso-annual-report-2025)."
            ),
        ]
    )
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(
            fake,
            endpoint(erp_server),
            tmp_path,
            "Contoso revenue?",
            extra={"web": str(web).lower()},
        )
        offered = {tool["name"] for tool in fake.main_requests()[0].body["tools"]}
        hits = model.web_results
    assert record.status == Status.ok, record.error
    (call,) = record.tool_calls
    assert (call.name, call.server, call.arguments) == (
        "WebSearch",
        "web",
        {"query": "Contoso revenue"},
    )
    if web:
        assert {"WebSearch", "WebFetch"} <= offered
        assert not call.is_error
        assert [(s.url, s.title) for s in record.sources] == hits
    else:
        assert not offered & {"WebSearch", "WebFetch"}
        assert call.is_error and record.sources == []
    assert wait_no_processes(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# deadline
# --------------------------------------------------------------------------------------------------

PARTIAL = "The customer's balance, as far as I can tell, is"


def stalling_model() -> ScriptedModel:
    """A model that stops mid-message (for tests that need the CLI busy and stuck)."""
    return ScriptedModel(
        [
            Reply(text="Checking the ERP.", tool_uses=[ToolUse("mcp__erp__erp_info", {})]),
            Reply(text=PARTIAL, stall_s=120, stall_after_text=True),
        ]
    )


def slow_model() -> ScriptedModel:
    """A live model that types slowly: a few characters every 0.4 s, never done in the budget."""
    return ScriptedModel(
        [
            Reply(text="Checking the ERP.", tool_uses=[ToolUse("mcp__erp__erp_info", {})]),
            Reply(text=PARTIAL + " still being worked out" * 100, trickle_s=0.4),
        ]
    )


@needs_claude
def test_slow_model_times_out_with_partial_answer_and_no_leftovers(
    api_key: str, erp_server: RunningServer, tmp_path: Path
) -> None:
    budget = 20.0  # room for the CLI to start on a loaded machine; the model then types slowly
    with AnthropicFakeServer(slow_model(), api_key=api_key) as fake:
        started = time.monotonic()
        record = run_question(fake, endpoint(erp_server), tmp_path, "Balance?", timeout=budget)
        finished = time.monotonic() - started
        left = wait_no_processes(tmp_path, timeout=5.0)
    assert record.status == Status.timeout, record.error
    assert record.termination.reason == "time_limit" and not record.termination.infrastructure
    assert record.answer.startswith(PARTIAL) and record.answer != PARTIAL
    assert [call.name for call in record.tool_calls] == ["mcp__erp__erp_info"]
    assert not record.tool_calls[0].is_error
    assert record.usage.input_tokens > 0
    # No result event: the cost of the tokens so far, from the price table.
    assert record.cost_usd is not None and record.cost_usd > 0
    assert record.extra["cost_estimated"] is True
    assert finished < budget + 5.0
    assert left == [], left
    # The text typed so far is the last assistant turn; its call was cut off by the deadline.
    turn = record.messages[-1]
    assert turn.role == "assistant" and turn.content == record.answer
    cut = record.events[-1]
    assert cut.type == "model" and cut.error == "cut off by the deadline"
    assert record.messages[cut.message_index] is not None and cut.duration_s is None


# --------------------------------------------------------------------------------------------------
# a hung provider, a silent stream, a broken protocol
# --------------------------------------------------------------------------------------------------


@needs_claude
def test_a_provider_that_never_answers_is_unavailable_not_a_timeout(
    api_key: str, erp_server: RunningServer, tmp_path: Path
) -> None:
    budget, stall = 40.0, 3.0
    model = ScriptedModel([Reply(fault="hang")], all_requests_main=True)
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(
            fake, endpoint(erp_server), tmp_path, "Balance?", timeout=budget, stall_timeout=stall
        )
        attempts = len(fake.main_requests())
    assert record.status == Status.error, record.termination
    assert record.termination.reason == "provider_unavailable" and record.termination.infrastructure
    assert "no response headers within 3 s" in (record.termination.detail or "")
    assert attempts >= 2, "the CLI retries a request its API_TIMEOUT_MS (the stall bound) cut"
    failed = [e for e in record.events if e.type == "model" and e.error]
    assert len(failed) >= attempts - 1 and all(e.message_index is None for e in failed)
    assert record.latency_s < budget / 2, "a hung provider must not eat the budget"
    assert record.answer == ""
    assert wait_no_processes(tmp_path) == []


@needs_claude
def test_a_stream_that_goes_silent_ends_the_cli_as_provider_unavailable(
    api_key: str, erp_server: RunningServer, tmp_path: Path
) -> None:
    budget, stall = 40.0, 3.0
    model = ScriptedModel([Reply(text=PARTIAL, stall_s=120, stall_after_text=True)])
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(
            fake, endpoint(erp_server), tmp_path, "Balance?", timeout=budget, stall_timeout=stall
        )
        left = wait_no_processes(tmp_path, timeout=5.0)
    assert record.termination.reason == "provider_unavailable", record.termination
    assert record.error is not None and record.error.class_ == "ProviderStalledError"
    assert "the response stream sent nothing for 3 s" in record.error.message
    assert record.latency_s < budget / 2
    (event,) = [e for e in record.events if e.type == "model"]
    assert event.error.startswith("ProviderStalledError") and event.duration_s is None
    assert record.messages[event.message_index].content == PARTIAL
    assert left == [], left


@needs_claude
@pytest.mark.parametrize("fault", ["truncate", "non_json"])
def test_a_reply_the_cli_cannot_use_is_a_provider_error(
    api_key: str, erp_server: RunningServer, tmp_path: Path, fault: str
) -> None:
    model = ScriptedModel([Reply(text=PARTIAL, fault=fault)], all_requests_main=True)
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(fake, endpoint(erp_server), tmp_path, "Balance?", timeout=40.0)
    assert record.termination.reason == "provider_error", record.termination
    assert record.termination.infrastructure
    assert "malformed response" in (record.termination.detail or "")
    failed = [e for e in record.events if e.type == "model" and e.error]
    assert failed and "malformed response" in failed[-1].error
    assert wait_no_processes(tmp_path) == []


@needs_claude
def test_an_unknown_stream_event_is_ignored_by_the_cli_and_the_answer_kept(
    api_key: str, erp_server: RunningServer, tmp_path: Path
) -> None:
    """The CLI (not the harness) reads the provider's stream; it skips event types it does not
    know, as the Messages API's versioning policy asks of clients, and the reply stays whole."""
    model = ScriptedModel([Reply(text="The balance is 12.00 USD.", fault="unknown_event")])
    with AnthropicFakeServer(model, api_key=api_key) as fake:
        record = run_question(fake, endpoint(erp_server), tmp_path, "Balance?", timeout=40.0)
    assert record.status == Status.ok, record.termination
    assert record.answer == "The balance is 12.00 USD."
    assert wait_no_processes(tmp_path) == []


STDIO_MCP_SERVER = textwrap.dedent(
    """
    # A minimal stdio MCP server (no imports beyond json/sys: it starts at once, so the CLI's
    # start-up race with slow stdio servers cannot hide it). One tool, erp_info.
    import json, sys
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        method, result = request["method"], {}
        if method == "initialize":
            result = {"protocolVersion": request["params"]["protocolVersion"],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "erp", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "erp_info", "description": "ERP facts",
                                 "inputSchema": {"type": "object", "properties": {}}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": '{"today": "2026-03-02"}'}]}
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
    """
)


@needs_claude
@pytest.mark.slow  # the stand-in test below covers child clean-up fast; this drives the real CLI
def test_stdio_erp_child_is_ended_with_the_cli_at_the_deadline(
    api_key: str, tmp_path: Path
) -> None:
    server_script = tmp_path / "stdio_erp.py"
    server_script.write_text(STDIO_MCP_SERVER)
    work_dir = tmp_path / "run"
    erp = ErpEndpoint(
        url="http://127.0.0.1:9/unused", stdio_command=(sys.executable, str(server_script))
    )
    with AnthropicFakeServer(slow_model(), api_key=api_key) as fake:
        record = run_question(
            fake, erp, work_dir, "Balance?", timeout=8.0, extra={"erp_transport": "stdio"}
        )
        left = wait_no_processes(tmp_path, timeout=3.0)  # the MCP child names the script path
    assert record.status == Status.timeout, record.error
    assert record.answer.startswith(PARTIAL)
    assert [(c.name, c.output) for c in record.tool_calls] == [
        ("mcp__erp__erp_info", '{"today": "2026-03-02"}')
    ]
    assert left == [], left


RUNNER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, time
    from harnesses import AgentEnvironment, AgentTask, ErpEndpoint, HarnessOptions, TrajectoryDraft
    from harnesses import create_harness

    base_url, erp_url, work_dir = sys.argv[1:4]

    async def main():
        options = HarnessOptions(model="claude-sonnet-4-5", base_url=base_url)
        harness = create_harness("claude", options)
        env = AgentEnvironment(erp=ErpEndpoint(url=erp_url), instructions="x", work_dir=work_dir)
        draft = TrajectoryDraft()
        task = AgentTask("crash", 0, "Balance?", "obligations", 300, time.monotonic() + 300)
        run = asyncio.ensure_future(harness.run(task, env, draft))
        while not draft.answer.startswith("The customer"):
            await asyncio.sleep(0.05)
        print("STALLED", flush=True)
        await run

    asyncio.run(main())
    """
)


@needs_claude
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])  # SIGTERM: as SIGKILL
def test_no_cli_survives_a_runner_crash_or_interrupt(
    api_key: str, erp_server: RunningServer, tmp_path: Path, sig: signal.Signals
) -> None:
    with AnthropicFakeServer(stalling_model(), api_key=api_key) as fake:
        runner = subprocess.Popen(
            [sys.executable, "-c", RUNNER_SCRIPT, fake.base_url, erp_server.url, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert runner.stdout is not None
            line = runner.stdout.readline()
            assert line.strip() == "STALLED", runner.stderr.read() if runner.stderr else ""
            assert processes_under(tmp_path), "the CLI should be running now"
            runner.send_signal(sig)
            runner.wait(timeout=60)  # generous: a loaded 2-core machine can take seconds to stop
            left = wait_no_processes(tmp_path, timeout=20.0)
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    assert left == [], left


# --------------------------------------------------------------------------------------------------
# command line, configuration and set-up errors (no binary needed)
# --------------------------------------------------------------------------------------------------


def test_command_line_is_exactly_as_specified(tmp_path: Path) -> None:
    argv = build_command(
        "/bin/claude",
        "-starts with a dash?",
        instructions="INSTR",
        mcp_config_path="/x/mcp.json",
        model="claude-opus-4-7",
        effort="high",
        max_turns=20,
        web=True,
    )
    assert argv[:5] == ["/bin/claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert argv[-2:] == ["--", "-starts with a dash?"]

    def value(option: str) -> str:
        return argv[argv.index(option) + 1]

    assert value("--model") == "claude-opus-4-7"
    assert value("--effort") == "high"
    assert value("--max-turns") == "20"
    assert value("--append-system-prompt") == "INSTR"
    assert value("--mcp-config") == "/x/mcp.json"
    assert "--strict-mcp-config" in argv and "--no-session-persistence" in argv
    assert value("--tools") == "WebSearch,WebFetch"
    allowed = argv[argv.index("--allowedTools") + 1 : argv.index("--disallowedTools")]
    assert allowed == ["mcp__erp", "WebSearch", "WebFetch"]
    denied = argv[argv.index("--disallowedTools") + 1 : argv.index("--permission-mode")]
    assert {"Bash", "Read", "Write", "Edit", "Glob", "Grep", "Agent", "Task"} <= set(denied)
    assert value("--permission-mode") == "dontAsk"
    assert not any("dangerously" in arg or "bypass" in arg.lower() for arg in argv)

    no_web = build_command(
        "/bin/claude",
        "q",
        instructions="I",
        mcp_config_path="/m",
        model=None,
        effort=None,
        max_turns=5,
        web=False,
    )
    assert "--model" not in no_web and "--effort" not in no_web
    assert no_web[no_web.index("--tools") + 1] == ""
    assert no_web[no_web.index("--allowedTools") + 1 : no_web.index("--disallowedTools")] == [
        "mcp__erp"
    ]


def test_mcp_config_holds_only_the_erp_and_never_the_token() -> None:
    env = AgentEnvironment(
        erp=ErpEndpoint(
            url="http://127.0.0.1:9/mcp",
            token="s3cret",
            stdio_command=("python", "-m", "erp_mcp", "--db", "sqlite:///e.db"),
        ),
        instructions="I",
        work_dir="/tmp",
    )
    http = mcp_config(env, "http")
    assert list(http["mcpServers"]) == ["erp"]
    assert http["mcpServers"]["erp"] == {
        "type": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"},
    }
    assert "s3cret" not in json.dumps(http)
    stdio = mcp_config(env, "stdio")
    assert stdio["mcpServers"]["erp"] == {
        "type": "stdio",
        "command": "python",
        "args": ["-m", "erp_mcp", "--db", "sqlite:///e.db"],
    }
    trial = env.for_trial("q-7#2")
    assert mcp_config(trial, "http")["mcpServers"]["erp"]["headers"] == {
        "Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}",
        TRIAL_HEADER: "q-7#2",
    }
    assert "headers" not in mcp_config(trial, "stdio")["mcpServers"]["erp"]
    no_token = AgentEnvironment(ErpEndpoint(url="http://127.0.0.1:9/mcp"), "I", "/tmp")
    assert "headers" not in mcp_config(no_token, "http")["mcpServers"]["erp"]
    assert mcp_config(no_token.for_trial("q-7#0"), "http")["mcpServers"]["erp"]["headers"] == {
        TRIAL_HEADER: "q-7#0"
    }


def test_missing_binary_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with pytest.raises(ClaudeCliUnavailable) as caught:
        create_harness("claude", HarnessOptions(extra={"claude_bin": "/nonexistent/claude"}))
    message = str(caught.value)
    assert INSTALL_COMMAND in message and "\n" not in message


def test_missing_credentials_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ClaudeCliUnavailable) as caught:
        create_harness("claude", HarnessOptions(extra={"claude_bin": sys.executable}))
    message = str(caught.value)
    assert "ANTHROPIC_API_KEY" in message and "\n" not in message


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ({"max_turns": "zero"}, "max_turns=zero"),
        ({"max_turns": "0"}, "max_turns=0"),
        ({"web": "maybe"}, "web=maybe"),
        ({"erp_transport": "smoke"}, "erp_transport=smoke"),
    ],
)
def test_bad_harness_options_are_one_line_errors(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, str], fragment: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with pytest.raises(ValueError, match=fragment):
        create_harness("claude", HarnessOptions(extra={**extra, "claude_bin": sys.executable}))


def test_unknown_effort_is_refused_before_the_cli_would_ignore_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    options = HarnessOptions(reasoning_effort="extreme", extra={"claude_bin": sys.executable})
    with pytest.raises(ValueError, match="low, medium, high, xhigh, max"):
        create_harness("claude", options)


def test_child_environment_is_minimal_and_isolated(tmp_path: Path) -> None:
    from harnesses._claude_cli import child_environment

    outside = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "ANTHROPIC_API_KEY": "sk-a",
        "OPENAI_API_KEY": "sk-openai",
        "ERP_MCP_TOKEN": "leak",
        "HTTPS_PROXY": "http://proxy:3128",
    }
    env = child_environment(
        tmp_path, base_url="http://127.0.0.1:1", erp_token="t0k", environ=outside
    )
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"].startswith(str(tmp_path))
    assert env["ANTHROPIC_API_KEY"] == "sk-a" and env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1"
    assert env[TOKEN_VARIABLE] == "t0k" and env["HTTPS_PROXY"] == "http://proxy:3128"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert "OPENAI_API_KEY" not in env and "ERP_MCP_TOKEN" not in env
    no_token = child_environment(tmp_path, base_url=None, erp_token=None, environ=outside)
    assert TOKEN_VARIABLE not in no_token and "ANTHROPIC_BASE_URL" not in no_token


# --------------------------------------------------------------------------------------------------
# process handling with a stand-in binary (no claude needed): it replays a recorded stream, ignores
# SIGTERM and leaves a child behind, the worst case for the clean-up
# --------------------------------------------------------------------------------------------------

STAND_IN = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # an "MCP child"
    with open(sys.argv[1], encoding="utf-8") as stream:
        for line in stream:
            print(line, end="", flush=True)
    time.sleep(120)
    """
)


def stand_in_binary(folder: Path, stream: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "replay.py"
    script.write_text(STAND_IN)
    binary = folder / "claude"
    recorded = Path(__file__).parent / "data" / "claude_streams" / f"{stream}.jsonl"
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "{recorded}"\n')
    binary.chmod(0o755)
    return binary


@pytest.mark.parametrize(
    ("stream", "status", "answer", "budget"),
    [
        ("multi_tool", Status.ok, "**C1 (Forest Wholesale)** owes 1,234.50 USD.", 6.0),
        ("timeout_partial", Status.timeout, "The balance of C1 is 1,234.50 USD as of", 3.0),
    ],
)
def test_stubborn_cli_and_its_children_are_killed(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stream: str,
    status: Status,
    answer: str,
    budget: float,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    binary = stand_in_binary(tmp_path / "bin", stream)
    options = HarnessOptions(model=MODEL, extra={"claude_bin": str(binary)})
    harness = create_harness("claude", options)
    work_dir = tmp_path / "run"
    env = AgentEnvironment(
        erp=ErpEndpoint(url="http://127.0.0.1:9/mcp"), instructions="I", work_dir=str(work_dir)
    )
    # The stand-in falls silent mid-message and ignores SIGTERM: silence is allowed here (a stall
    # bound past the budget) so that the deadline, not the stall watchdog, ends it.
    config = RunConfig(harness="claude", retries=0, progress=False, stall_timeout=60)
    started = time.monotonic()
    record = asyncio.run(QuestionRunner(harness, env, config).run(question("q", budget), 0))
    elapsed = time.monotonic() - started
    assert record.status == status, record.error
    assert record.answer.startswith(answer)
    assert record.tool_calls and record.tool_calls[0].name == "mcp__erp__get_customer"
    if status == Status.ok:
        assert record.extra["cli_exit_forced"] is True
        assert elapsed < budget  # the result was kept without waiting for the deadline
    assert wait_no_processes(tmp_path, timeout=3.0) == []


def test_scratch_folders_of_dead_processes_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    from harnesses._claude_cli import OWNER_FILE, sweep_stale_scratch

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folders = {name: tmp_path / f"claude-{name}-0-x" for name in ("dead", "mine", "old", "new")}
    for folder in folders.values():
        folder.mkdir()
        (folder / "home").mkdir()
    (folders["dead"] / OWNER_FILE).write_text(str(dead.pid))
    (folders["mine"] / OWNER_FILE).write_text(str(os.getpid()))
    os.utime(folders["old"], (time.time() - 3600, time.time() - 3600))  # no owner, an hour old
    other = tmp_path / "claude_streams"
    other.mkdir()
    removed = sweep_stale_scratch(tmp_path)
    assert sorted(p.name for p in removed) == ["claude-dead-0-x", "claude-old-0-x"]
    assert folders["mine"].exists() and folders["new"].exists() and other.exists()
    assert sweep_stale_scratch(tmp_path) == [], "once per folder and process"
