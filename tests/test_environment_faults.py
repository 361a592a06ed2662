"""What the machine refuses (a full disk, a folder the run may not write) ends ``harnesses.run`` in
one line naming the path and the fix: no traceback, no temporary file, no half-written line, and
the same command resumes once the cause is gone. A closed stdout ends it quietly."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.test_runner_plugins import numbered_dataset, snapshot_of

pytestmark = pytest.mark.timeout(180)

QUESTIONS = 60


def _runner(dataset: Path, erp_db_url: str, out: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "harnesses.run", "--dataset", str(dataset)),
        *("--harness", "nothing", "--erp-db", erp_db_url, "--out", str(out), "--no-progress"),
    ]


def _with_file_size_limit(limit: int):
    """The child's files cannot grow past ``limit`` bytes: writes fail with EFBIG, as on a full
    disk (SIGXFSZ ignored so the write returns the error instead of killing the process)."""

    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


@pytest.mark.parametrize(
    ("limit", "full_file"),
    [(12_000, "trajectories.jsonl"), (2_000, "manifest.json")],
    ids=["full-while-recording", "full-at-the-manifest"],
)
def test_a_full_disk_is_one_line_leaves_no_debris_and_resumes(
    limit: int, full_file: str, erp_db_url: str, tmp_path: Path
) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", QUESTIONS, snapshot_of(erp_db_url))
    out = tmp_path / "run"
    full = subprocess.run(
        _runner(dataset, erp_db_url, out),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        preexec_fn=_with_file_size_limit(limit),
    )
    assert full.returncode == 1, full.stderr
    assert "Traceback" not in full.stderr
    assert full.stderr.strip().splitlines()[-1] == (
        f"error: cannot write {out / full_file}: {os.strerror(errno.EFBIG)}; free some space "
        "there and run the same command again to resume"
    )
    assert not [p.name for p in out.rglob("*") if p.name.endswith(".tmp")]
    recorded = out / "trajectories.jsonl"
    if not recorded.exists() or not recorded.stat().st_size:  # no lock file, no server log
        assert not out.exists(), sorted(p.name for p in out.iterdir())
    if recorded.exists():
        text = recorded.read_text()
        assert text == "" or text.endswith("\n")  # no half line
        assert all(json.loads(line)["question_id"] for line in text.splitlines())
        assert len(text.splitlines()) < QUESTIONS
    resumed = subprocess.run(
        _runner(dataset, erp_db_url, out), capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert resumed.returncode == 0, resumed.stderr
    lines = recorded.read_text().splitlines()
    assert sorted(json.loads(line)["question_id"] for line in lines) == [
        f"q-{i:03d}" for i in range(QUESTIONS)
    ]


def _forbidden_folder(tmp_path: Path) -> Path | None:
    """A folder this process may not create entries in: a read-only ``runs/`` for a user, or
    sysfs for root (who may write any mode); None when neither refuses."""
    if os.geteuid() != 0:
        runs = tmp_path / "runs"
        runs.mkdir()
        runs.chmod(0o555)
        return runs
    probe = Path("/sys/ledgerbench-probe")
    try:
        probe.mkdir()
    except PermissionError:
        return Path("/sys")
    except OSError:
        return None
    probe.rmdir()
    return None


def test_a_folder_the_run_may_not_write_is_one_line(erp_db_url: str, tmp_path: Path) -> None:
    forbidden = _forbidden_folder(tmp_path)
    if forbidden is None:
        pytest.skip("no folder here refuses writes to this user")
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2, snapshot_of(erp_db_url))
    out = forbidden / "ledgerbench-run"
    refused = subprocess.run(
        _runner(dataset, erp_db_url, out), capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"error: cannot write {out}: {os.strerror(errno.EACCES if os.geteuid() else errno.EPERM)};"
        " make it writable, or write elsewhere (--out/--workspace), and run the command again"
    ]
    assert not out.exists()


def test_a_closed_stdout_ends_the_run_quietly_with_the_run_recorded(
    erp_db_url: str, tmp_path: Path
) -> None:
    """``python -m harnesses.run ... | head``: the summary's reader is gone (here before the run
    starts: a pipe whose read end is closed), so the run ends with 141 as SIGPIPE would, no
    traceback, and its records and stderr lines are all there."""
    dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_db_url))
    out = tmp_path / "run"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        piped = subprocess.run(
            _runner(dataset, erp_db_url, out),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
    finally:
        os.close(write_end)
    assert piped.returncode == 141, piped.stderr
    assert "Traceback" not in piped.stderr and "Exception ignored" not in piped.stderr
    assert piped.stderr.strip().splitlines()[-1] == f"trajectories: {out / 'trajectories.jsonl'}"
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 3
