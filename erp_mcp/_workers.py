"""``--workers N``: N server processes on one port, each with a listening socket of its own.

Every worker binds the port with ``SO_REUSEPORT``, so the kernel spreads new connections evenly over
the workers. (With one listening socket shared by all workers, as ``uvicorn --workers`` does, the
worker that happens to be on a core accepts a whole burst of connections: clients that keep their
connection open, as MCP clients do, then all talk to one worker while the others idle.) Each worker
builds its server from the server's own command line (``factory(argv)``) and serves it stateless;
they share one cursor key. The parent restarts a worker that dies and stops them all on SIGINT or
SIGTERM.

The server is ready (its start line, its ``listening`` step) once *every* worker accepts
connections, each reporting its start steps to the parent on a pipe of its own. The kernel routes a
connection only to sockets that listen, so one listening worker would already spare a client
ECONNREFUSED; but a client that connects right then (a script waiting for the line, a benchmark)
would land on that one worker and, keeping its connection, stay there.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import multiprocessing.connection
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from ledgerbench_core._startup import LISTENING, SPAWNED, STARTUP_FD_ENV, cpu_seconds

WORKER_ENV = "LEDGERBENCH_MCP_WORKER"
"""Environment variable that hands a worker process what to serve (JSON)."""
RESTART_PAUSE_S = 1.0
MAX_QUICK_DEATHS = 5
"""Deaths within a minute of their start after which the parent gives up (a broken server)."""


class WorkersFailed(RuntimeError):
    """The workers could not be started or kept running (the message says why): a failure of
    the machine or the server, not of the command line."""


def tcp_listener(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` whose connections send small writes at once.

    The socket is made with ``IPPROTO_TCP`` as its protocol: asyncio turns Nagle's algorithm off
    (``TCP_NODELAY``) only on accepted sockets of that protocol, and ``socket.create_server``
    makes them with protocol 0. With Nagle on, each answer on a kept-alive connection (HTTP head,
    then body) waited about 40 ms for the client's delayed acknowledgement. ``reuse_port`` lets
    other workers bind the same port (``SO_REUSEPORT``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def serve_workers(
    host: str,
    port: int,
    workers: int,
    factory: str,
    argv: list[str],
    hosts: list[str],
    *,
    report: Callable[[str], None] = lambda step: None,
    on_listening: Callable[[], None] = lambda: None,
) -> int:
    """Run ``workers`` processes serving on ``host:port`` until SIGINT or SIGTERM (raised again
    once the workers stopped, for the caller's handlers).

    ``report`` hears the workers' start steps (again whenever they used CPU, so a starter that
    waits on progress sees them working); ``on_listening`` runs once every worker accepts
    connections. A worker that dies before it does stops the others: :class:`WorkersFailed`
    names it and its step. The caller checks that the port can be bound first."""
    from erp_mcp._cursors import CURSOR_SECRET_ENV

    os.environ.setdefault(CURSOR_SECRET_ENV, secrets.token_urlsafe(32))
    os.environ[WORKER_ENV] = json.dumps({"factory": factory, "argv": argv, "hosts": hosts})
    context = multiprocessing.get_context("spawn")
    stop = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in _SIGNALS}

    def start(number: int, watched: bool) -> _Worker:
        reader, writer = context.Pipe(duplex=False) if watched else (None, None)
        process = context.Process(
            target=_worker_main, args=(host, port, writer), name=f"erp-worker-{number}"
        )
        with _sigint_ignored():  # the worker starts with SIGINT ignored
            process.start()
        if writer is not None:
            writer.close()  # the worker holds the only write end: its death ends the pipe
        return _Worker(number, workers, process, reader)

    with _hidden_from_children(STARTUP_FD_ENV):  # the progress pipe is the parent's alone
        running = [start(number, watched=True) for number in range(1, workers + 1)]
    try:
        if _await_listening(running, stop, report):
            on_listening()
            _keep_serving(running, stop, lambda worker: start(worker.number, watched=False))
    finally:
        _stop_all(running)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:  # stopped as a single server stops: the signal's own ending (130, 143)
        signal.raise_signal(received[0])
    return 0


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class _Worker:
    """One worker process and, until it listens, the pipe it reports its start steps on."""

    number: int
    of: int
    process: BaseProcess
    progress: Connection | None
    step: str = SPAWNED
    failure: str = ""
    """The error a worker said it failed with at ``step``, if any."""
    listening: bool = False
    started: float = field(default_factory=time.monotonic)

    def read_progress(self) -> None:
        """Take in every step the worker reported so far (the pipe closes when it exits)."""
        while self.progress is not None and self.progress.poll():
            try:
                kind, text = self.progress.recv()
            except (EOFError, OSError):
                self.progress.close()
                self.progress = None
                return
            if kind == "failed":
                self.failure = text
            else:
                self.step = text
                self.listening = text == LISTENING

    def death(self) -> str:
        """One line: which worker died, how, and at which step."""
        code = self.process.exitcode
        if code is not None and code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        failure = f" ({self.failure}; --workers 1 shows the whole error)" if self.failure else ""
        return (
            f"worker {self.number} of {self.of} (pid {self.process.pid}) {how} at step "
            f"'{self.step}' before it listened{failure}; the other workers were stopped"
        )


def _await_listening(
    running: list[_Worker], stop: threading.Event, report: Callable[[str], None]
) -> bool:
    """Wait until every worker accepts connections (True) or a stop signal came (False);
    :class:`WorkersFailed` if a worker died first."""
    cpu_before = 0.0
    while not all(worker.listening for worker in running):
        starting = [worker for worker in running if not worker.listening]
        waitables = [w.process.sentinel for w in starting]
        waitables += [w.progress for w in starting if w.progress is not None]
        multiprocessing.connection.wait(waitables, timeout=RESTART_PAUSE_S)
        if stop.is_set():  # a Ctrl-C also stops the workers: no worker death to report
            return False
        for worker in starting:
            worker.read_progress()
            if not worker.listening and not worker.process.is_alive():
                worker.process.join()
                raise WorkersFailed(worker.death())
        cpu = sum(cpu_seconds(w.process.pid) or 0.0 for w in running)
        if cpu > cpu_before:  # progress a starter can see, even while no step changes
            cpu_before = cpu
            report(_start_steps(running))
    return True


def _start_steps(running: list[_Worker]) -> str:
    steps = ", ".join(f"worker {w.number}: {w.step}" for w in running)
    return f"starting {len(running)} workers ({steps})"


def _keep_serving(
    running: list[_Worker], stop: threading.Event, restart: Callable[[_Worker], _Worker]
) -> None:
    """Restart a worker that dies, until a stop signal; give up on workers that keep dying."""
    quick_deaths: list[float] = []
    while not stop.wait(RESTART_PAUSE_S):
        for index, worker in enumerate(running):
            if worker.process.is_alive():
                continue
            now = time.monotonic()
            if now - worker.started < 60:
                quick_deaths = [t for t in quick_deaths if now - t < 60] + [now]
                if len(quick_deaths) >= MAX_QUICK_DEATHS:
                    raise WorkersFailed(
                        f"workers keep exiting at start (last exit code "
                        f"{worker.process.exitcode}); run with --workers 1 to see why"
                    )
            running[index] = restart(worker)


def _stop_all(running: list[_Worker]) -> None:
    for worker in running:
        if worker.progress is not None:
            worker.progress.close()
        if worker.process.is_alive():
            worker.process.terminate()
    for worker in running:
        worker.process.join(timeout=30)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()


@contextlib.contextmanager
def _hidden_from_children(name: str) -> Iterator[None]:
    """Without the environment variable ``name`` while children start (it names a descriptor
    of this process that they do not have)."""
    value = os.environ.pop(name, None)
    try:
        yield
    finally:
        if value is not None:
            os.environ[name] = value


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile, so that children started meanwhile start with it ignored (an
    ignored signal stays ignored across exec, and Python keeps it so): a Ctrl-C reaches the
    whole process group, and the parent stops its workers itself (SIGTERM), so none prints a
    KeyboardInterrupt traceback from the middle of its start. Blocked meanwhile too, so a Ctrl-C
    to this process is delivered after, not lost."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _worker_main(host: str, port: int, progress: Connection | None = None) -> None:
    """A worker process: build the server, listen, serve; each start step is reported on
    ``progress`` (the last, ``listening``, once the HTTP server accepts connections)."""
    from ledgerbench_core._startup import die_with_parent, pause_collection, resume_collection

    die_with_parent()  # a supervisor killed with -9 leaves no worker serving its port
    pause_collection()  # until it listens, as a single server's start
    step = _reporter(progress)
    try:
        step("importing the server")
        import uvicorn

        from erp_mcp._tooling import hand_the_interpreter_over_often

        hand_the_interpreter_over_often()
        # The app is built before the port is bound: the kernel hands connections only to
        # workers that listen, so none waits in a backlog while its worker still imports and
        # builds (a client's first calls timed out that way right after a start).
        step("building the server")
        app = worker_app()
        step("binding the port")
        sock = tcp_listener(host, port, reuse_port=True)
        step("starting the HTTP server")
    except Exception as error:  # one line to the parent, which names this worker and its step
        failed = _reporter(progress, "failed")
        failed(f"{type(error).__name__}: {error}".splitlines()[0])
        raise SystemExit(1) from None
    resume_collection()
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    _reporting_server(config, lambda: step(LISTENING)).run(sockets=[sock])


def _reporter(progress: Connection | None, kind: str = "step") -> Callable[[str], None]:
    def send(text: str) -> None:
        if progress is not None:
            with contextlib.suppress(OSError, ValueError):
                progress.send((kind, text))

    return send


def _reporting_server(config, on_listening: Callable[[], None]):
    """A uvicorn server that calls ``on_listening`` once it accepts connections (its lifespan
    started and its socket is served)."""
    import uvicorn

    class ReportingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                on_listening()

    return ReportingServer(config)


def worker_app():
    """The ASGI app of one worker: the server built from the command line, served stateless."""
    from erp_mcp._serving import http_app

    spec = json.loads(os.environ[WORKER_ENV])
    module, _, function = spec["factory"].partition(":")
    server = getattr(importlib.import_module(module), function)(spec["argv"])
    return http_app(server, spec["hosts"], stateless=True)
