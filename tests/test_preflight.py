"""Pre-flight of the model endpoint: before the first question, every way a model server can make
all questions fail alike is one line, and nothing is written; a prompt over the context stops the
run however late it shows; a slow prefill raises the stall bound instead of being called silent.

The servers are the local fakes speaking each real server's wire (llama.cpp, vLLM, Ollama, the
OpenAI API, the Anthropic API), driven by the real SDKs through the runner.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from harnesses import AgentOutcome, HarnessOptions
from harnesses import run as cli
from harnesses._preflight import ModelEndpoint, check_endpoint, context_overflow, stall_bound
from harnesses._runner import MANIFEST_FILE, TRAJECTORIES_FILE, RunConfig, RunConfigError, run
from ledgerbench_core.trajectory import RunManifest, Status, TrajectoryRecord
from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel
from tests.fakes.openai_server import (
    Call,
    ServerTraits,
    Turn,
    fake_tokens,
    prompt_tokens,
    serve_openai,
)
from tests.test_runner_plugins import question, snapshot_of, write_dataset

pytestmark = pytest.mark.timeout(120)

KEY = "test-key"
MODEL = "smollm2-135m"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def dataset(erp_server, tmp_path: Path) -> Path:
    items = [
        question("pf-credit", "What is the credit limit for SYNCUS-0001 in USMF?"),
        question("pf-aging", "What is the aged balance for SYNCUS-0002 in USMF?"),
    ]
    return write_dataset(tmp_path / "ds.yaml", items, snapshot_of(erp_server.db_url))


def config(dataset: Path, erp_server, out: Path, **settings: Any) -> RunConfig:
    values: dict[str, Any] = {
        "dataset": dataset,
        "harness": "custom",
        "model": MODEL,
        "erp_url": erp_server.url,
        "out": out,
        "timeout": 30.0,
        "concurrency": 1,
        "progress": False,
    }
    return RunConfig(**(values | settings))


def refused(cfg: RunConfig) -> str:
    with pytest.raises(RunConfigError) as refusal:
        run(cfg, log=lambda _: None)
    line = str(refusal.value)
    assert "\n" not in line
    assert not cfg.out.exists(), "nothing is written before the pre-flight passed"
    return line


def manifest(run_dir: Path) -> RunManifest:
    return RunManifest.model_validate_json((run_dir / MANIFEST_FILE).read_text())


def records(run_dir: Path) -> list[TrajectoryRecord]:
    lines = (run_dir / TRAJECTORIES_FILE).read_text().splitlines()
    return [TrajectoryRecord.model_validate_json(line) for line in lines]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- before the first question -------------------------------------------------------------------


def test_a_prompt_over_the_llama_cpp_context_is_one_line_with_both_numbers(
    dataset, erp_server, tmp_path
) -> None:
    traits = ServerTraits(flavor="llama.cpp", models=(MODEL,), context_tokens=3000)
    with serve_openai([Turn(text="never asked")], traits=traits) as fake:
        line = refused(config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url))
        assert not fake.requests, "no question was put to the model"
        tokenized = [r for r in fake.preflight if r.path == "/tokenize"]
    assert tokenized, "counted by the server's own tokenizer"
    prompt = fake_tokens(tokenized[0].body["content"])
    assert f"({prompt:,} tokens" in line
    assert "(3,000 tokens, from GET /v1/models meta.n_ctx)" in line
    assert "--tools" in line and MODEL in line


def test_a_prompt_that_fits_runs_and_the_manifest_says_what_was_seen(
    dataset, erp_server, tmp_path
) -> None:
    traits = ServerTraits(flavor="vllm", models=(MODEL,), context_tokens=200_000)
    with serve_openai([Turn(text="Credit limit USD 50,000.")] * 2, traits=traits) as fake:
        cfg = config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url)
        summary = run(cfg.model_copy(update={"stall_timeout": 7.0}))
    assert summary.recorded == 2
    seen = manifest(tmp_path / "run").model_endpoint
    assert seen is not None
    assert (seen.server, seen.wire, seen.model) == ("vllm", "chat", MODEL)
    assert (seen.context_tokens, seen.context_source) == (200_000, "GET /v1/models max_model_len")
    assert seen.prompt_tokens_source == "server tokenizer" and seen.prompt_tokens > 1000
    assert seen.served_models == [MODEL] and seen.tool_count > 5
    assert seen.stall_bound_s == 7.0, "--stall-timeout is used as given"
    assert seen.usage_reported is None, "checked only when --max-tokens needs it"
    assert 0 < seen.first_byte_s < seen.duration_s  # the time itself: bench/bench_preflight.py


def test_the_context_window_option_counts_where_the_server_says_nothing(
    dataset, erp_server, tmp_path
) -> None:
    with serve_openai([Turn(text="never asked")]) as fake:
        line = refused(
            config(
                dataset,
                erp_server,
                tmp_path / "run",
                base_url=fake.base_url,
                harness_opts={"context_window": "4096"},
            )
        )
    assert "(4,096 tokens, from context_window)" in line and "estimate" in line


def test_ollama_reports_its_context_through_api_show(dataset, erp_server, tmp_path) -> None:
    traits = ServerTraits(flavor="ollama", models=(MODEL,), context_tokens=2048)
    with serve_openai([Turn(text="never asked")], traits=traits) as fake:
        line = refused(config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url))
    assert "(2,048 tokens, from POST /api/show num_ctx)" in line


def test_the_openai_harness_against_a_server_without_responses_names_custom(
    dataset, erp_server, tmp_path
) -> None:
    traits = ServerTraits(flavor="llama.cpp", models=(MODEL,), wires=frozenset({"chat"}))
    with serve_openai([Turn(text="never asked")], traits=traits) as fake:
        line = refused(
            config(dataset, erp_server, tmp_path / "run", harness="openai", base_url=fake.base_url)
        )
    assert "does not speak the Responses API (HTTP 404 on POST /responses)" in line
    assert "--harness custom" in line


def test_a_server_that_speaks_another_wire_is_one_line(dataset, erp_server, tmp_path) -> None:
    with AnthropicFakeServer(ScriptedModel([Reply(text="never asked")]), api_key=KEY) as fake:
        line = refused(
            config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url + "/v1")
        )
    assert "does not speak Chat Completions" in line and "--base-url" in line


def test_a_model_the_server_does_not_have_is_one_line(dataset, erp_server, tmp_path) -> None:
    traits = ServerTraits(flavor="vllm", models=("qwen2.5-7b",), context_tokens=32768)
    with serve_openai([Turn(text="never asked")], traits=traits) as fake:
        line = refused(config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url))
    assert f"has no model {MODEL!r} (it serves: qwen2.5-7b)" in line and "--model" in line


def test_a_wrong_base_url_is_one_line_from_the_command_line(
    dataset, erp_server, tmp_path, capsys
) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    argv = ["--dataset", str(dataset), "--harness", "custom", "--model", MODEL]
    argv += ["--base-url", base, "--erp-url", erp_server.url, "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert f"cannot reach the model server at {base}" in err and "--base-url" in err
    assert not (tmp_path / "run").exists()


NO_USAGE_AGENTS = {
    "custom-streamed": dict(harness="custom"),
    "custom-unstreamed": dict(harness="custom", harness_opts={"stream": "false"}),
    "openai-responses": dict(harness="openai"),
    "custom-messages": dict(harness="custom", harness_opts={"api": "anthropic"}),
}


@pytest.mark.parametrize("agent", list(NO_USAGE_AGENTS))
def test_max_tokens_against_a_server_that_reports_no_usage_is_refused_before_any_question(
    dataset, erp_server, tmp_path, agent: str
) -> None:
    """``--max-tokens`` is kept by counting the tokens the server reports: a server that reports
    none is refused by the pre-flight, in the wire and the mode (streamed or not) the harness
    uses, before any question; the same server runs without the limit."""
    settings = NO_USAGE_AGENTS[agent]
    answer = "Credit limit USD 50,000."
    if agent == "custom-messages":
        silent = Reply(text=answer, omit_usage=True)
        model = ScriptedModel([silent], side_reply=Reply(text="OK", omit_usage=True))
        server: Any = AnthropicFakeServer(model, api_key=KEY)
    else:
        traits = ServerTraits(
            flavor="llama.cpp", models=(MODEL,), context_tokens=10**6, reports_usage=False
        )
        server = serve_openai([Turn(text=answer)] * 2, traits=traits)
    with server as fake:
        cfg = config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url, **settings)
        line = refused(cfg.model_copy(update={"max_tokens": 5000}))
        questions = fake.main_requests() if agent == "custom-messages" else fake.requests
        assert not questions, "no question was put to the model"
        run(cfg.model_copy(update={"ids": ["pf-credit"]}), log=lambda _: None)
    assert "reports no token usage" in line and "--max-tokens 5000 cannot be enforced" in line
    assert "run without --max-tokens" in line
    (record,) = records(tmp_path / "run")
    assert record.status == Status.ok and record.usage is None  # unknown, not 0


def test_max_tokens_runs_against_a_server_that_reports_usage_when_streamed(
    dataset, erp_server, tmp_path
) -> None:
    """The streamed probe asks for the usage as the harness does (``include_usage``)."""
    traits = ServerTraits(flavor="llama.cpp", models=(MODEL,), context_tokens=10**6)
    with serve_openai([Turn(text="Credit limit USD 50,000.")], traits=traits) as fake:
        cfg = config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url)
        run(cfg.model_copy(update={"max_tokens": 50_000, "ids": ["pf-credit"]}))
        streamed = [r for r in fake.preflight if (r.body or {}).get("stream")]
    assert streamed and streamed[0].body["stream_options"] == {"include_usage": True}
    seen = manifest(tmp_path / "run").model_endpoint
    assert seen is not None and seen.usage_reported is True
    (record,) = records(tmp_path / "run")
    assert record.status == Status.ok and record.usage is not None


# --- the Claude CLI and plug-ins ----------------------------------------------------------------


@pytest.fixture
def anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    if shutil.which("claude") is None:
        pytest.fail("the claude CLI is not installed (.ci/run installs it)")


def claude_config(dataset: Path, erp_server, out: Path, base_url: str, **settings: Any):
    values = dict(harness="claude", model="claude-sonnet-4-5", base_url=base_url)
    return config(dataset, erp_server, out, **(values | settings))


def test_the_claude_cli_prompt_over_a_declared_context_is_one_line(
    dataset, erp_server, tmp_path, anthropic_key
) -> None:
    model = ScriptedModel([Reply(text="never asked")])
    with AnthropicFakeServer(model, api_key=KEY) as fake:
        cfg = claude_config(dataset, erp_server, tmp_path / "run", fake.base_url)
        line = refused(cfg.model_copy(update={"harness_opts": {"context_window": "2000"}}))
        assert not fake.main_requests(), "no question was put to the model"
        probes = [r for r in fake.requests if r.path == "/v1/messages"]
    assert len(probes) == 1 and probes[0].headers["x-api-key"] == KEY
    assert line.startswith("the prompt claude sends before the question (")
    assert "(2,000 tokens, from context_window)" in line and "--tools" in line


def test_the_claude_cli_against_a_server_without_the_messages_api_is_one_line(
    dataset, erp_server, tmp_path, anthropic_key
) -> None:
    traits = ServerTraits(flavor="vllm", models=("claude-sonnet-4-5",), context_tokens=10**6)
    with serve_openai([Turn(text="never asked")], api_key=None, traits=traits) as fake:
        base = fake.base_url.removesuffix("/v1")
        line = refused(claude_config(dataset, erp_server, tmp_path / "run", base))
    assert "does not speak the Anthropic Messages API (HTTP 404 on POST /messages)" in line


def test_the_claude_cli_against_a_dead_server_is_one_line(
    dataset, erp_server, tmp_path, anthropic_key
) -> None:
    base = f"http://127.0.0.1:{free_port()}"
    line = refused(claude_config(dataset, erp_server, tmp_path / "run", base))
    assert f"cannot reach the model server at {base}/v1" in line and "--base-url" in line


def test_the_claude_cli_with_max_tokens_against_a_server_without_usage_is_one_line(
    dataset, erp_server, tmp_path, anthropic_key
) -> None:
    model = ScriptedModel([Reply(text="x")], side_reply=Reply(text="OK", omit_usage=True))
    with AnthropicFakeServer(model, api_key=KEY) as fake:
        cfg = claude_config(dataset, erp_server, tmp_path / "run", fake.base_url)
        line = refused(cfg.model_copy(update={"max_tokens": 9000}))
        streamed = [r for r in fake.requests if (r.body or {}).get("stream")]
    assert streamed, "checked on a streamed probe, as the CLI streams"
    assert "reports no token usage in its streamed replies" in line
    assert "--max-tokens 9000 cannot be enforced" in line


def test_the_claude_cli_pre_flight_passes_and_is_in_the_manifest(
    dataset, erp_server, tmp_path, anthropic_key
) -> None:
    model = ScriptedModel([Reply(text="Credit limit USD 50,000.")])
    with AnthropicFakeServer(model, api_key=KEY) as fake:
        cfg = claude_config(dataset, erp_server, tmp_path / "run", fake.base_url, timeout=120.0)
        run(cfg.model_copy(update={"ids": ["pf-credit"], "max_tokens": 10**6}))
    seen = manifest(tmp_path / "run").model_endpoint
    assert seen is not None and (seen.wire, seen.model) == ("messages", "claude-sonnet-4-5")
    assert seen.tool_count > 5 and seen.prompt_tokens > 1000
    (record,) = records(tmp_path / "run")
    assert record.status == Status.ok, record.termination


class ChatPlugin:
    """A plug-in that says what it sends where (``model_endpoint``): the runner's pre-flight
    checks it like a built-in harness's."""

    name = "chat-plugin"

    def __init__(self, options: HarnessOptions) -> None:
        self.options = options
        self.model = options.model

    async def model_endpoint(self, env) -> ModelEndpoint:
        prompt = env.instructions + " " + "tool definitions " * 2000
        return ModelEndpoint("chat", self.options.base_url, self.model, KEY, prompt, 40)

    async def run(self, task, env, draft) -> AgentOutcome:
        return AgentOutcome(answer="never run")


