"""``python -m synthetic_erp``: in-process ``main(argv)`` and one real subprocess."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synthetic_erp import erp_stats
from synthetic_erp._cli import build_parser, main

pytestmark = pytest.mark.timeout(120)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code: int, err: str, fragment: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert fragment in lines[0]


def test_generate_then_refuse_then_overwrite(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'erp.db'}"
    args = ("generate", "--customers", "25", "--vendors", "25", "--seed", "9", "--db", url)
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "25 customers" in out and "snapshot" in out
    code, _out, err = run(capsys, *args)
    assert_one_line_error(code, err, "--overwrite")
    code, _out, err = run(capsys, *args, "--overwrite", "--as-of", "2026-02-01")
    assert code == 0, err
    assert erp_stats(url)["as_of"] == "2026-02-01"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["generate", "--scale", "-1"], "--scale"),
        (["generate", "--scale", "101"], "--scale"),
        (["generate", "--scale", "abc"], "--scale"),
        (["generate", "--customers", "0"], "--customers"),
        (["generate", "--as-of", "March 2"], "--as-of"),
        (["generate", "--db", "mysql://user@host/erp"], "unsupported database URL scheme"),
        (["generate", "--db", "postgresql://postgres@127.0.0.1:1/erp"], "cannot connect"),
        (["stats", "--db", "sqlite:////nonexistent/dir/erp.db"], "does not exist"),
        (["import-fno", "/nonexistent", "--db", "sqlite:///:memory:"], "lacks customers.csv"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_give_one_line_errors(capsys, tmp_path, argv, fragment) -> None:
    code, _out, err = run(capsys, *argv)
    assert_one_line_error(code, err, fragment)
    assert list(tmp_path.iterdir()) == []


def test_stats_json_and_table(erp_db_url: str, capsys) -> None:
    code, out, err = run(capsys, "stats", "--db", erp_db_url, "--json")
    assert code == 0, err
    stats = json.loads(out)
    for key in ("customers", "vendors", "legal_entities", "ar_transactions", "ap_transactions",
                "sales_orders", "purchase_orders", "vendor_invoices", "collection_letters",
                "collection_activities", "as_of", "snapshot_hash"):  # fmt: skip
        assert key in stats
    assert stats["customers"] == 1000 and stats["legal_entities"] == 4
    code, out, _err = run(capsys, "stats", "--db", erp_db_url)
    assert code == 0
    assert any(line.split()[:2] == ["customers", "1,000"] for line in out.splitlines())


def test_questions_dispatches_lazily(capsys) -> None:
    if importlib.util.find_spec("synthetic_erp._questions") is None:
        code, _out, err = run(capsys, "questions", "--help")
        assert_one_line_error(code, err, "_questions")
    else:
        code, out, _err = run(capsys, "questions", "--help")
        assert code == 0 and out


def test_every_command_has_help() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert set(commands) == {"generate", "stats", "summarize", "import-fno", "questions"}
    for name, sub in commands.items():
        if name != "questions":
            assert "example" in (sub.epilog or "")
            assert all(action.help for action in sub._actions)


def test_subprocess_generate_matches_session_snapshot(erp_db_url: str, tmp_path: Path) -> None:
    """A separate interpreter (other hash seed) rebuilds the session ERP bit for bit."""
    target = tmp_path / "again.db"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    done = subprocess.run(
        [sys.executable, "-m", "synthetic_erp", "generate", "--db", f"sqlite:///{target}"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stats = subprocess.run(
        [sys.executable, "-m", "synthetic_erp", "stats", "--json", "--db", f"sqlite:///{target}"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(stats.stdout)["snapshot_hash"] == erp_stats(erp_db_url)["snapshot_hash"]


def test_stats_on_a_file_that_is_not_an_erp(tmp_path: Path, capsys) -> None:
    garbage = tmp_path / "notes.db"
    garbage.write_text("not a database")
    code, _out, err = run(capsys, "stats", "--db", f"sqlite:///{garbage}")
    assert_one_line_error(code, err, "not a database")


def test_kill_9_leaves_no_target_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    """A generation killed with SIGKILL leaves no half-written database; the next run removes its
    abandoned temporary file and builds the target."""
    import signal
    import subprocess
    import sys
    import time

    target = tmp_path / "erp.db"
    url = f"sqlite:///{target}"
    args = [sys.executable, "-m", "synthetic_erp", "generate", "--db", url, "--scale", "5"]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".erp.db.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not target.exists()
    assert list(tmp_path.glob(".erp.db.*.tmp")), "the killed run's temporary file is there"

    from synthetic_erp import erp_stats, generate_erp

    generate_erp(url, customers=20, vendors=20, seed=1)
    assert erp_stats(url)["customers"] == 20
    assert sorted(path.name for path in tmp_path.iterdir()) == ["erp.db"]
