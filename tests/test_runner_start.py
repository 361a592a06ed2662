"""A start that fails says one line, exits non-zero, and touches nothing: no run folder appears,
an existing one is left byte for byte (issues 26 item 6, 28 items 2-3). Plus the round trip of
every configuration field through the manifest, and SIGTERM while the ERP is prepared."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnesses import run as cli
from harnesses._erp_process import ErpServerError, start_erp_server
from harnesses._runner import MANIFEST_FILE, TRAJECTORIES_FILE, RunConfig, read_trajectories, run
from ledgerbench_core.trajectory import RunManifest
from tests.conftest import REPO_ROOT, free_port
from tests.test_runner_plugins import numbered_dataset, snapshot_of

pytestmark = pytest.mark.timeout(180)

PLUGIN = "tests.test_runner_plugins:InstantHarness"


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path) and its SHA-256."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def finished_run(erp_server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A finished run (dataset, run folder) made by the runner with its own ERP server, once."""
    folder = tmp_path_factory.mktemp("finished")
    dataset = numbered_dataset(folder / "ds.yaml", 2, snapshot_of(erp_server.db_url))
    out = folder / "run"
    argv = ["--no-progress", "--dataset", str(dataset), "--harness", PLUGIN, "--out", str(out)]
    code = cli.main([*argv, "--erp-db", erp_server.db_url])
    assert code == 0 and (out / "erp_mcp.log").exists()
    return dataset, out


