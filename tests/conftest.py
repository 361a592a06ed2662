"""Shared fixtures: a real generated ERP (SQLite file), a real MCP server over HTTP, PostgreSQL."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ledgerbench_core._startup import StartupWatch

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
REFERENCE_DIR = Path(os.environ.get("LEDGERBENCH_REFERENCE_DIR") or SHARED_DIR / "reference")
"""``../shared/reference`` next to the repository; ``LEDGERBENCH_REFERENCE_DIR`` overrides it (e.g.
for a git worktree that sits one level deeper)."""

REFERENCE_MISSING = (
    f"published FORCE-Bench files not found at {REFERENCE_DIR}: fetch them with "
    "scripts/fetch-force-bench and set LEDGERBENCH_REFERENCE_DIR (docs/force-bench-files.md)"
)
"""The skip reason of every test that needs the published files: where, and how to get them."""

TEST_SEED = 42
TEST_TOKEN = "test-token-not-a-secret"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests")


def pytest_configure(config: pytest.Config) -> None:
    _children_die_with_the_tests()
    # A shell starts background jobs (`make test &`, nohup) with Ctrl-C ignored, and children
    # inherit that: the tests that interrupt a runner or a generation would then wait for nothing.
    # A handler here makes every child start with the default, as from a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _children_die_with_the_tests() -> None:
    """Every process a test starts from the main thread dies with the test process, whatever
    kills it (an xdist worker crash, ``kill -9``): servers, runners and pipelines the tests start
    never outlive them. The product's own children die with their parents the same way."""
    from ledgerbench_core._startup import parent_death_signal

    original = subprocess.Popen.__init__
    if getattr(original, "dies_with_the_tests", False):
        return

    def start(self: subprocess.Popen, *args: object, preexec_fn: object = None, **kwargs: object):
        if preexec_fn is None and threading.current_thread() is threading.main_thread():
            preexec_fn = parent_death_signal()
        original(self, *args, preexec_fn=preexec_fn, **kwargs)  # type: ignore[arg-type]

    start.dies_with_the_tests = True  # type: ignore[attr-defined]
    subprocess.Popen.__init__ = start  # type: ignore[method-assign]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow test: run with --runslow")
    skip_browser = pytest.mark.skip(reason="headless Chromium (slow tier): run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)
        elif "browser" in item.keywords:  # a Chromium session costs 5-20 s of CPU
            item.add_marker(skip_browser)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, watch: StartupWatch | None = None) -> None:
    """Wait until the server listens, as the runner waits: on its progress (CPU used, start
    steps reported on ``watch``'s pipe), not on a clock; a loaded 2-core machine can take
    minutes of wall time to import it."""
    from ledgerbench_core._startup import StartupWatch

    watch = watch or StartupWatch(read_fd=-1)
    watch.pid = process.pid
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"server exited early with code {process.returncode} at step '{watch.step}'"
            )
        if watch.read_fd >= 0 and watch.listening():
            return  # this server said so: not whatever else is on the port
        if watch.read_fd < 0 or watch.ended:  # no pipe, or one closed without a word
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
        if (reason := watch.poll()) is not None:
            raise TimeoutError(f"server on {port} did not listen: {reason}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not REFERENCE_DIR.exists():
        pytest.skip(REFERENCE_MISSING)
    return REFERENCE_DIR


@pytest.fixture(scope="session")
def erp_db_url(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> str:  # xdist's fixture
    """A default-scale ERP (1,000 customers and vendors, seed 42) in a SQLite file, built once per
    test run: under pytest-xdist the first worker builds it and the others wait for it."""
    from synthetic_erp import generate_erp

    if worker_id == "master":
        folder = tmp_path_factory.mktemp("erp")
    else:  # the xdist workers' base temp folders share this parent
        folder = tmp_path_factory.getbasetemp().parent / "shared-erp"
        folder.mkdir(exist_ok=True)
    path = folder / "erp.db"
    with (folder / "erp.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            building = folder / "erp.db.building"
            building.unlink(missing_ok=True)
            generate_erp(f"sqlite:///{building}", seed=TEST_SEED)
            building.rename(path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def erp_10x_db_url(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> str:
    """A 10x ERP (10,000 customers and vendors, seed 42) for the slow tier, built once per test
    run like ``erp_db_url`` (about 20 s)."""
    from synthetic_erp import generate_erp

    if worker_id == "master":
        folder = tmp_path_factory.mktemp("erp10x")
    else:
        folder = tmp_path_factory.getbasetemp().parent / "shared-erp-10x"
        folder.mkdir(exist_ok=True)
    path = folder / "erp10x.db"
    with (folder / "erp.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            building = folder / "erp10x.db.building"
            building.unlink(missing_ok=True)
            generate_erp(f"sqlite:///{building}", seed=TEST_SEED, scale=10)
            building.rename(path)
    return f"sqlite:///{path}"


@dataclass(frozen=True)
class RunningServer:
    url: str
    """MCP endpoint, e.g. http://127.0.0.1:PORT/mcp"""
    base_url: str
    """Base of record URLs, e.g. http://127.0.0.1:PORT"""
    token: str | None
    db_url: str
    process: subprocess.Popen


def start_mcp_server(
    db_url: str, *extra_args: str, token: str | None = None
) -> tuple[RunningServer, Path]:
    """The ERP MCP server over streamable HTTP on a free loopback port (and its log file)."""
    return _start_http_server(["erp_mcp"], "ERP_MCP_TOKEN", db_url, *extra_args, token=token)


def start_world_server(
    world_db_url: str, *extra_args: str, token: str | None = None
) -> tuple[RunningServer, Path]:
    """The research world's MCP server over streamable HTTP on a free loopback port."""
    command = ["synthetic_world", "serve"]
    return _start_http_server(command, "WORLD_MCP_TOKEN", world_db_url, *extra_args, token=token)


def _start_http_server(
    command: list[str], token_env: str, db_url: str, *extra_args: str, token: str | None
) -> tuple[RunningServer, Path]:
    from erp_mcp._workers import tcp_listener
    from ledgerbench_core._startup import LISTEN_FD_ENV, STARTUP_FD_ENV, StartupWatch

    # Bound here and handed over, as the runner does: a port picked free and bound by the server
    # later may be taken meanwhile by another test's server (whose token then answers 401).
    listener = tcp_listener("127.0.0.1", 0)
    port = listener.getsockname()[1]
    env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false")
    env.pop(token_env, None)
    env[LISTEN_FD_ENV] = str(listener.fileno())
    args = [sys.executable, "-m", *command, "--db", db_url, "--transport", "http"]
    args += ["--host", "127.0.0.1", "--port", str(port), *extra_args]
    if token:
        args += ["--token", token]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"{command[0]}_{port}.log"
    watch, progress_fd = StartupWatch.open()
    env[STARTUP_FD_ENV] = str(progress_fd)
    try:
        with log.open("w") as output:
            process = subprocess.Popen(
                args,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(progress_fd, listener.fileno()),
            )
    finally:
        os.close(progress_fd)
        listener.close()  # the server holds its own copy
    try:
        wait_for_port(port, process, watch)
    finally:
        watch.close()
    base = f"http://127.0.0.1:{port}"
    return RunningServer(f"{base}/mcp", base, token, db_url, process), log


def child_processes(pid: int) -> dict[int, bytes]:
    """The running children of process ``pid`` (Linux /proc) and their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(stat[1]) == pid:
            found[int(entry.name)] = command
    return found


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def erp_server(erp_db_url: str) -> Iterator[RunningServer]:
    """The real ERP MCP server over streamable HTTP, no auth, on a free loopback port."""
    server, _ = start_mcp_server(erp_db_url)
    yield server
    stop_process(server.process)


@pytest.fixture(scope="session")
def erp_server_with_token(erp_db_url: str) -> Iterator[RunningServer]:
    """The real ERP MCP server over streamable HTTP with bearer-token auth."""
    server, _ = start_mcp_server(erp_db_url, token=TEST_TOKEN)
    yield server
    stop_process(server.process)


@pytest.fixture(scope="session")
def pg_url() -> str:
    """URL of a PostgreSQL server for tests (``LEDGERBENCH_PG_URL``, set by .ci/run)."""
    url = os.environ.get("LEDGERBENCH_PG_URL")
    if not url:
        pytest.skip("LEDGERBENCH_PG_URL not set: .ci/run starts PostgreSQL and sets it")
    return url