def test_a_plugin_with_the_hook_gets_the_pre_flight_and_one_without_is_told_nothing_was_checked(
    dataset, erp_server, tmp_path
) -> None:
    traits = ServerTraits(flavor="llama.cpp", models=(MODEL,), context_tokens=4096)
    with serve_openai([Turn(text="never asked")], traits=traits) as fake:
        cfg = config(
            dataset, erp_server, tmp_path / "run", base_url=fake.base_url,
            harness="tests.test_preflight:ChatPlugin",
        )  # fmt: skip
        line = refused(cfg)
    assert "the prompt tests.test_preflight:ChatPlugin sends" not in line  # named by its wire
    assert "40 tools" in line and "(4,096 tokens, from GET /v1/models meta.n_ctx)" in line
    lines: list[str] = []
    plain = config(
        dataset, erp_server, tmp_path / "plain", harness="tests.test_runner_plugins:InstantHarness"
    )
    run(plain, log=lines.append)
    said = [line for line in lines if line.startswith("model server pre-flight")]
    assert said == [
        "model server pre-flight: nothing checked (tests.test_runner_plugins:InstantHarness has "
        "no model_endpoint(env) hook to say what it sends where)"
    ]


# --- during the run ----------------------------------------------------------------------------


def test_a_context_overflow_mid_run_stops_the_agent_and_is_never_infrastructure(
    dataset, erp_server, tmp_path
) -> None:
    """The first request fits; the tool result pushes the second over: llama.cpp's 400. The run
    stops with one line (exit 2 from the CLI), no retry, and no record calls it provider_error."""
    fits = ServerTraits(flavor="llama.cpp", models=(MODEL,), context_tokens=10**6)
    with serve_openai([Turn(text="x")], traits=fits) as fake:
        run(config(dataset, erp_server, tmp_path / "measure", base_url=fake.base_url))
        asked = max(prompt_tokens(r.body) for r in fake.requests)  # as the server counts
    first = manifest(tmp_path / "measure").model_endpoint
    assert first is not None and first.prompt_tokens < asked
    context = asked + 200  # room for the first request of a question, not for a page of results
    search = Call("search_parties", {"query": "Forest", "limit": 50})
    traits = ServerTraits(flavor="llama.cpp", models=(MODEL,), context_tokens=context)
    with serve_openai([Turn(tool_calls=[search])] + [Turn(text="x")] * 5, traits=traits) as fake:
        line = refused_after_start(
            config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url)
        )
        chats = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 2, "the overflow is not retried, and the next question never starts"
    assert f"is over its context of {context:,} tokens" in line and "--tools" in line
    kept = records(tmp_path / "run") if (tmp_path / "run" / TRAJECTORIES_FILE).exists() else []
    assert all(r.termination.reason.value != "provider_error" for r in kept)
    assert all(r.status != Status.error for r in kept)


