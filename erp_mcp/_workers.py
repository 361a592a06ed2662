"""``--workers N``: N server processes on one port, each with a listening socket of its own.

Every worker binds the port with ``SO_REUSEPORT``, so the kernel spreads new connections evenly over
the workers. (With one listening socket shared by all workers, as ``uvicorn --workers`` does, the
worker that happens to be on a core accepts a whole burst of connections: clients that keep their
connection open, as MCP clients do, then all talk to one worker while the others idle.) Each worker
builds its server from the server's own command line (``factory(argv)``) and serves it stateless;
they share one cursor key. The parent restarts a worker that dies and stops them all on SIGINT or
SIGTERM.
"""

from __future__ import annotations

import errno
import importlib
import json
import multiprocessing
import os
import secrets
import signal
import socket
import threading
import time

WORKER_ENV = "LEDGERBENCH_MCP_WORKER"
"""Environment variable that hands a worker process what to serve (JSON)."""
RESTART_PAUSE_S = 1.0
MAX_QUICK_DEATHS = 5
"""Deaths within a minute of their start after which the parent gives up (a broken server)."""


class WorkersFailed(RuntimeError):
    """The workers could not be started or kept running (the message says why)."""


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
    host: str, port: int, workers: int, factory: str, argv: list[str], hosts: list[str]
) -> int:
    """Run ``workers`` processes serving on ``host:port`` until SIGINT or SIGTERM."""
    from erp_mcp._cursors import CURSOR_SECRET_ENV

    try:  # fail in one line now if the port is taken, not once per worker
        tcp_listener(host, port, reuse_port=True).close()
    except OSError as error:
        reason = "is in use" if error.errno == errno.EADDRINUSE else f"cannot be bound ({error})"
        raise WorkersFailed(f"port {port} on {host} {reason}; pick another with --port") from None
    os.environ.setdefault(CURSOR_SECRET_ENV, secrets.token_urlsafe(32))
    os.environ[WORKER_ENV] = json.dumps({"factory": factory, "argv": argv, "hosts": hosts})
    context = multiprocessing.get_context("spawn")
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _SIGNALS}

    def start() -> tuple[multiprocessing.process.BaseProcess, float]:
        process = context.Process(target=_worker_main, args=(host, port), name="erp-worker")
        process.start()
        return process, time.monotonic()

    running = [start() for _ in range(workers)]
    quick_deaths: list[float] = []
    try:
        while not stop.wait(RESTART_PAUSE_S):
            for index, (process, started) in enumerate(running):
                if process.is_alive():
                    continue
                now = time.monotonic()
                if now - started < 60:
                    quick_deaths = [t for t in quick_deaths if now - t < 60] + [now]
                    if len(quick_deaths) >= MAX_QUICK_DEATHS:
                        raise WorkersFailed(
                            f"workers keep exiting at start (last exit code {process.exitcode}); "
                            "run with --workers 1 to see why"
                        )
                running[index] = start()
    finally:
        for process, _ in running:
            if process.is_alive():
                process.terminate()
        for process, _ in running:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _worker_main(host: str, port: int) -> None:  # runs in each worker process
    from ledgerbench_core._startup import die_with_parent, pause_collection, resume_collection

    die_with_parent()  # a supervisor killed with -9 leaves no worker serving its port
    pause_collection()  # until it listens, as a single server's start
    import uvicorn

    from erp_mcp._tooling import hand_the_interpreter_over_often

    hand_the_interpreter_over_often()

    # The app is built before the port is bound: the kernel hands connections only to workers
    # that listen, so none waits in a backlog while its worker still imports and builds (a
    # client's first calls timed out that way right after a start).
    app = worker_app()
    sock = tcp_listener(host, port, reuse_port=True)
    resume_collection()
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


def worker_app():
    """The ASGI app of one worker: the server built from the command line, served stateless."""
    from erp_mcp._serving import http_app

    spec = json.loads(os.environ[WORKER_ENV])
    module, _, function = spec["factory"].partition(":")
    server = getattr(importlib.import_module(module), function)(spec["argv"])
    return http_app(server, spec["hosts"], stateless=True)
