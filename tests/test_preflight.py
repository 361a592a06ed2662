"""Pre-flight of the model endpoint: before the first question, every way a model server can make
all questions fail alike is one line, and nothing is written; a prompt over the context stops the
run however late it shows; a slow prefill raises the stall bound instead of being called silent.

The servers are the local fakes speaking each real server's wire (llama.cpp, vLLM, Ollama, the
OpenAI API, the Anthropic API), driven by the real SDKs through the runner.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from harnesses import run as cli
from harnesses._preflight import ModelEndpoint, check_endpoint, context_overflow, stall_bound
from harnesses._runner import MANIFEST_FILE, TRAJECTORIES_FILE, RunConfig, RunConfigError, run
from ledgerbench_core.trajectory import RunManifest, Status, TrajectoryRecord
from tests.fakes.anthropic_server import AnthropicFakeServer, Reply, ScriptedModel
from tests.fakes.openai_server import Call, ServerTraits, Turn, fake_tokens, serve_openai
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


# --- during the run ----------------------------------------------------------------------------


def test_a_context_overflow_mid_run_stops_the_agent_and_is_never_infrastructure(
    dataset, erp_server, tmp_path
) -> None:
    """The first request fits; the tool result pushes the second over: llama.cpp's 400. The run
    stops with one line (exit 2 from the CLI), no retry, and no record calls it provider_error."""
    fits = ServerTraits(flavor="llama.cpp", models=(MODEL,), context_tokens=10**6)
    with serve_openai([Turn(text="x")], traits=fits) as fake:
        run(config(dataset, erp_server, tmp_path / "measure", base_url=fake.base_url))
    first = manifest(tmp_path / "measure").model_endpoint
    assert first is not None
    context = first.prompt_tokens + 1500  # room for the question, not for a page of results
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
