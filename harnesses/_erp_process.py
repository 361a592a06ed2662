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
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from erp_mcp._workers import tcp_listener
from harnesses._protocol import ErpEndpoint
from ledgerbench_core._startup import (
    DEFAULT_LIMIT_S,
    LISTEN_FD_ENV,
    STARTUP_FD_ENV,
    StartupWatch,
    cpu_seconds,
    describe_load,
    parent_death_signal,
    stall_seconds,
)

T = TypeVar("T")

DEFAULT_ERP_RELATIVE_PATH = Path(".ledgerbench") / "erp.db"
"""Where the default ERP lives, under the project root."""

DEFAULT_ERP_SEED = 42


class ErpServerError(RuntimeError):
    """The ERP server could not be started or reached; the message says why."""


class ServerStartError(ErpServerError):
    """A server the runner started died or got stuck before it listened: an infrastructure
    failure (exit code 3), not bad input. The message names the step it was at."""


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
    announce: Callable[[str], None] | None = None,
) -> str:
    """The default SQLite ERP's URL, generating it first when needed.

    The default ERP is a cache the runner owns: it is (re)built when the file does not exist, or
    when ``expected_snapshot`` (the dataset's recorded ERP) differs from the file's snapshot and a
    rebuild would make another file (an upgrade changed the generator, another seed or size); a
    dataset made from another ERP leaves it alone. Databases passed with ``--erp-db`` are never
    touched.
    """
    path = (root or project_root()) / DEFAULT_ERP_RELATIVE_PATH
    url = f"sqlite:///{path}"
    if path.exists() and not _is_stale(url, expected_snapshot, seed):
        return url
    from synthetic_erp import generate_erp

    if announce is not None:
        why = "rebuilding it: the dataset was made from another ERP" if path.exists() else ""
        announce(f"generating the default ERP ({DEFAULT_ERP_RELATIVE_PATH}; {why or 'first use'})")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    generate_erp(f"sqlite:///{partial}", seed=seed)
    os.replace(partial, path)  # a crash mid-generation never leaves a half-built default ERP
    return url


def _is_stale(url: str, expected_snapshot: str | None, seed: int) -> bool:
    """Whether rebuilding the default ERP can give the dataset's snapshot. Not when the file is
    already what a rebuild would make (this generator, the default size, the same seed): the
    dataset was then made from another ERP, and the run refuses it (naming the database to serve)
    instead of rebuilding the shared file for nothing."""
    if expected_snapshot is None:
        return False
    from synthetic_erp import erp_stats
    from synthetic_erp._generate import GENERATOR_VERSION

    try:
        stats = erp_stats(url)
    except Exception:  # unreadable or not an ERP: rebuild it
        return True
    if stats.get("snapshot_hash") == expected_snapshot:
        return False
    import faker

    rebuilt_alike = (
        stats.get("source") == "generated"
        and str(stats.get("seed")) == str(seed)
        and str(stats.get("scale")) == "1"
        and (stats.get("customers"), stats.get("vendors")) == (1000, 1000)
        and stats.get("generator_version") == GENERATOR_VERSION
        and stats.get("faker_version") == faker.VERSION
    )
    return not rebuilt_alike


