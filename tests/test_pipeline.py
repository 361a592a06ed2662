"""The one-command pipeline end to end, offline: ERP, questions, scripted run, rules, report."""

from __future__ import annotations

import json

import pytest

from ledgerbench.pipeline import main

SMALL = ["--customers", "150", "--vendors", "150", "--questions", "25", "--concurrency", "4"]


@pytest.mark.timeout(600)
def test_pipeline_runs_offline_then_resumes_from_cache(tmp_path, capsys) -> None:
    workspace = tmp_path / "ws"
    assert main(["--workspace", str(workspace), *SMALL]) == 0
    first = capsys.readouterr()
    assert "report.html" in first.out
    assert "scripted: overall" in first.out

    report = workspace / "report"
    stats = json.loads((report / "stats.json").read_text())
    assert [row["provider"] for row in stats["headline"]] == ["scripted"]
    assert (report / "report.html").stat().st_size > 10_000
    run_dir = workspace / "runs" / "scripted"
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 25
    scores = (run_dir / "scores" / "rules.jsonl").read_text().splitlines()
    assert len(scores) == 25

    stats_mtime = (report / "stats.json").stat().st_mtime
    assert main(["--workspace", str(workspace), *SMALL]) == 0
    second = capsys.readouterr()
    for stage in ("generate ERP", "questions", "report"):
        assert f"{stage}: " in second.err and "(cached)" in second.err
    assert second.err.count("(cached)") == 3
    assert (report / "stats.json").stat().st_mtime == stats_mtime
    assert len((run_dir / "trajectories.jsonl").read_text().splitlines()) == 25


def test_pipeline_rejects_bad_input_in_one_line(tmp_path, capsys) -> None:
    assert main(["--workspace", str(tmp_path), "--customers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--customers must be a positive integer" in err
    assert main(["--workspace", str(tmp_path), "--dataset", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_failing_stage_names_itself_and_the_command_to_rerun(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("header: {name: x}\nitems: [{id: 1}]\n")
    code = main(["--workspace", str(tmp_path / "ws"), *SMALL, "--dataset", str(bad)])
    assert code == 1
    err = capsys.readouterr().err
    assert "stage 'run agent' failed" in err
    assert "python -m harnesses.run" in err
