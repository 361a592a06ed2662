"""The hard wall-clock budget, transient-failure retries and error records."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesses._runner import TRAJECTORIES_FILE, RunConfig, run
from ledgerbench_core.trajectory import Status, TrajectoryRecord
from tests.test_runner_plugins import question, snapshot_of, write_dataset

pytestmark = pytest.mark.timeout(60)

PLUGINS = "tests.test_runner_plugins"


def _run(erp_server, tmp_path: Path, harness: str, items: list[dict], **options) -> list:
    dataset = write_dataset(tmp_path / "ds.yaml", items, snapshot_of(erp_server.db_url))
    config = RunConfig(
        dataset=dataset,
        harness=f"{PLUGINS}:{harness}",
        erp_url=erp_server.url,
        out=tmp_path / "run",
        progress=False,
        **options,
    )
    run(config, log=lambda _: None)
    lines = (tmp_path / "run" / TRAJECTORIES_FILE).read_text().splitlines()
    return sorted(
        (TrajectoryRecord.model_validate_json(line) for line in lines),
        key=lambda r: (r.question_id, r.trial),
    )


def test_slow_harness_is_stopped_at_the_deadline_keeping_its_partial_work(
    erp_server, tmp_path: Path
) -> None:
    items = [
        question("slow-obl", "Obligation question?"),
        question("slow-brief", "Brief?", task_type="business_brief"),
        question("slow-own", "Item with its own budget?", timeout=0.6),
    ]
    records = _run(
        erp_server, tmp_path, "SlowHarness", items, timeout=1.5, brief_timeout=1.0, concurrency=3
    )
    budgets = {"slow-obl": 1.5, "slow-brief": 1.0, "slow-own": 0.6}
    for record in records:
        budget = budgets[record.question_id]
        assert record.status == Status.timeout
        assert record.termination.reason == "time_limit"
        assert record.timeout_s == budget
        # Margins are generous (a loaded machine); a harness running on would take 100x longer.
        assert budget <= record.latency_s <= budget + 3.0, record.latency_s
        steps = len(record.tool_calls)
        assert steps >= 1, "tool calls made before the deadline are kept"
        assert record.answer == f"Partial answer after {steps} steps."
        assert record.error is None
        # The harness got to clean up when it was cancelled.
        marker = tmp_path / "run" / "work" / f"cleaned-{record.question_id}-0"
        assert marker.exists()
    # They ran concurrently: every question started before the first one ended.
    assert max(r.started_at for r in records) < min(r.finished_at for r in records)


def test_harness_that_ignores_cancellation_is_abandoned_within_a_second(
    erp_server, tmp_path: Path
) -> None:
    records = _run(erp_server, tmp_path, "StubbornHarness", [question("s", "Q?")], timeout=0.5)
    (record,) = records
    assert record.status == Status.timeout
    assert record.latency_s <= 0.5 + 3.0, "abandoned after the grace, not after its 2 s of sleeps"
    assert record.answer == "stubborn partial"


def test_transient_failures_are_retried_within_the_budget(erp_server, tmp_path: Path) -> None:
    records = _run(
        erp_server,
        tmp_path,
        "FlakyHarness",
        [question("f1", "Q1?"), question("f2", "Q2?")],
        harness_opts={"fail_times": "2"},
        timeout=10,
    )
    for record in records:
        assert record.status == Status.ok
        assert record.answer == "Answer after 3 attempts."
        assert record.extra["attempts"] == 3
        assert len(record.extra["retried_errors"]) == 2
        assert "TransientError" in record.extra["retried_errors"][0]


def test_persistent_transient_failure_ends_as_error_not_as_an_answer(
    erp_server, tmp_path: Path
) -> None:
    records = _run(
        erp_server,
        tmp_path,
        "FlakyHarness",
        [question("f", "Q?")],
        harness_opts={"fail_times": "100"},
        retries=2,
        timeout=10,
    )
    (record,) = records
    assert record.status == Status.error
    assert record.error is not None and record.error.class_ == "TransientError"
    assert "429" in record.error.message
    assert record.extra["attempts"] == 3


def test_harness_crash_is_an_error_record_with_its_class(erp_server, tmp_path: Path) -> None:
    records = _run(erp_server, tmp_path, "BrokenHarness", [question("b", "Q?")])
    (record,) = records
    assert record.status == Status.error
    assert record.error is not None
    assert record.error.class_ == "KeyError"
    assert "no such field" in record.error.message
    assert "attempts" not in record.extra, "a non-transient error is not retried"