@dataclass
class ErpServerProcess:
    """A running MCP server subprocess from :func:`start_mcp_server` (the ERP's from
    :func:`start_erp_server`); :meth:`stop` ends it."""

    endpoint: ErpEndpoint
    db_url: str
    process: subprocess.Popen
    log_path: Path | None
    host: str = "127.0.0.1"
    port: int = 0
    log_start: int = 0
    """Size of the log before this start: its own output comes after."""
    what: str = "the ERP MCP server"
    """The server's name in messages."""
    watch: StartupWatch | None = None
    """The start's progress, until the server listens."""
    started_in_s: float | None = None
    start_cpu_s: float | None = None
    """Wall and CPU seconds the server took to listen, once it does."""

    def _listening(self) -> bool:
        token = self.endpoint.token or ""
        args = (self.host, self.port, self.process, self.log_path, token, self.log_start)
        return _check_listening(*args, what=self.what, watch=self.watch)

    def _given_up(self) -> ServerStartError | None:
        """Why to stop waiting (stuck, or past the limit), or None while it makes progress."""
        if self.watch is None:
            return None
        reason = self.watch.poll()
        if reason is None:
            return None
        return ServerStartError(f"{self.what} did not listen: {reason}{describe_load()}")

    def wait_until_listening(self) -> None:
        """Block until the server listens; :class:`ServerStartError` if it exits or gets stuck.

        There is no fixed clock: a server that keeps using CPU or reporting start steps is waited
        for, however busy the machine (see :mod:`ledgerbench_core._startup`)."""
        while not self._listening():
            if (error := self._given_up()) is not None:
                raise error
            time.sleep(0.05)
        self._done_watching()

    async def until_listening(self) -> None:
        """:meth:`wait_until_listening` without blocking the event loop (Ctrl-C and SIGTERM are
        handled at once while the server starts)."""
        import asyncio

        while not self._listening():
            if (error := self._given_up()) is not None:
                raise error
            await asyncio.sleep(0.05)
        self._done_watching()

    def _done_watching(self) -> None:
        if self.watch is not None:
            self.watch.close()
            self.started_in_s = self.watch.elapsed()
            self.start_cpu_s = self.watch.cpu_used()
            self.watch = None

    async def answer(self, call: Awaitable[T], step: str) -> T:
        """``call`` (a request to this server), waited for as long as the server lives and the
        machine makes progress, not on a fixed clock: on a loaded machine the first answer after
        the start can take minutes of wall time. :class:`ServerStartError` names ``step`` if the
        server exits meanwhile, or if neither it nor this process used CPU for the stall time."""
        import asyncio

        task = asyncio.ensure_future(call)
        progress = _Progress(self.process.pid)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=0.25)
                if done:
                    return task.result()
                if self.process.poll() is not None:
                    raise ServerStartError(
                        f"{self.what} exited with code {self.process.returncode} while {step}: "
                        f"{_log_tail(self.log_path, self.endpoint.token, start=self.log_start)}"
                    )
                if (reason := progress.stalled()) is not None:
                    raise ServerStartError(f"{self.what} is stuck {step}: {reason}")
        finally:
            task.cancel()

    def stop(self, timeout: float = 10.0) -> None:
        if self.watch is not None:
            self.watch.close()
            self.watch = None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.log_path is not None and self.endpoint.token:
            _scrub_file(self.log_path, self.endpoint.token)


async def first_answer(
    server: ErpServerProcess | None,
    contact: Callable[[], Awaitable[T]],
    step: str,
    timeout: float,
) -> T:
    """A server's first answer: waited for on the progress of ``server`` when this run started it
    (:meth:`ErpServerProcess.answer`), else (a server given by URL) within ``timeout`` seconds."""
    import asyncio

    if server is not None:
        return await server.answer(contact(), step)
    async with asyncio.timeout(timeout):
        return await contact()


@dataclass
class _Progress:
    """Whether a server or this process still gets CPU (a waiting server uses none while this
    process, slowed by the load, has not sent its request yet)."""

    pid: int
    stall_s: float = field(default_factory=stall_seconds)
    limit_s: float = DEFAULT_LIMIT_S
    _started: float = field(default_factory=time.monotonic)
    _last: float = field(default_factory=time.monotonic)
    _cpu: float = -1.0

    def stalled(self) -> str | None:
        now = time.monotonic()
        cpu = (cpu_seconds(self.pid) or 0.0) + time.process_time()
        if cpu > self._cpu:
            self._cpu, self._last = cpu, now
        if now - self._last > self.stall_s:
            return f"no CPU used for {self.stall_s:.0f} s{describe_load()}"
        if now - self._started > self.limit_s:
            return f"no answer after {self.limit_s:.0f} s{describe_load()}"
        return None


def _scrub_file(path: Path, secret: str) -> None:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return
    if secret in text:
        path.write_text(text.replace(secret, "***"))


def _log_tail(path: Path | None, secret: str | None, lines: int = 5, start: int = 0) -> str:
    """The last ``lines`` lines the server wrote to ``path`` after byte ``start`` (this start's
    output only: the log may hold earlier runs' lines)."""
    if path is None or not path.exists():
        return ""
    with path.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode("utf-8", "replace")
    if secret:
        text = text.replace(secret, "***")
    tail = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(tail)


