"""The LLM judge stops on a dead endpoint (issue 25): a pre-flight call before judging, and a
circuit breaker like the runner's. Real local sockets and servers, the real CLI in a subprocess:
a port nobody listens on (connection refused), a server that accepts and never answers, and a
server that answers the pre-flight and then drops every connection."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judge._runner import read_scores
from ledgerbench_core.dataset import Dimension
from tests.conftest import REPO_ROOT, free_port
from tests.fakes.dead_server import silent_server
from tests.fakes.judge_data import question, trajectory, write_run
from tests.fakes.judge_openai_chat import chat_adapter_reply, serve_fake_chat

pytestmark = pytest.mark.timeout(180)

LIMIT_S = 30.0
"""The issue's bound: a dead --base-url stops within 30 s, with one line."""


def _run(tmp_path):
    tags = {Dimension.clarity: ["clarity.acronyms"]}
    questions = [question(f"q{i}", tags=tags) for i in range(6)]
    trajectories = [trajectory(f"q{i}", answer="GOOD answer") for i in range(6)]
    return write_run(tmp_path / "run", questions, trajectories)


def _judge(run_dir, base_url: str, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, JUDGE_TEST_KEY="k", LITELLM_LOCAL_MODEL_COST_MAP="True")
    argv = [sys.executable, "-m", "judge.run", str(run_dir), "--judge", "openai/gpt-4o-mini",
            "--base-url", base_url, "--api-key-env", "JUDGE_TEST_KEY", *extra]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=150, cwd=REPO_ROOT, env=env)
    return done, time.monotonic() - started


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr  # one line, no traceback
    assert lines[0].startswith("error: ") and "Traceback" not in done.stderr
    return lines[0]


def test_connection_refused_stops_at_the_preflight_with_one_line(
    tmp_path, capsys, monkeypatch
) -> None:
    from judge.run import main

    run_dir = _run(tmp_path)
    # In this process, so that only the judge's own time counts (not an interpreter's start on
    # a loaded machine; bench/bench_judge_dead_endpoint.py times the whole command).
    monkeypatch.setenv("JUDGE_TEST_KEY", "k")
    argv = [str(run_dir), "--judge", "openai/gpt-4o-mini", "--api-key-env", "JUDGE_TEST_KEY",
            "--base-url", f"http://127.0.0.1:{free_port()}/v1", "--no-progress"]  # fmt: skip
    started = time.monotonic()
    code = main(argv)
    seconds = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and seconds < LIMIT_S
    assert len([x for x in err.splitlines() if x.strip()]) == 1 and "Traceback" not in err

    done, _ = _judge(run_dir, f"http://127.0.0.1:{free_port()}/v1", "--no-progress")
    line = _one_error_line(done)  # the real command: the same one line
    assert "does not answer" in line and "Connection refused" in line
    assert "check --base-url" in line and "resume with: python -m judge.run" in line
    # Nothing was written: another attempt (another port) is not refused as a changed setting.
    assert not (run_dir / "scores" / "openai-gpt-4o-mini.manifest.json").exists()
    assert read_scores(run_dir / "scores" / "openai-gpt-4o-mini.jsonl")[0] == []
    again, _ = _judge(run_dir, f"http://127.0.0.1:{free_port()}/v1", "--no-progress")
    assert "does not answer" in _one_error_line(again)


@pytest.mark.slow  # waits out the 15 s pre-flight on a real socket
def test_a_server_that_never_answers_stops_within_30_seconds(tmp_path) -> None:
    run_dir = _run(tmp_path)
    with silent_server() as server:
        done, _ = _judge(run_dir, server.url, "--no-progress")
        stopped = time.monotonic()
    line = _one_error_line(done)
    # From the judge's first call to its exit (the interpreter's start on a loaded machine is
    # not the endpoint's doing; bench/bench_judge_dead_endpoint.py times the whole command).
    assert server.accepted and stopped - server.accepted[0] < LIMIT_S
    assert len(server.accepted) == 1  # one pre-flight call, nothing after it
    assert "does not answer" in line and "timed out" in line


class _PreflightThenDrop(BaseHTTPRequestHandler):
    """Answers the pre-flight call, then drops every connection without a reply."""

    def log_message(self, format, *args) -> None:  # quiet
        return

    def do_POST(self) -> None:
        from judge._dspy_judge import PREFLIGHT_PROMPT

        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if PREFLIGHT_PROMPT.encode() not in body:
            self.server.dropped += 1
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        data = (
            b'{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
            b'"message":{"role":"assistant","content":"OK"},"finish_reason":"stop"}],'
            b'"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}'
        )
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.slow  # two judge commands against real servers, with transport back-off
def test_the_circuit_breaker_stops_after_n_records_in_a_row_and_the_run_resumes(tmp_path) -> None:
    run_dir = _run(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PreflightThenDrop)
    server.dropped = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        done, _ = _judge(
            run_dir, base_url, "--concurrency", "1", "--max-consecutive-infra-failures", "2",
            "--no-progress",
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    line = _one_error_line(done)
    assert "stopped after 2 records in a row could not reach the judge model" in line
    assert "resume with: python -m judge.run" in line and "--max-consecutive-infra-failures" in line
    # 2 records x 3 attempts each (the judge's transport retries), then the stop; the record
    # already running on the one worker finishes, the one queued behind it is cancelled
    assert 2 * 3 <= server.dropped <= 3 * 3
    scores_path = run_dir / "scores" / "openai-gpt-4o-mini.jsonl"
    written, _ = read_scores(scores_path)
    assert 2 <= len(written) < 6  # stopped early, not a judge_error for every record
    assert all(r.extra.get("judge_unreachable") for r in written)
    assert all(r.dimensions[Dimension.clarity].status.value == "judge_error" for r in written)

    # The endpoint is back: the same command judges every record, the failed ones again.
    reply = chat_adapter_reply(
        {"verdicts": [{"assertion_id": "clarity.acronyms", "score": 1.0, "reason": "ok"}]}
    )
    with serve_fake_chat(lambda body: reply, port=server.server_address[1]) as fake:
        done, _ = _judge(run_dir, base_url, "--concurrency", "1", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert len(fake.preflights) == 1
    records, _ = read_scores(scores_path)
    assert len(records) == 6 and all(r.overall == 1.0 for r in records)


def test_the_progress_text_counts_errors() -> None:
    from collections import Counter

    from judge._runner import JudgeRunResult, _status_text

    status = Counter(scored=7, records_with_errors=2, judge_error=3, unreachable=1)
    text = _status_text(status, JudgeRunResult(scores_path=None, manifest_path=None, calls=9))
    assert text == ("7 scored, 2 with judge errors (3 dims), 1 judge model unreachable, 9 calls")
