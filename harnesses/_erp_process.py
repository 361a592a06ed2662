"""Serving the ERP for a run: the default SQLite ERP and an ``erp_mcp`` subprocess on a free port.

``--erp-db URL`` (or no ERP option at all) makes the runner start ``python -m erp_mcp`` over
streamable HTTP on a free loopback port with a freshly generated bearer token, wait until it
listens, and stop it when the run ends. The token reaches the server through its environment,
never a command line or a file. On Linux the server also dies with the runner, ``kill -9``
included: it is started with a parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), which
fires when the thread that started it ends, so the runner starts it from its main thread.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harnesses._protocol import ErpEndpoint

DEFAULT_ERP_RELATIVE_PATH = Path(".ledgerbench") / "erp.db"
"""Where the default ERP lives, under the project root."""

DEFAULT_ERP_SEED = 42


class ErpServerError(RuntimeError):
    """The ERP server could not be started or reached; the message says why."""


def project_root() -> Path:
    """The project's root (the folder holding ``pyproject.toml`` next to ``harnesses/``).

    Falls back to the working directory when the package is installed outside a checkout.
    """
    candidate = Path(__file__).resolve().parents[1]
    return candidate if (candidate / "pyproject.toml").exists() else Path.cwd()


def default_erp_db_url(root: Path | None = None) -> str:
    path = (root or project_root()) / DEFAULT_ERP_RELATIVE_PATH
    return f"sqlite:///{path}"


def ensure_default_erp(
    root: Path | None = None,
    *,
    seed: int = DEFAULT_ERP_SEED,
    expected_snapshot: str | None = None,
) -> str:
    """The default SQLite ERP's URL, generating it first when needed.

    The default ERP is a cache the runner owns: it is (re)built when the file does not exist, or
    when ``expected_snapshot`` (the dataset's recorded ERP) differs from the file's snapshot, e.g.
    after an upgrade changed the generator. Databases passed with ``--erp-db`` are never touched.
    """
    path = (root or project_root()) / DEFAULT_ERP_RELATIVE_PATH
    url = f"sqlite:///{path}"
    if path.exists() and not _is_stale(url, expected_snapshot):
        return url
    from synthetic_erp import generate_erp

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    generate_erp(f"sqlite:///{partial}", seed=seed)
    os.replace(partial, path)  # a crash mid-generation never leaves a half-built default ERP
    return url


def _is_stale(url: str, expected_snapshot: str | None) -> bool:
    if expected_snapshot is None:
        return False
    from synthetic_erp import erp_stats

    try:
        return erp_stats(url).get("snapshot_hash") != expected_snapshot
    except Exception:  # unreadable or not an ERP: rebuild it
        return True


def parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGKILL the child when its parent dies (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: go now
            os.kill(os.getpid(), signal.SIGKILL)

    return set_death_signal


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass
class ErpServerProcess:
    """A running ``erp_mcp`` subprocess from :func:`start_erp_server`; :meth:`stop` ends it."""

    endpoint: ErpEndpoint
    db_url: str
    process: subprocess.Popen
    log_path: Path | None

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.log_path is not None and self.endpoint.token:
            _scrub_file(self.log_path, self.endpoint.token)


def _scrub_file(path: Path, secret: str) -> None:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return
    if secret in text:
        path.write_text(text.replace(secret, "***"))


def _log_tail(path: Path | None, secret: str | None, lines: int = 5) -> str:
    if path is None or not path.exists():
        return ""
    text = path.read_text(errors="replace")
    if secret:
        text = text.replace(secret, "***")
    tail = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(tail)


def _wait_until_listening(
    host: str,
    port: int,
    process: subprocess.Popen,
    timeout: float,
    log_path: Path | None,
    token: str,
    what: str = "the ERP MCP server",
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ErpServerError(
                f"{what} exited with code {process.returncode} before listening: "
                f"{_log_tail(log_path, token) or 'no output'}"
            )
        with socket.socket() as sock:
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    raise ErpServerError(f"{what} did not listen on {host}:{port} within {timeout:.0f}s")


def start_mcp_server(
    module_args: Sequence[str],
    *,
    token_env: str,
    what: str,
    log_path: Path | None = None,
    public_url: str | None = None,
    host: str = "127.0.0.1",
    startup_timeout: float = 60.0,
    stdio_args: Sequence[str] | None = None,
    db_url: str = "",
) -> ErpServerProcess:
    """Start ``python -m <module_args> --transport http`` on a free port with a new token (handed
    over in ``token_env``), wait until it listens and return it; ``stdio_args`` serve the same
    over stdio for harnesses that spawn their own server."""
    port = free_port(host)
    token = secrets.token_urlsafe(24)
    env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false")
    env[token_env] = token
    args = [sys.executable, "-m", *module_args, "--transport", "http"]
    args += ["--host", host, "--port", str(port)]
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        output = log_path.open("ab")
    else:
        output = subprocess.DEVNULL
    try:
        process = subprocess.Popen(
            args,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=parent_death_signal(),
        )
    finally:
        if log_path is not None:
            output.close()
    endpoint = ErpEndpoint(
        url=f"http://{host}:{port}/mcp",
        token=token,
        public_url=public_url,
        stdio_command=(sys.executable, "-m", *stdio_args) if stdio_args else None,
    )
    server = ErpServerProcess(endpoint=endpoint, db_url=db_url, process=process, log_path=log_path)
    try:
        _wait_until_listening(host, port, process, startup_timeout, log_path, token, what)
    except BaseException:
        server.stop()
        raise
    return server


def start_erp_server(
    db_url: str,
    *,
    log_path: Path | None = None,
    public_url: str | None = None,
    host: str = "127.0.0.1",
    startup_timeout: float = 60.0,
    extra_args: Sequence[str] = (),
    record_base_url: str | None = None,
) -> ErpServerProcess:
    """Start ``python -m erp_mcp --db URL --transport http`` on a free port with a new token.

    ``extra_args`` go to the server as given (e.g. fault injection: ``--error-rate 0.3``).
    ``record_base_url``: the base of the record URLs the server cites (``--public-url``), instead
    of its own address (Ray workers cite the driver's server, as a local run would).
    """
    args = ["erp_mcp", "--db", db_url, *extra_args]
    if record_base_url:
        args += ["--public-url", record_base_url]
    server = start_mcp_server(
        args,
        token_env="ERP_MCP_TOKEN",
        what="the ERP MCP server",
        log_path=log_path,
        public_url=public_url,
        host=host,
        startup_timeout=startup_timeout,
        db_url=db_url,
    )
    # Record links over stdio point at this HTTP server, so they stay citable http links.
    base = public_url or server.endpoint.url.removesuffix("/mcp")
    server.endpoint = dataclasses.replace(
        server.endpoint,
        stdio_command=(
            *(sys.executable, "-m", "erp_mcp", "--db", db_url, "--transport", "stdio"),
            *("--public-url", base),
        ),
    )
    return server