def refused_after_start(cfg: RunConfig) -> str:
    with pytest.raises(RunConfigError) as refusal:
        run(cfg, log=lambda _: None)
    line = str(refusal.value)
    assert "\n" not in line
    return line


def test_a_slow_prefill_raises_the_stall_bound_instead_of_calling_it_silent(
    dataset, erp_server, tmp_path
) -> None:
    """A CPU server reading the prompt at 1,000 tokens a second needs several seconds before its
    first byte: over the default stall bound of this budget, inside the measured one."""
    traits = ServerTraits(
        flavor="llama.cpp", models=(MODEL,), context_tokens=10**6, prefill_tokens_per_s=1000.0
    )
    with serve_openai([Turn(text="Credit limit USD 50,000.")] * 2, traits=traits) as fake:
        cfg = config(dataset, erp_server, tmp_path / "run", base_url=fake.base_url, timeout=16.0)
        run(cfg.model_copy(update={"ids": ["pf-credit"]}), log=lambda _: None)
    seen = manifest(tmp_path / "run").model_endpoint
    assert seen is not None and seen.prefill_tokens_per_s is not None
    assert 500.0 < seen.prefill_tokens_per_s <= 1000.0, "the probe's rate, overhead included"
    reading = seen.prompt_tokens / 1000.0
    assert reading > 4.0, "the prompt takes longer to read than the default bound (4 s)"
    assert seen.stall_bound_s >= 3 * reading
    (record,) = records(tmp_path / "run")
    assert record.status == Status.ok, record.termination
    assert record.answer == "Credit limit USD 50,000."


