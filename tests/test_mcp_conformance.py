"""The official MCP conformance suite (npm @modelcontextprotocol/conformance) against both servers,
run by the project's own scripts/mcp-conformance, for the newest release and the previous one.

The script exits 0 only when exactly the baseline's checks fail (a failing check outside it, or a
baseline entry that passes, exits 1), so a pass pins every scenario's outcome. The figures
erp_mcp/README.md quotes ("Official conformance suite") are asserted from its output.

The slow tier runs it (``make test-slow``): it installs a Node 22 and the suites from npm into
.ledgerbench/conformance on first use. A missing npm or a failed install fails the test with the
reason; it is never skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.world_fixtures import shared_folder, small_world

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "mcp-conformance"

NEWEST_PASSES = {
    # pass -> the figures every server must print for it (README: "Official conformance suite")
    "--requirements 2025-11-25": (
        "required 30 scenarios: 10 pass, 20 fail; not scored 3 scenarios: 2 pass, 1 fail"
    ),
    "--requirements 2026-07-28": (
        "required 37 scenarios: 11 pass, 26 fail; not scored 13 scenarios: 2 pass, 11 fail"
    ),
    "--suite all": "65 scenarios: 21 pass, 44 fail",
}


def run_script(version: str, erp_db_url: str, world: Path) -> subprocess.CompletedProcess:
    if shutil.which("npm") is None:
        pytest.fail("the conformance test needs npm (.ci/run installs it)")
    return subprocess.run(
        ["bash", str(SCRIPT), erp_db_url, str(world)],
        env={**os.environ, "CONFORMANCE_VERSION": version},
        capture_output=True,
        text=True,
        timeout=800,
    )


def printed_passes(stdout: str) -> dict[tuple[str, str], str]:
    """(server, pass) -> the figures the script printed for that pass."""
    passes: dict[tuple[str, str], str] = {}
    server = ""
    for line in stdout.splitlines():
        if found := re.match(r"== (\w+) server ", line):
            server = found.group(1)
        elif found := re.match(r"-- (.+?): (.+); checks ", line):
            passes[(server, found.group(1))] = found.group(2)
    return passes


@pytest.fixture(scope="module")
def world(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))


def test_newest_suite_fails_only_by_design_on_both_revisions(erp_db_url: str, world: Path) -> None:
    done = run_script("0.2.0-alpha.12", erp_db_url, world)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    expected = {
        (server, selection): figures
        for server in ("erp", "world")
        for selection, figures in NEWEST_PASSES.items()
    }
    assert printed_passes(done.stdout) == expected


def test_previous_suite_still_fails_only_by_design(erp_db_url: str, world: Path) -> None:
    done = run_script("0.1.16", erp_db_url, world)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    expected = "30 scenarios: 10 pass, 20 fail"
    assert printed_passes(done.stdout) == {
        ("erp", "default suite"): expected,
        ("world", "default suite"): expected,
    }


@pytest.mark.parametrize(
    ("version", "arguments", "named"),
    [
        ("9.9.9", [], "CONFORMANCE_VERSION=9.9.9"),
        ("0.2.0-alpha.12", ["sqlite:///erp.db"], "both ERP_DB_URL and WORLD_DB"),
        ("0.2.0-alpha.12", ["erp.db", "world.db"], "ERP_DB_URL 'erp.db'"),
        ("0.2.0-alpha.12", ["sqlite:///erp.db", "no-such-world.db"], "WORLD_DB 'no-such-world.db'"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_any_work(
    version: str, arguments: list[str], named: str
) -> None:
    done = subprocess.run(
        ["bash", str(SCRIPT), *arguments],
        env={**os.environ, "CONFORMANCE_VERSION": version},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and named in done.stderr
    assert not (ROOT / ".ledgerbench" / "conformance" / "suite-9.9.9").exists()
