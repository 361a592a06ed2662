"""Resume after a killed run, clean Ctrl-C, refusal of a changed configuration, and secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from harnesses._runner import (
    MANIFEST_FILE,
    TRAJECTORIES_FILE,
    RunConfig,
    RunConfigError,
    read_trajectories,
    run,
)
from ledgerbench_core.trajectory import RunManifest
from tests.conftest import REPO_ROOT
from tests.test_runner_plugins import LEAKED_SECRET_ENV, numbered_dataset, snapshot_of

pytestmark = pytest.mark.timeout(240)  # subprocess runs start slowly on a loaded machine

PLUGINS = "tests.test_runner_plugins"


def _command(dataset: Path, out: Path, erp_url: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "harnesses.run",
        "--dataset",
        str(dataset),
        "--harness",
        f"{PLUGINS}:PacedHarness",
        "--harness-opt",
        "delay=0.25",
        "--erp-url",
        erp_url,
        "--concurrency",
        "2",
        "--out",
        str(out),
        *extra,
    ]


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        assert process.poll() is None, "the run ended before it could be interrupted"
        time.sleep(0.02)
    raise AssertionError(f"{path} did not reach {count} lines")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ERP_MCP_TOKEN", None)
    return env


def test_resume_after_kill_9_loses_nothing_and_duplicates_nothing(
    erp_server, tmp_path: Path
) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 12, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    command = _command(dataset, out, erp_server.url)
    trajectories = out / TRAJECTORIES_FILE
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        _wait_for_lines(trajectories, 3, process, timeout=90)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    before = trajectories.read_bytes()
    first_records = read_trajectories(trajectories)
    assert 3 <= len(first_records) < 12

    resumed = subprocess.run(
        command, cwd=REPO_ROOT, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    after = trajectories.read_bytes()
    complete = before[: before.rfind(b"\n") + 1]
    assert after.startswith(complete), "records written before the kill are kept as they were"
    records = read_trajectories(trajectories)
    keys = [(r.question_id, r.trial) for r in records]
    lines = [line for line in after.splitlines() if line.strip()]
    assert len(lines) == len(keys) == len(set(keys)) == 12
    assert {k[0] for k in keys} == {f"q-{i:03d}" for i in range(12)}
    manifest = RunManifest.model_validate_json((out / MANIFEST_FILE).read_text())
    assert manifest.resume_count == 1 and not manifest.interrupted

    again = subprocess.run(
        command, cwd=REPO_ROOT, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert trajectories.read_bytes() == after, "a finished run resumes to nothing"


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_stops_cleanly_and_marks_the_manifest(
    erp_server, tmp_path: Path, stop_signal: signal.Signals
) -> None:
    # Enough questions (0.25 s each, two at a time) that the run cannot finish between the test
    # seeing two records and the signal arriving, however loaded the machine.
    questions = 200
    dataset = numbered_dataset(tmp_path / "ds.yaml", questions, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    process = subprocess.Popen(
        _command(dataset, out, erp_server.url),
        cwd=REPO_ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_lines(out / TRAJECTORIES_FILE, 2, process, timeout=60)
        process.send_signal(stop_signal)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "resume" in stderr
    manifest = RunManifest.model_validate_json((out / MANIFEST_FILE).read_text())
    assert manifest.interrupted and manifest.finished_at is not None
    records = read_trajectories(out / TRAJECTORIES_FILE)
    assert 2 <= len(records) < questions
    assert all(r.status.value == "ok" for r in records), "in-flight questions are not recorded"


def _config(dataset: Path, out: Path, erp_url: str, **changes) -> RunConfig:
    settings = {
        "dataset": dataset,
        "harness": f"{PLUGINS}:PacedHarness",  # it declares one option: delay
        "harness_opts": {"delay": "0"},
        "erp_url": erp_url,
        "out": out,
        "progress": False,
        "timeout": 30.0,
    }
    settings.update(changes)
    return RunConfig(**settings)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"timeout": 45.0}, "time budgets (timeout 30.0 -> 45.0)"),
        ({"limit": 2}, "question selection"),
        ({"model": "other-model"}, "harness settings (model None -> 'other-model')"),
        ({"harness_opts": {"delay": "0.01"}}, "harness settings"),
        ({"trials": 2}, "question selection"),
    ],
)
def test_changed_configuration_is_refused_naming_the_change(
    erp_server, tmp_path: Path, change: dict, named: str
) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    run(_config(dataset, out, erp_server.url), log=lambda _: None)
    before = (out / TRAJECTORIES_FILE).read_bytes()
    with pytest.raises(RunConfigError) as refused:
        run(_config(dataset, out, erp_server.url, **change), log=lambda _: None)
    assert named in str(refused.value)
    assert "--force-new" in str(refused.value)
    assert (out / TRAJECTORIES_FILE).read_bytes() == before

    summary = run(_config(dataset, out, erp_server.url, force_new=True, **change), log=print)
    assert summary.resumed == 0 and summary.ran == summary.expected
    assert list(out.glob("replaced-*/trajectories.jsonl")), "old records are moved aside, not lost"


def test_changed_dataset_contents_are_refused(erp_server, tmp_path: Path) -> None:
    snapshot = snapshot_of(erp_server.db_url)
    dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot)
    out = tmp_path / "run"
    run(_config(dataset, out, erp_server.url), log=lambda _: None)
    text = dataset.read_text().replace("Test question number 1?", "A reworded question?")
    dataset.write_text(text)
    with pytest.raises(RunConfigError, match="dataset contents"):
        run(_config(dataset, out, erp_server.url), log=lambda _: None)


def test_default_run_dir_resumes_the_unfinished_run_with_the_same_settings(
    erp_server, tmp_path: Path
) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 4, snapshot_of(erp_server.db_url))
    runs = tmp_path / "runs"
    first = run(_config(dataset, None, erp_server.url, runs_dir=runs, limit=2), log=lambda _: None)
    manifest_path = first.run_dir / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest["interrupted"] = True  # as if Ctrl-C had stopped it
    manifest_path.write_text(json.dumps(manifest))
    lines = (first.run_dir / TRAJECTORIES_FILE).read_text().splitlines()
    (first.run_dir / TRAJECTORIES_FILE).write_text(lines[0] + "\n")
    second = run(_config(dataset, None, erp_server.url, runs_dir=runs, limit=2), log=lambda _: None)
    assert second.run_dir == first.run_dir
    assert second.resumed == 1 and second.ran == 1
    third = run(_config(dataset, None, erp_server.url, runs_dir=runs, limit=3), log=print)
    assert third.run_dir != first.run_dir and third.run_dir.parent == runs


def test_secrets_never_reach_any_file_in_the_run_dir(
    erp_server_with_token, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = erp_server_with_token
    api_key = "sk-test-0123456789abcdefghij"
    env_secret = "env-secret-value-42424242"
    monkeypatch.setenv(LEAKED_SECRET_ENV + "_API_KEY", env_secret)
    monkeypatch.setenv(LEAKED_SECRET_ENV, env_secret)
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2, snapshot_of(server.db_url))
    config = RunConfig(
        dataset=dataset,
        harness=f"{PLUGINS}:LeakyHarness",
        harness_opts={"api_key": api_key, "temperature": "0"},
        erp_url=server.url,
        erp_token=SecretStr(server.token),
        out=tmp_path / "run",
        trials=2,
        progress=False,
        command=[
            "python",
            "-m",
            "harnesses.run",
            "--erp-token",
            server.token,
            "--harness-opt",
            f"api_key={api_key}",
        ],
    )
    summary = run(config, log=lambda _: None)
    assert summary.by_status == {"ok": 2, "error": 2}
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {MANIFEST_FILE, TRAJECTORIES_FILE, "mcp-config.json"}
    for path in files:
        text = path.read_text(errors="replace")
        for secret in (server.token, api_key, env_secret):
            assert secret not in text, f"{secret[:6]}... leaked into {path.name}"
    manifest = RunManifest.model_validate_json((tmp_path / "run" / MANIFEST_FILE).read_text())
    assert manifest.harness_options["api_key"] == "***"
    assert manifest.harness_options["temperature"] == "0"
