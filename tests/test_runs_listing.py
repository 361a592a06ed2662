"""``ledgerbench runs [DIR]``: one line per run, found at any depth, and the same as JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ledgerbench.pipeline import main
from tests.run_files import write_sample_runs


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """runs/ws/run-a and runs/ws/run-b (nested as the demo nests them), plus an old version set
    aside by --force-new that must not be listed."""
    root = tmp_path / "runs"
    run_a, _ = write_sample_runs(root / "ws")
    shutil.copytree(run_a, root / "ws" / "run-a" / "replaced-20260101-000000")
    return root


def _json(capsys, *argv: str) -> list[dict]:
    assert main(["runs", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_lists_every_run_with_its_endings_overall_and_dataset(workspace, capsys) -> None:
    runs = {run["name"]: run for run in _json(capsys, str(workspace))}
    assert sorted(runs) == ["ws/run-a", "ws/run-b"]
    a, b = runs["ws/run-a"], runs["ws/run-b"]
    assert (a["harness"], a["model"], a["dataset"], a["records"]) == (
        "openai",
        "m-1",
        "dataset.yaml",
        3,
    )
    assert a["endings"] == {"completed": 2, "provider_unavailable": 1}
    assert a["infrastructure_failures"] == 1
    assert b["endings"] == {"completed": 2, "time_limit": 1}  # the version-1 line counts too
    # The Overall (judge.run_overall): A has obligations accuracy 1.0 and 0.5; B has obligations
    # accuracy 0.25 and 0.0 (mean 0.125) and a brief's structure at 0.75.
    assert a["overall"] == {"rules": pytest.approx(0.75)}
    assert b["overall"] == {"rules": pytest.approx((0.125 + 0.75) / 2)}
    assert a["started_at"].startswith("2026-01-05T09:00")
    assert a["finished"] is False  # the manifest has no finished_at


def test_the_table_has_one_line_per_run_and_a_header(workspace, capsys) -> None:
    assert main(["runs", str(workspace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["run", "harness", "model"]
    assert len(lines) == 3
    line_a = next(line for line in lines if line.startswith("ws/run-a"))
    assert "provider_unavailable 1" in line_a and "rules 0.75" in line_a
    assert "2026-01-05 09:00" in line_a


def test_a_run_folder_lists_itself_and_the_cost_adds_up(workspace, capsys) -> None:
    run = workspace / "ws" / "run-b"
    lines = (run / "trajectories.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for record, cost in zip(records, (0.5, 0.25, None), strict=True):
        record["cost_usd"] = cost
    (run / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (listed,) = _json(capsys, str(run))
    assert listed["name"] == "run-b"
    assert listed["cost_usd"] == pytest.approx(0.75)


def test_a_missing_folder_is_one_line(tmp_path, capsys) -> None:
    assert main(["runs", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a folder" in err


def test_an_empty_folder_says_there_are_no_runs(tmp_path, capsys) -> None:
    assert main(["runs", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "no runs under" in captured.err