@pytest.fixture
def existing_run(finished_run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the finished run for one test (a test that changed it would not show)."""
    dataset, out = finished_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    return dataset, copy


def bad_files(tmp_path: Path) -> dict[str, str]:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all")
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE something (x INTEGER)")
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    return {
        "missing": f"sqlite:///{tmp_path / 'missing.db'}",
        "garbage": f"sqlite:///{garbage}",
        "foreign": f"sqlite:///{foreign}",
        "folder": f"sqlite:///{folder}",
    }


PLUGIN_SOURCES = {
    "broken_syntax": "class Agent(:\n    pass\n",
    "raises_on_import": "raise RuntimeError('the plug-in needs a licence server')\n",
    "raises_in_init": (
        "class Agent:\n    def __init__(self, options):\n"
        "        raise KeyError('no such setting')\n"
    ),
    "value_error_in_init": (
        "class Agent:\n    def __init__(self, options):\n        raise ValueError('bad option')\n"
    ),
}


@pytest.fixture
def plugin_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name, source in PLUGIN_SOURCES.items():
        (folder / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(folder))
    return folder


CASES = [
    # (id, argv builder, fragment of the one line)
    ("erp-db missing", lambda f: ["--erp-db", f["missing"]], "no such file"),
    ("erp-db garbage", lambda f: ["--erp-db", f["garbage"]], "is not an SQLite database"),
    ("erp-db foreign", lambda f: ["--erp-db", f["foreign"]], "is not a LedgerBench ERP"),
    ("erp-db folder", lambda f: ["--erp-db", f["folder"]], "is a folder"),
    ("erp-db scheme", lambda f: ["--erp-db", "mysql://x/y"], "unsupported database URL scheme"),
    (
        "erp-url refused",
        lambda f: ["--erp-url", f"http://127.0.0.1:{free_port()}/mcp"],
        "cannot reach the ERP MCP server",
    ),
    ("timeout inf", lambda f: ["--timeout", "inf"], "--timeout inf: give a finite number"),
    ("timeout nan", lambda f: ["--timeout", "nan"], "--timeout nan: give a finite number"),
    ("timeout negative", lambda f: ["--timeout", "-3"], "--timeout -3.0: input should be greater"),
    ("brief-timeout inf", lambda f: ["--brief-timeout", "inf"], "--brief-timeout inf"),
    ("limit 0", lambda f: ["--limit", "0"], "--limit 0"),
    ("unknown flag", lambda f: ["--frobnicate"], "unrecognized arguments"),
    ("plug-in syntax", lambda f: ["--harness", "broken_syntax:Agent"], "SyntaxError"),
    ("plug-in import", lambda f: ["--harness", "raises_on_import:Agent"], "licence server"),
    ("plug-in init", lambda f: ["--harness", "raises_in_init:Agent"], "KeyError"),
    (
        "plug-in init ValueError",
        lambda f: ["--harness", "value_error_in_init:Agent"],
        "--harness 'value_error_in_init:Agent': creating the harness failed: ValueError: bad",
    ),
]


@pytest.mark.parametrize(("case", "argv", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_start_is_one_line_and_touches_no_run(
    case, argv, fragment, existing_run, plugin_path, tmp_path, capsys
) -> None:
    dataset, out = existing_run
    before = snapshot(out)
    files = bad_files(tmp_path)
    capsys.readouterr()
    for target in (out, tmp_path / "new-run"):
        full = ["--no-progress", "--dataset", str(dataset), "--out", str(target)]
        if "--harness" not in argv(files):
            full += ["--harness", PLUGIN]
        code = cli.main(full + argv(files))
        err = capsys.readouterr().err.strip()
        assert code == 2, err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert fragment in err, err
    assert snapshot(out) == before, "a refused start changed the existing run"
    assert not (tmp_path / "new-run").exists(), "a refused start left a run folder behind"


def test_a_start_refused_once_the_erp_is_up_leaves_nothing(
    existing_run, erp_server, tmp_path, capsys
) -> None:
    """A dataset built from another ERP: with --erp-db it is refused from the file before the
    server starts; with --erp-url once the running server said its snapshot. Either way the one
    line names the mismatch and nothing reaches a run folder."""
    _, out = existing_run
    other = numbered_dataset(tmp_path / "other.yaml", 2, "0" * 16)
    manifest = RunManifest.model_validate_json((out / MANIFEST_FILE).read_text())
    new = tmp_path / "fresh"
    argv = ["--no-progress", "--dataset", str(other), "--harness", PLUGIN, "--out", str(new)]
    for erp in (["--erp-db", manifest.erp_db_url], ["--erp-url", erp_server.url]):
        capsys.readouterr()
        code = cli.main([*argv, *erp])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "was built from the ERP with snapshot hash 0000000000000000" in err
        assert not new.exists()


async def test_a_run_interrupted_before_its_first_record_leaves_no_folder(
    erp_server, tmp_path
) -> None:
    import asyncio

    from harnesses._runner import run_async

    dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_server.db_url))
    runs = tmp_path / "runs"
    config = RunConfig(
        dataset=dataset,
        harness="tests.test_runner_plugins:SlowHarness",  # works until stopped
        erp_url=erp_server.url,
        runs_dir=runs,
        timeout=90,
        progress=False,
    )
    task = asyncio.create_task(run_async(config, log=lambda _: None))
    for _ in range(1800):  # the run started: its manifest is written, no record yet
        if list(runs.glob(f"*/{MANIFEST_FILE}")) or task.done():
            break
        await asyncio.sleep(0.05)
    task.cancel()
    summary = await task
    assert summary.interrupted and summary.recorded == 0
    assert not summary.kept and not summary.run_dir.exists()
    assert list(runs.iterdir()) == [], "no runs/<harness>-<time>/ folder without a record"


def test_the_erp_error_quotes_only_this_starts_log(tmp_path) -> None:
    log = tmp_path / "erp_mcp.log"
    log.write_text("EARLIER FAILURE: something else entirely\n")
    with pytest.raises(ErpServerError) as raised:
        start_erp_server(f"sqlite:///{tmp_path / 'missing.db'}", log_path=log)
    assert "EARLIER FAILURE" not in str(raised.value)
    assert "does not exist" in str(raised.value)


def test_every_config_field_reads_back_from_the_manifest(erp_server, tmp_path) -> None:
    """What the runner writes reads back: the manifest's config is a valid RunConfig equal to
    the one that made it (secrets aside). A field added without a value here fails the test."""
    dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_server.db_url))
    values = {
        "dataset": dataset,
        "task_types": ["obligations"],
        "ids": ["q-000", "q-001"],
        "limit": 2,
        "trials": 2,
        "seed": 5,
        "concurrency": 3,
        "timeout": 45.5,
        "brief_timeout": 200.0,
        "stall_timeout": 9.0,
        "max_turns": 7,
        "max_tool_calls": 9,
        "max_tokens": 50_000,
        "max_cost_usd": 0.75,
        "harness": "tests.test_runner_plugins:PacedHarness",  # it declares delay
        "user": "chat:u-1",
        "user_base_url": "http://127.0.0.1:9/v1",
        "reviewer": "chat:r-1",
        "reviewer_base_url": "http://127.0.0.1:9/v1",
        "retry_simulator_errors": True,
        "model": "m-1",
        "reasoning_effort": "low",
        "base_url": "http://127.0.0.1:9/v1",
        "harness_opts": {"delay": "0"},
        "tools": ["erp_info", "list_*"],
        "erp_url": None,
        "erp_db": erp_server.db_url,
        "erp_public_url": "https://erp.example/mcp",
        "erp_fault_rate": 0.1,
        "erp_fault_seed": 3,
        "world_db": None,  # serving a world is tested in test_world_questions.py
        "world_url": None,
        "world_public_url": "https://world.example/mcp",
        "research": "none",
        "out": tmp_path / "run",
        "runs_dir": tmp_path / "runs",
        "force_new": True,
        "retries": 1,
        "retry_errors": True,
        "max_consecutive_infra_failures": 4,
        "cancel_grace_s": 0.25,
        "output_limit": 5000,
        "progress": False,
        "executor": "local",
        "ray_address": "head:6379",
        "ray_num_cpus": 0.5,
        "ray_memory_mb": 700,
    }
    unset = set(RunConfig.model_fields) - set(values) - {"command", "erp_token", "world_token"}
    assert not unset, f"give the round trip a value for {sorted(unset)}"
    config = RunConfig(**values)
    summary = run(config, log=lambda _: None)
    manifest = RunManifest.model_validate_json((summary.run_dir / MANIFEST_FILE).read_text())
    written = {k: v for k, v in manifest.config.items() if k not in ("erp_token", "world_token")}
    assert RunConfig.model_validate(written) == config
    assert len(read_trajectories(summary.run_dir / TRAJECTORIES_FILE)) == summary.recorded == 4


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_while_the_erp_starts_says_one_line(erp_server, tmp_path) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    command = [sys.executable, "-m", "harnesses.run", "--dataset", str(dataset), "--no-progress"]
    command += ["--harness", PLUGIN, "--erp-db", erp_server.db_url, "--out", str(out)]
    runner = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and runner.poll() is None:
            if any("erp_mcp" in _cmdline(child) for child in _children(runner.pid)):
                break  # the runner is starting its ERP server
            time.sleep(0.01)
        runner.send_signal(signal.SIGTERM)
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    lines = err.strip().splitlines()
    assert runner.returncode == 130, err
    assert len(lines) == 1 and lines[0].startswith("interrupted"), err
    assert not out.exists(), "nothing was recorded: no run folder"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_the_env_does_not_leak_a_token_into_the_errors(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("ERP_MCP_TOKEN", "tok-secret-123")
    dataset = numbered_dataset(tmp_path / "ds.yaml", 1)
    url = f"http://127.0.0.1:{free_port()}/mcp"
    argv = ["--no-progress", "--dataset", str(dataset), "--harness", PLUGIN, "--erp-url", url]
    code = cli.main([*argv, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "tok-secret-123" not in err
    assert os.environ["ERP_MCP_TOKEN"] == "tok-secret-123"


def test_an_unreachable_servers_error_is_one_line_with_its_token_masked() -> None:
    from harnesses._redact import error_detail

    error = ConnectionError("401 for Bearer tok-secret-123\n  at 127.0.0.1")
    assert (
        error_detail(error, "tok-secret-123") == "ConnectionError: 401 for Bearer *** at 127.0.0.1"
    )
    assert error_detail(error, None) == (
        "ConnectionError: 401 for Bearer tok-secret-123 at 127.0.0.1"
    )


def test_a_broken_dataset_names_its_path_once(tmp_path, capsys) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("header:\n  name: x\nitems:\n  - id: a\n    query: [unclosed\n")
    code = cli.main(["--no-progress", "--dataset", str(broken), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.count(str(broken)) == 1 and "not valid YAML" in err, err
    assert not (tmp_path / "r").exists()
