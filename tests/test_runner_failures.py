"""Honest endings: termination reasons, blocking plug-ins, the circuit breaker, --retry-errors,
the run-directory lock, the ERP server dying with a killed runner, and --force-new with scores."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnesses._run_store import LOCK_FILE
from harnesses._runner import (
    MANIFEST_FILE,
    TRAJECTORIES_FILE,
    RunConfig,
    RunConfigError,
    read_trajectories,
    run,
)
from ledgerbench_core.trajectory import RunManifest, Status, TerminationReason
from tests.conftest import REPO_ROOT, free_port
from tests.test_runner_plugins import numbered_dataset, question, snapshot_of, write_dataset

pytestmark = pytest.mark.timeout(120)

PLUGINS = "tests.test_runner_plugins"


def _config(erp_server, tmp_path: Path, harness: str, count: int = 1, **options) -> RunConfig:
    dataset = numbered_dataset(tmp_path / "ds.yaml", count, snapshot_of(erp_server.db_url))
    options.setdefault("out", tmp_path / "run")
    return RunConfig(
        dataset=dataset,
        harness=f"{PLUGINS}:{harness}",
        erp_url=erp_server.url,
        progress=False,
        **options,
    )


def _records(run_dir: Path) -> list:
    return sorted(read_trajectories(run_dir / TRAJECTORIES_FILE), key=lambda r: r.question_id)


def test_a_plugin_that_blocks_its_loop_is_stopped_at_the_deadline(erp_server, tmp_path) -> None:
    config = _config(erp_server, tmp_path, "BlockingHarness", timeout=1.0, harness_opts={})
    summary = run(config, log=lambda _: None)
    (record,) = _records(summary.run_dir)
    assert record.status == Status.timeout
    assert record.termination.reason == TerminationReason.time_limit
    # It blocks for 10 s; the record closes at the deadline (generous margin for a loaded box).
    assert record.latency_s < 1.0 + 4.0, record.latency_s
    assert record.answer == "blocking partial"


def test_an_empty_answer_is_an_agent_failure_not_infrastructure(erp_server, tmp_path) -> None:
    summary = run(_config(erp_server, tmp_path, "EmptyHarness"), log=lambda _: None)
    (record,) = _records(summary.run_dir)
    assert record.termination.reason == TerminationReason.empty_answer
    assert not record.termination.infrastructure
    assert record.status == record.termination.status == Status.ok
    assert record.answer == "" and record.error is None
    assert summary.infrastructure_failures == 0
    assert summary.by_task_type[0].empty_answers == 1
    assert summary.by_task_type[0].answered == 0


def test_a_refused_connection_fails_fast_as_provider_unavailable(erp_server, tmp_path) -> None:
    opts = {"port": str(free_port())}
    config = _config(erp_server, tmp_path, "DeadProviderHarness", timeout=30, harness_opts=opts)
    summary = run(config, log=lambda _: None)
    (record,) = _records(summary.run_dir)
    assert record.status == Status.error
    assert record.termination.reason == TerminationReason.provider_unavailable
    assert record.termination.infrastructure
    assert record.error is not None and record.error.class_ == "ConnectError"
    assert "attempts" not in record.extra, "a refused connection is not retried"
    assert record.latency_s < 30 / 2, "a dead provider must not eat the budget"


def test_harness_crash_is_a_harness_error(erp_server, tmp_path) -> None:
    summary = run(_config(erp_server, tmp_path, "BrokenHarness"), log=lambda _: None)
    (record,) = _records(summary.run_dir)
    assert record.termination.reason == TerminationReason.harness_error
    assert record.termination.infrastructure
    assert "KeyError" in (record.termination.detail or "")


def test_circuit_breaker_stops_the_run_and_retry_errors_reruns_the_failures(
    erp_server, tmp_path
) -> None:
    healthy = tmp_path / "provider-is-back"
    opts = {"port": str(free_port()), "healthy_if": str(healthy)}
    config = _config(
        erp_server,
        tmp_path,
        "DeadProviderHarness",
        count=8,
        concurrency=1,
        harness_opts=opts,
        max_consecutive_infra_failures=3,
    )
    messages: list[str] = []
    first = run(config, log=messages.append)
    assert first.stopped is not None
    assert "3 infrastructure failures in a row" in first.stopped
    assert "provider_unavailable" in first.stopped and "ConnectError" in first.stopped
    assert "--retry-errors" in first.stopped
    assert first.stopped in messages, "the one message is shown to the user"
    assert first.recorded == 3 and first.infrastructure_failures == 3
    manifest = RunManifest.model_validate_json((first.run_dir / MANIFEST_FILE).read_text())
    assert manifest.interrupted

    # A plain resume keeps the failures (they are not re-run) and runs the rest.
    healthy.write_text("up")
    second = run(config, log=lambda _: None)
    assert second.stopped is None and second.ran == 5
    failed = [r for r in _records(second.run_dir) if r.infrastructure_failure]
    assert len(failed) == 3

    # --retry-errors re-runs exactly those, keeping the failed attempt in the record.
    third = run(config.model_copy(update={"retry_errors": True}), log=lambda _: None)
    assert third.ran == 3 and third.infrastructure_failures == 0
    records = _records(third.run_dir)
    assert len(records) == 8 and all(r.status == Status.ok for r in records)
    retried = [r for r in records if r.previous_attempts]
    assert len(retried) == 3
    for record in retried:
        (earlier,) = record.previous_attempts
        assert earlier.termination.reason == TerminationReason.provider_unavailable
        assert earlier.error is not None and earlier.error.class_ == "ConnectError"
    lines = (third.run_dir / TRAJECTORIES_FILE).read_text().splitlines()
    assert len(lines) == 11, "earlier lines are never rewritten: nothing written is lost"


def _runner_process(dataset: Path, out: Path, *erp: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "harnesses.run", "--dataset", str(dataset)]
    command += ["--harness", f"{PLUGINS}:SlowHarness", "--timeout", "90", "--no-progress"]
    command += ["--out", str(out), *erp]
    env = dict(os.environ)
    env.pop("ERP_MCP_TOKEN", None)
    return subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _wait_for(condition, process: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if process.poll() is not None:
            raise AssertionError(f"the runner exited: {process.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    raise AssertionError("the runner did not get there in time")


def _end(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    if process.stderr is not None:
        process.stderr.close()


def test_a_second_runner_on_the_same_directory_is_refused_with_the_first_ones_pid(
    erp_server, tmp_path
) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    first = _runner_process(dataset, out, "--erp-url", erp_server.url)
    try:
        _wait_for(lambda: (out / MANIFEST_FILE).exists(), first)
        config = RunConfig(
            dataset=dataset,
            harness=f"{PLUGINS}:SlowHarness",
            timeout=90,
            erp_url=erp_server.url,
            out=out,
            progress=False,
        )
        with pytest.raises(RunConfigError, match=rf"in use by another runner \(pid {first.pid}\)"):
            run(config, log=lambda _: None)
    finally:
        _end(first)
    assert not (out / TRAJECTORIES_FILE).exists() or not (out / TRAJECTORIES_FILE).read_text()
    # The lock dies with its owner (kill -9): the directory is usable again.
    assert (out / LOCK_FILE).exists()
    resumed = run(
        RunConfig(
            dataset=dataset,
            harness=f"{PLUGINS}:SlowHarness",
            timeout=0.5,
            erp_url=erp_server.url,
            out=out,
            progress=False,
            force_new=True,
        ),
        log=lambda _: None,
    )
    assert resumed.recorded == 2


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(child) for child in text]
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in {"Z", "X"}


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_the_erp_server_dies_with_a_runner_killed_with_sigkill(erp_db_url, tmp_path) -> None:
    dataset = write_dataset(tmp_path / "ds.yaml", [question("q", "Q?")], snapshot_of(erp_db_url))
    out = tmp_path / "run"
    runner = _runner_process(dataset, out, "--erp-db", erp_db_url)
    try:
        _wait_for(lambda: (out / MANIFEST_FILE).exists(), runner)
        manifest = RunManifest.model_validate_json((out / MANIFEST_FILE).read_text())
        port = int(manifest.erp_url.rsplit(":", 1)[1].split("/")[0])
        servers = [pid for pid in _children(runner.pid) if "erp_mcp" in _cmdline(pid)]
        assert len(servers) == 1 and _listening(port)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(timeout=30)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and (_alive(servers[0]) or _listening(port)):
            time.sleep(0.05)
        assert not _alive(servers[0]), "the ERP server outlived its runner by more than 2 s"
        assert not _listening(port)
    finally:
        _end(runner)


def test_force_new_moves_the_scores_aside_with_the_trajectories(erp_server, tmp_path) -> None:
    config = _config(erp_server, tmp_path, "InstantHarness", count=2)
    summary = run(config, log=lambda _: None)
    scores = summary.run_dir / "scores"
    scores.mkdir()
    (scores / "rules.jsonl").write_text('{"made": "for the old answers"}\n')
    changed = config.model_copy(update={"timeout": 30.0, "force_new": True})
    again = run(changed, log=lambda _: None)
    assert not (again.run_dir / "scores").exists()
    (aside,) = again.run_dir.glob("replaced-*")
    assert (aside / "scores" / "rules.jsonl").read_text().startswith('{"made"')
    assert (aside / TRAJECTORIES_FILE).exists() and (aside / MANIFEST_FILE).exists()
