"""End to end: the runner with the scripted agent against the real ERP MCP server.

Once against the shared HTTP server (``--erp-url`` with a bearer token), once with the runner
serving the database itself (``--erp-db``). Every record must be complete and valid.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pydantic import SecretStr

from harnesses._instructions import instructions_hash
from harnesses._runner import (
    MANIFEST_FILE,
    TRAJECTORIES_FILE,
    RunConfig,
    RunConfigError,
    run,
)
from ledgerbench_core.trajectory import RunManifest, Status, TrajectoryRecord
from tests.test_runner_plugins import question, snapshot_of, write_dataset

pytestmark = pytest.mark.timeout(120)

QUESTIONS = [
    question("e2e-credit", "What is the credit limit for SYNCUS-0001 in USMF as of March 2, 2026?"),
    question("e2e-aging", "What is the aged balance for SYNCUS-0002 in USMF as of March 2, 2026?"),
    question(
        "e2e-unknown",
        "Please summarise the weather on the moon for our treasury team.",
    ),
    question("e2e-brief", "Business Brief report of Apple Inc.", task_type="business_brief"),
]


def _records(run_dir: Path) -> list[TrajectoryRecord]:
    lines = (run_dir / TRAJECTORIES_FILE).read_text().splitlines()
    return [TrajectoryRecord.model_validate_json(line) for line in lines]


def _manifest(run_dir: Path) -> RunManifest:
    return RunManifest.model_validate_json((run_dir / MANIFEST_FILE).read_text())


def test_scripted_run_against_http_server_records_everything(
    erp_server_with_token, tmp_path: Path
) -> None:
    server = erp_server_with_token
    dataset = write_dataset(tmp_path / "ds.yaml", QUESTIONS, snapshot_of(server.db_url))
    config = RunConfig(
        dataset=dataset,
        harness="scripted",
        erp_url=server.url,
        erp_token=SecretStr(server.token),
        out=tmp_path / "run",
        trials=2,
        concurrency=3,
        progress=False,
        command=["python", "-m", "harnesses.run", "--erp-token", server.token],
    )
    summary = run(config, log=lambda _: None)
    records = _records(tmp_path / "run")

    assert summary.expected == summary.recorded == len(records) == 8
    assert {(r.question_id, r.trial) for r in records} == {
        (q["id"], t) for q in QUESTIONS for t in (0, 1)
    }
    by_id = {r.question_id: r for r in records if r.trial == 0}
    for record in records:
        assert record.harness == "scripted"
        assert record.status == Status.ok, record
        assert record.answer.strip()
        assert record.finished_at >= record.started_at
        assert 0 <= record.latency_s < record.timeout_s
        assert record.cost_usd == 0.0  # it declares model_free: a known $0, not unknown
    credit = by_id["e2e-credit"]
    assert credit.tool_calls, "the scripted agent must record its ERP calls"
    assert {"erp_info", "get_customer"} <= {call.name for call in credit.tool_calls}
    for call in credit.tool_calls:
        assert call.output_sha256 and call.output_size >= len(call.output)
        assert call.server == "erp" and call.duration_s is not None
    assert "/erp/USMF/customers/SYNCUS-0001" in credit.answer
    # Every ERP link in an answer points at the server the agent used.
    host = urlsplit(server.base_url).netloc
    assert f"http://{host}/erp/" in by_id["e2e-aging"].answer
    assert "could not work out" in by_id["e2e-unknown"].answer
    assert by_id["e2e-brief"].tool_calls == [] and "web" in by_id["e2e-brief"].answer

    manifest = _manifest(tmp_path / "run")
    assert manifest.erp_snapshot_hash == snapshot_of(server.db_url)
    assert manifest.system_prompt_hash == instructions_hash()
    assert manifest.question_count == 8 and manifest.finished_at is not None
    assert not manifest.interrupted
    assert manifest.timeouts == {
        "obligations": 60.0,
        "entity_performance": 60.0,
        "business_brief": 300.0,
    }
    assert "pydantic" in manifest.package_versions
    assert manifest.command[-1] == "***"
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert server.token not in path.read_text(errors="replace"), path


def _listening(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as sock:
        return sock.connect_ex((parts.hostname, parts.port)) == 0


def test_runner_serves_the_database_itself_and_stops_the_server(
    erp_db_url: str, tmp_path: Path
) -> None:
    dataset = write_dataset(tmp_path / "ds.yaml", QUESTIONS[:2], snapshot_of(erp_db_url))
    config = RunConfig(dataset=dataset, erp_db=erp_db_url, out=tmp_path / "run", progress=False)
    summary = run(config, log=lambda _: None)
    assert summary.by_status == {"ok": 2}
    manifest = _manifest(tmp_path / "run")
    assert manifest.erp_db_url == erp_db_url
    assert manifest.erp_url and not _listening(manifest.erp_url)
    records = _records(tmp_path / "run")
    assert all(r.tool_calls for r in records)
    assert all("/erp/USMF/" in r.answer for r in records)
    log = (tmp_path / "run" / "erp_mcp.log").read_text()
    assert "Traceback" not in log


def test_dataset_from_another_erp_is_refused_naming_its_origin(erp_server, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "other.yaml", QUESTIONS[:1], "0123456789abcdef")
    config = RunConfig(
        dataset=dataset, erp_url=erp_server.url, out=tmp_path / "run", progress=False
    )
    with pytest.raises(RunConfigError) as refused:
        run(config, log=lambda _: None)
    message = str(refused.value)
    assert "0123456789abcdef" in message and "generator seed 42" in message
    assert snapshot_of(erp_server.db_url) in message
    assert not (tmp_path / "run" / TRAJECTORIES_FILE).exists()


def test_records_are_valid_json_lines_with_the_documented_keys(erp_server, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds.yaml", QUESTIONS[:1], snapshot_of(erp_server.db_url))
    run(
        RunConfig(dataset=dataset, erp_url=erp_server.url, out=tmp_path / "r", progress=False),
        log=lambda _: None,
    )
    raw = json.loads((tmp_path / "r" / TRAJECTORIES_FILE).read_text().splitlines()[0])
    for key in (
        "question_id",
        "trial",
        "task_type",
        "harness",
        "model",
        "answer",
        "status",
        "error",
        "latency_s",
        "tool_calls",
        "sources",
        "usage",
        "cost_usd",
        "turns",
    ):
        assert key in raw
    call = raw["tool_calls"][0]
    for key in ("name", "arguments", "output", "output_sha256", "output_size", "is_error"):
        assert key in call
    assert set(raw["usage"]) >= {"input_tokens", "output_tokens", "reasoning_tokens"}


def test_scripted_agent_over_stdio_when_the_runner_serves_the_database(
    erp_db_url: str, tmp_path: Path
) -> None:
    dataset = write_dataset(tmp_path / "ds.yaml", QUESTIONS[:1], snapshot_of(erp_db_url))
    config = RunConfig(
        dataset=dataset,
        erp_db=erp_db_url,
        harness_opts={"transport": "stdio"},
        out=tmp_path / "run",
        progress=False,
    )
    summary = run(config, log=lambda _: None)
    assert summary.by_status == {"ok": 1}
    (record,) = _records(tmp_path / "run")
    assert {"erp_info", "get_customer"} <= {call.name for call in record.tool_calls}
    assert "/erp/USMF/customers/SYNCUS-0001" in record.answer


def test_stdio_transport_needs_a_database_the_runner_serves(erp_server, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds.yaml", QUESTIONS[:1], snapshot_of(erp_server.db_url))
    config = RunConfig(
        dataset=dataset,
        erp_url=erp_server.url,
        harness_opts={"transport": "stdio"},
        out=tmp_path / "run",
        progress=False,
    )
    run(config, log=lambda _: None)
    (record,) = _records(tmp_path / "run")
    assert record.status == Status.error
    assert "stdio transport needs" in record.error.message


def test_default_erp_is_generated_once_under_the_project_root(tmp_path: Path) -> None:
    from harnesses._erp_process import DEFAULT_ERP_RELATIVE_PATH, ensure_default_erp

    url = ensure_default_erp(tmp_path)
    path = tmp_path / DEFAULT_ERP_RELATIVE_PATH
    assert url == f"sqlite:///{path}" and path.exists()
    assert not path.with_name(path.name + ".partial").exists()
    stamp = path.stat().st_mtime_ns
    assert ensure_default_erp(tmp_path) == url
    assert path.stat().st_mtime_ns == stamp, "an existing default ERP is reused, not rebuilt"
    assert len(snapshot_of(url)) >= 16
