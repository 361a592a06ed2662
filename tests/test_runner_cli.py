"""``python -m harnesses.run``: help, one-line user errors with exit code 2, a real run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnesses import run as cli
from harnesses._runner import TRAJECTORIES_FILE
from tests.conftest import REPO_ROOT
from tests.test_runner_plugins import numbered_dataset, snapshot_of

pytestmark = pytest.mark.timeout(60)


def test_help_documents_every_option_with_an_example(capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    for option in (
        "--dataset",
        "--task-type",
        "--ids",
        "--limit",
        "--trials",
        "--seed",
        "--concurrency",
        "--timeout",
        "--brief-timeout",
        "--harness",
        "--model",
        "--reasoning-effort",
        "--base-url",
        "--harness-opt",
        "--erp-url",
        "--erp-token",
        "--erp-db",
        "--erp-public-url",
        "--erp-fault-rate",
        "--erp-fault-seed",
        "--out",
        "--force-new",
    ):
        assert option in text
    assert "examples:" in text and "resume" in text


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--timeout", "soon"], "--timeout"),
        (["--timeout", "0"], "--timeout"),
        (["--concurrency", "0"], "--concurrency"),
        (["--task-type", "poetry"], "--task-type 'poetry'"),
        (["--harness-opt", "novalue"], "KEY=VALUE"),
        (["--dataset", "/no/such/dataset.yaml"], "no such file"),
        (["--harness", "nope"], "unknown harness 'nope'"),
        (  # a typo for the pipeline's faults=: the runner's flag is named, nothing runs clean
            ["--harness", "scripted", "--harness-opt", "fault=0.5"],
            "--harness scripted: unknown --harness-opt fault (did you mean --erp-fault-rate?); "
            "known options: transport",
        ),
        (
            ["--harness", "claude", "--harness-opt", "max_turn=3", "--harness-opt", "webb=no"],
            "unknown --harness-opt max_turn (did you mean max_turns?), webb (did you mean web?); "
            "known options: claude_bin, context_window, erp_transport, keep_home, max_turns, "
            "save_stream, web",
        ),
        (["--harness", "nothing", "--harness-opt", "x=1"], "known options: none"),
        (
            ["--harness", "nothing", "--research", "golden"],
            "--research golden: none of the 2 selected questions has gold documents",
        ),
        (["--erp-url", "http://127.0.0.1:9/mcp", "--erp-db", "sqlite:///x.db"], "exclude"),
        (["--erp-fault-rate", "2"], "--erp-fault-rate"),
        (
            ["--erp-url", "http://127.0.0.1:9/mcp", "--erp-fault-rate", "0.3"],
            "--erp-fault-rate needs a server the runner starts",
        ),
    ],
)
def test_user_errors_are_one_line_with_exit_code_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2)
    full = ["--no-progress", "--out", str(tmp_path / "run"), *argv]
    if "--dataset" not in argv:
        full = ["--dataset", str(dataset), *full]
    code = cli.main(full)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert fragment in err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("text", "extra", "expected"),
    [
        (  # no selection was given: the dataset itself is empty
            "header: {name: empty, format_version: 2}\nitems: []\n",
            [],
            "--dataset {path}: the dataset has no items (items: []); add questions to it",
        ),
        (  # the file's name and the tab, not the parser's "<unicode string>"
            "header:\n\tname: tabbed\nitems: []\n",
            [],
            "--dataset {path}: line 2, column 1: not valid YAML (while scanning for the next "
            "token found character that cannot start any token); it is a tab: indent YAML "
            "with spaces",
        ),
        (
            None,
            ["--task-type", "business_brief"],
            "none of the dataset's 2 questions match --task-type business_brief; widen the "
            "selection",
        ),
    ],
)
def test_dataset_problems_say_exactly_what_is_wrong(
    text: str | None, extra: list[str], expected: str, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    path = tmp_path / "ds.yaml"
    if text is None:
        numbered_dataset(path, 2)
    else:
        path.write_text(text)
    out = tmp_path / "run"
    argv = ["--dataset", str(path), "--harness", "nothing", "--out", str(out), *extra]
    assert cli.main(["--no-progress", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: " + expected.format(path=path)), err
    assert "<unicode string>" not in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_cli_runs_a_plugin_and_prints_the_summary(erp_server, tmp_path: Path) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harnesses.run",
            "--dataset",
            str(dataset),
            "--harness",
            "tests.test_runner_plugins:InstantHarness",
            "--model",
            "m-7",
            "--erp-url",
            erp_server.url,
            "--ids",
            "q-000,q-002",
            "--trials",
            "2",
            "--seed",
            "3",
            "--out",
            str(out),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "obligations" in result.stdout and "4/4" in result.stdout
    lines = (out / TRAJECTORIES_FILE).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert sorted((r["question_id"], r["trial"]) for r in records) == [
        ("q-000", 0),
        ("q-000", 1),
        ("q-002", 0),
        ("q-002", 1),
    ]
    assert {r["model"] for r in records} == {"m-7"}
    assert {r["harness"] for r in records} == {"instant"}


def test_a_world_db_that_is_not_a_world_is_refused_before_the_erp_starts(
    erp_db_url: str, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """An ERP file given as --world-db: one line at once, not after the ERP was prepared."""
    erp_file = erp_db_url.removeprefix("sqlite:///")
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2)
    out = tmp_path / "run"
    argv = ["--dataset", str(dataset), "--harness", "nothing", "--world-db", erp_file]
    assert cli.main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: --world-db {erp_file} is not a research world (an ERP file or another "
        "database); pass the world's file, e.g. .ledgerbench/world.db, or build one from an ERP "
        f"with: python -m synthetic_world generate --erp-db sqlite:///{erp_file} --db "
        "sqlite:///world.db"
    )
    assert not out.exists()