def _check_listening(
    host: str,
    port: int,
    process: subprocess.Popen,
    log_path: Path | None,
    token: str,
    start: int,
    what: str = "the ERP MCP server",
    watch: StartupWatch | None = None,
) -> bool:
    """True once the server says it listens on the socket it was handed; :class:`ServerStartError`
    if it exited. (Whether *something* accepts connections on the port says nothing: it may be
    another program.) A ``--workers`` server says so once every worker listens; a server whose
    pipe closed without saying so listens once the port accepts connections."""
    if process.poll() is not None:
        step = f" at step '{watch.step}'" if watch is not None else ""
        raise ServerStartError(
            f"{what} exited with code {process.returncode}{step} before listening: "
            f"{_log_tail(log_path, token, start=start) or 'no output'}"
        )
    if watch is None or watch.listening():
        return True
    if not watch.ended:
        return False
    with socket.socket() as sock:
        return sock.connect_ex((host, port)) == 0


def start_mcp_server(
    module_args: Sequence[str],
    *,
    token_env: str,
    what: str,
    log_path: Path | None = None,
    public_url: str | None = None,
    host: str = "127.0.0.1",
    stdio_args: Sequence[str] | None = None,
    db_url: str = "",
    wait: bool = True,
) -> ErpServerProcess:
    """Start ``python -m <module_args> --transport http`` on a free port with a new token (handed
    over in ``token_env``), wait until it listens and return it; ``stdio_args`` serve the same
    over stdio for harnesses that spawn their own server. ``wait=False`` returns as soon as the
    process exists: ``await server.until_listening()``."""
    # The port stays bound from here on and the server takes the socket over: a port picked
    # free and bound by the server only seconds later can go to another program meanwhile.
    listener = tcp_listener(host, 0)
    port = listener.getsockname()[1]
    token = secrets.token_urlsafe(24)
    env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false")
    env[token_env] = token
    env[LISTEN_FD_ENV] = str(listener.fileno())
    try:
        watch, progress_fd = StartupWatch.open()
    except BaseException:
        listener.close()
        raise
    env[STARTUP_FD_ENV] = str(progress_fd)
    args = [sys.executable, "-m", *module_args, "--transport", "http"]
    args += ["--host", host, "--port", str(port)]
    log_start = 0
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        output = log_path.open("ab")
        log_start = output.tell()
    else:
        output = subprocess.DEVNULL
    try:
        process = subprocess.Popen(
            args,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            pass_fds=(progress_fd, listener.fileno()),
            preexec_fn=parent_death_signal(),
        )
    except BaseException:
        watch.close()
        raise
    finally:
        os.close(progress_fd)
        listener.close()  # the server holds its own copy
        if log_path is not None:
            output.close()
    watch.pid = process.pid
    endpoint = ErpEndpoint(
        url=f"http://{host}:{port}/mcp",
        token=token,
        public_url=public_url,
        stdio_command=(sys.executable, "-m", *stdio_args) if stdio_args else None,
    )
    server = ErpServerProcess(
        endpoint=endpoint,
        db_url=db_url,
        process=process,
        log_path=log_path,
        host=host,
        port=port,
        log_start=log_start,
        what=what,
        watch=watch,
    )
    if wait:
        try:
            server.wait_until_listening()
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
    extra_args: Sequence[str] = (),
    record_base_url: str | None = None,
    wait: bool = True,
) -> ErpServerProcess:
    """Start ``python -m erp_mcp --db URL --transport http`` on a free port with a new token.

    ``extra_args`` go to the server as given (e.g. fault injection: ``--error-rate 0.3``).
    ``wait=False`` returns as soon as the process exists: ``await server.until_listening()``.
    ``record_base_url``: the base of the record URLs the server cites (``--public-url``); by
    default the stable :data:`~synthetic_erp.STABLE_RECORD_BASE`, the same in every run, never
    this server's port (the server resolves the record paths under either name).
    """
    from synthetic_erp._catalog import STABLE_RECORD_BASE

    record_base_url = record_base_url or STABLE_RECORD_BASE
    args = ["erp_mcp", "--db", db_url, *extra_args, "--public-url", record_base_url]
    server = start_mcp_server(
        args,
        token_env="ERP_MCP_TOKEN",
        what="the ERP MCP server",
        log_path=log_path,
        public_url=public_url,
        host=host,
        db_url=db_url,
        wait=wait,
    )
    # Record links over stdio use the same stable base, so they stay citable http links.
    server.endpoint = dataclasses.replace(
        server.endpoint,
        stdio_command=(
            *(sys.executable, "-m", "erp_mcp", "--db", db_url, "--transport", "stdio"),
            *("--public-url", record_base_url),
        ),
    )
    return server
