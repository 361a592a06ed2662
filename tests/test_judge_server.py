"""The judge CLI against a local OpenAI-compatible server, through the real dspy.LM client."""

from __future__ import annotations

import copy
import importlib
import json
import re

import pytest

from judge import ScoreStatus, read_scores
from judge.run import main as run_main
from judge.summary import main as summary_main
from ledgerbench_core.dataset import Dimension, ExpectedFact, TaskType
from tests.fakes.judge_data import question, trajectory, write_run
from tests.fakes.judge_openai_chat import chat_adapter_reply, serve_fake_chat

pytestmark = pytest.mark.timeout(90)

SECRET = "sk-judge-test-secret-0123456789"
PROMPT_TOKENS, COMPLETION_TOKENS = 100, 20
# gpt-4o-mini list prices in DSPy's bundled table: $0.15 / $0.60 per million tokens.
COST_PER_CALL = (PROMPT_TOKENS * 0.15 + COMPLETION_TOKENS * 0.60) / 1e6


@pytest.fixture(autouse=True)
def clear_dspy_settings():
    yield
    dspy_settings = importlib.import_module("dspy.dsp.utils.settings")
    dspy_settings.main_thread_config.clear()
    dspy_settings.main_thread_config.update(copy.deepcopy(dspy_settings.DEFAULT_CONFIG))
    dspy_settings.thread_local_overrides.set(type(dspy_settings.DEFAULT_CONFIG)())


def grading_model(body: dict) -> str:
    """A scripted judge model: scores each assertion it is shown; 'GARBAGE' answers get nonsense."""
    user = body["messages"][-1]["content"]
    if "GARBAGE" in user:
        return "I refuse to use the format."
    assertions = re.search(r"\[\[ ## assertions ## \]\]\n(\[.*?\])\n\n", user, re.S).group(1)
    ids = [a["id"] for a in json.loads(assertions)]
    score = 1.0 if "GOOD" in user else 0.25
    return chat_adapter_reply(
        {"verdicts": [{"assertion_id": i, "score": score, "reason": "scripted"} for i in ids]}
    )


def _run(tmp_path, **kw):
    tags = {
        Dimension.accuracy: ["accuracy.ground_truth"],
        Dimension.clarity: ["clarity.acronyms", "clarity.consistent_terms"],
    }
    questions = [question(f"q{i}", tags=tags) for i in range(4)]
    questions.append(
        question(
            "r1",
            task_type=TaskType.entity_performance,
            tags={Dimension.clarity: ["clarity.acronyms"]},
        )
    )
    questions[0].expected = [
        ExpectedFact(kind="amount", field="balance", value=1234.56, tolerance=0.01)
    ]
    trajectories = [
        trajectory("q0", answer="GOOD: the balance is $1,234.56."),
        trajectory("q1", answer="GOOD answer"),
        trajectory("q2", answer="weak answer"),
        trajectory("q3", answer="GARBAGE"),
        trajectory("r1", answer="GOOD research", task_type=TaskType.entity_performance),
    ]
    return write_run(tmp_path / "run", questions, trajectories, **kw)