# --- the parts ---------------------------------------------------------------------------------


def test_the_stall_bound_covers_the_measured_prefill() -> None:
    assert stall_bound(15.0, 0.1, None, 20_000) == 15.0
    assert stall_bound(15.0, 0.5, 25.0, 20_000) == pytest.approx(3 * (800 + 0.5))
    assert stall_bound(15.0, 8.0, None, 100) == 24.0


@pytest.mark.parametrize(
    ("message", "numbers"),
    [
        (
            "Error code: 400 - {'error': {'code': 400, 'message': 'request (9120 tokens) exceeds "
            "the available context size (8192 tokens), try increasing it', 'type': "
            "'exceed_context_size_error'}}",
            ("9,120", "8,192"),
        ),
        (
            "This model's maximum context length is 32768 tokens. However, you requested 40000 "
            "tokens (40000 in the messages, 0 in the completion).",
            ("40,000", "32,768"),
        ),
        ("prompt is too long: 210000 tokens > 200000 maximum", ("210,000", "200,000")),
    ],
)
def test_every_server_wording_of_an_overflow_is_recognised(message, numbers) -> None:
    line = context_overflow(RuntimeError(message))
    assert line is not None
    assert f"a request of {numbers[0]} tokens is over its context of {numbers[1]} tokens" in line
    assert context_overflow(RuntimeError("Error code: 400 - invalid tool schema")) is None


async def test_a_server_that_answers_html_is_not_an_api() -> None:
    pages = {"/models": ("text/html", "<html>router login</html>")}
    with serve_openai([], pages=pages) as fake:
        endpoint = ModelEndpoint("chat", fake.base_url.removesuffix("/v1"), MODEL, KEY, "p", 0)
        with pytest.raises(Exception) as refusal:
            await check_endpoint(endpoint, 15.0)
    assert "check --base-url" in str(refusal.value)