def test_cli_scores_with_exact_usage_cost_and_cache(tmp_path, monkeypatch, capsys) -> None:
    run_dir = _run(tmp_path)
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    with serve_fake_chat(
        grading_model, prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS
    ) as fake:
        argv = [
            str(run_dir), "--judge", "openai/gpt-4o-mini", "--base-url", fake.base_url,
            "--api-key-env", "JUDGE_TEST_KEY", "--concurrency", "3", "--retries", "1",
            "--no-progress",
        ]  # fmt: skip
        assert run_main(argv) == 0
        first_requests = len(fake.requests)
        # 4 good items x their dimensions = 2+2+2 + 1 research; GARBAGE: 2 dims x 2 attempts.
        assert first_requests == 7 + 4
        assert all(r["temperature"] == 0.0 for r in fake.requests)

        scores_path = run_dir / "scores" / "openai-gpt-4o-mini.jsonl"
        records = {r.question_id: r for r in read_scores(scores_path)[0]}
        assert records["q0"].overall == 1.0 and records["q2"].overall == 0.25
        assert records["q3"].dimensions[Dimension.clarity].status.value == "judge_error"
        assert records["q3"].overall is None
        assert records["q1"].usage.input_tokens == 2 * PROMPT_TOKENS
        assert records["q1"].cost_usd == pytest.approx(2 * COST_PER_CALL)
        per_dimension = records["q1"].extra["calls_by_dimension"]
        assert per_dimension["clarity"]["calls"] == 1
        assert per_dimension["clarity"]["cost_usd"] == pytest.approx(COST_PER_CALL)
        assert records["q3"].extra["calls_by_dimension"]["clarity"]["calls"] == 2  # retried

        manifest = json.loads((run_dir / "scores" / "openai-gpt-4o-mini.manifest.json").read_text())
        # Every call counted exactly once, whatever thread made it.
        assert manifest["usage"]["input_tokens"] == first_requests * PROMPT_TOKENS
        assert manifest["usage"]["output_tokens"] == first_requests * COMPLETION_TOKENS
        assert manifest["cost_usd"] == pytest.approx(first_requests * COST_PER_CALL)
        assert manifest["model"] == "openai/gpt-4o-mini" and manifest["mode"] == "per-dimension"

        # Re-scoring from scratch: the cache answers; only the failed dimensions are asked again.
        assert run_main([*argv, "--overwrite"]) == 0
        assert len(fake.requests) - first_requests == 2 * 2  # 2 dimensions x 2 attempts
        records = {r.question_id: r for r in read_scores(scores_path)[0]}
        assert records["q1"].cached and records["q1"].usage.input_tokens == 0
        assert records["q1"].overall == 1.0

    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="ignore"), path
    out = capsys.readouterr().out
    assert "equal weight" in out

    assert summary_main([str(run_dir), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["openai-gpt-4o-mini"]
    assert summary["judge_errors"] == 2  # q3: accuracy and clarity
    assert summary["task_types"]["entity_performance"]["scores"]["overall"]["mean"] == 1.0


def test_cli_rules_judge_offline(tmp_path, capsys) -> None:
    run_dir = _run(tmp_path)
    assert run_main([str(run_dir), "--judge", "rules", "--no-progress"]) == 0
    records = {r.question_id: r for r in read_scores(run_dir / "scores" / "rules.jsonl")[0]}
    assert records["q0"].dimensions[Dimension.accuracy].score == 1.0
    assert records["q0"].dimensions[Dimension.clarity].status.value == "needs_llm"
    assert (
        records["q1"].dimensions[Dimension.accuracy].status.value == "needs_llm"
    )  # no expected facts
    assert all(r.status is ScoreStatus.scored for r in records.values())
    assert "rules" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{missing}", "--judge", "rules"], "run directory"),
        (["{run}", "--judge", "gpt4"], "DSPy model string"),
        (["{run}", "--judge", "rules", "--concurrency", "0"], "--concurrency"),
        (["{run}", "--judge", "rules", "--dataset", "nope.yaml"], "--dataset"),
        (["{empty}", "--judge", "rules"], "manifest.json not found"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, message) -> None:
    run_dir = _run(tmp_path)
    (tmp_path / "empty").mkdir()
    paths = {"missing": tmp_path / "nope", "run": run_dir, "empty": tmp_path / "empty"}
    argv = [a.format(**paths) for a in argv]
    assert run_main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and "\n" not in err
    assert "Traceback" not in err


def test_summary_without_scores_is_exit_2(tmp_path, capsys) -> None:
    assert summary_main([str(tmp_path)]) == 2
    assert "judge.run" in capsys.readouterr().err


def test_reasoning_models_get_the_settings_they_accept() -> None:
    from judge._dspy_judge import DspyJudge

    judge = DspyJudge("openai/gpt-5.2", base_url="http://127.0.0.1:9/v1")
    judge.prepare()  # builds the LM; no request is made
    assert judge.settings()["temperature"] is None and judge.settings()["max_tokens"] is None
    plain = DspyJudge("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1")
    plain.prepare()
    assert plain.settings()["temperature"] == 0.0 and plain.settings()["max_tokens"] == 4000
    with_password = DspyJudge("openai/x", base_url="http://user:s3cret@127.0.0.1:9/v1")
    assert with_password.settings()["base_url"] == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("module", ["judge.run", "judge.summary", "judge.compare"])
def test_every_cli_has_help_with_examples_and_is_documented(module, capsys) -> None:
    from pathlib import Path

    cli = importlib.import_module(module)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    assert "examples:" in capsys.readouterr().out
    readme = (Path(__file__).resolve().parents[1] / "judge" / "README.md").read_text()
    assert f"python -m {module}" in readme


def test_plugin_judge_by_path_and_progress_bar(tmp_path, capsys) -> None:
    from judge import JudgeRunConfig, run_judge

    run_dir = _run(tmp_path)
    config = JudgeRunConfig(
        run_dir=run_dir, judge="tests.fakes.judge_data:ConstantJudge", progress=True
    )
    result = run_judge(config)
    records, _ = read_scores(result.scores_path)
    assert len(records) == 5 and all(r.overall == 0.5 for r in records)
    assert result.scores_path.name == "constant.jsonl"
    assert "judging" in capsys.readouterr().err  # the rich progress bar, on stderr


def test_kill_9_midway_then_resume_loses_nothing(tmp_path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    tags = {Dimension.clarity: ["clarity.acronyms"]}
    questions = [question(f"k{i}", tags=tags) for i in range(12)]
    trajectories = [trajectory(f"k{i}", answer=f"GOOD {i}") for i in range(12)]
    run_dir = write_run(tmp_path / "run", questions, trajectories)
    scores = run_dir / "scores" / "slow.jsonl"

    def slow_model(body: dict) -> str:
        time.sleep(0.15)
        return grading_model(body)

    with serve_fake_chat(slow_model) as fake:
        argv = [sys.executable, "-m", "judge.run", str(run_dir), "--judge", "openai/gpt-4o-mini"]
        argv += ["--base-url", fake.base_url, "--name", "slow", "--concurrency", "1"]
        argv += ["--no-progress", "--no-cache"]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if scores.exists() and len(scores.read_text().splitlines()) >= 3:
                break
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        written = len(read_scores(scores)[0])
        assert 3 <= written < 12
        before = len(fake.requests)
        assert run_main([*argv[3:], "--concurrency", "4"]) == 0
        records, bad = read_scores(scores)
        assert bad == 0 and sorted(r.question_id for r in records) == sorted(
            q.id for q in questions
        )
        # Only the unscored questions were asked again (at most one in flight when killed).
        assert len(fake.requests) - before == 12 - written


def test_rejected_credentials_stop_the_run_instead_of_judge_errors(tmp_path, capsys) -> None:
    from tests.fakes.judge_openai_chat import FakeHTTPError

    def deny(body: dict) -> str:
        raise FakeHTTPError(401, "Incorrect API key provided", "invalid_api_key")

    run_dir = _run(tmp_path)
    with serve_fake_chat(deny) as fake:
        argv = [str(run_dir), "--judge", "openai/gpt-4o-mini", "--base-url", fake.base_url]
        assert run_main([*argv, "--concurrency", "1", "--no-progress"]) == 2
        assert len(fake.requests) <= 2  # no retries; only the call already queued on the worker
    err = capsys.readouterr().err
    assert "judge model cannot be used" in err and "Incorrect API key" in err
    assert read_scores(run_dir / "scores" / "openai-gpt-4o-mini.jsonl")[0] == []


def test_transport_retries_are_counted_as_calls(tmp_path) -> None:
    from judge._base import JudgeItem
    from judge._dspy_judge import DspyJudge
    from tests.fakes.judge_openai_chat import FakeHTTPError

    failures = {"left": 2}

    def flaky(body: dict) -> str:
        if failures["left"]:
            failures["left"] -= 1
            raise FakeHTTPError(503, "overloaded", "server_error")
        return grading_model(body)

    q = question("q0", tags={Dimension.clarity: ["clarity.acronyms"]})
    with serve_fake_chat(flaky) as server:
        judge = DspyJudge("openai/gpt-4o-mini", base_url=server.base_url, retry_backoff_s=0.01)
        judge.prepare()
        outcome = judge.score(JudgeItem(q, trajectory("q0", answer="GOOD")))
    assert outcome.dimensions[Dimension.clarity].score == 1.0
    assert len(server.requests) == 3
    assert outcome.calls == 3 and outcome.extra["transport_retries"] == 2
    assert outcome.usage.input_tokens == PROMPT_TOKENS  # only the answered call has usage
