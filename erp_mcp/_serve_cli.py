"""Command-line pieces every LedgerBench MCP server shares: HTTP, auth and fault flags, and serving.

``python -m erp_mcp`` and ``python -m synthetic_world serve`` build their parsers from these, so a
flag means the same on both servers and is checked the same way (one line, exit code 2).
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from erp_mcp._workers import tcp_listener

if TYPE_CHECKING:
    from erp_mcp._middleware import FaultConfig


class UsageError(Exception):
    """A bad command line: one line, exit code 2."""


class ServerFailed(Exception):
    """A server that could not start or keep serving for a reason outside its command line (a
    worker died before it listened): one line, exit code 3."""


def add_http_arguments(
    parser: argparse.ArgumentParser,
    *,
    default_port: int,
    token_env: str,
    link_example: str,
    default_links: str,
) -> None:
    """--transport, --host, --port, --public-url, --allowed-host and --token."""
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default) or http (streamable HTTP at /mcp plus the pages of its records)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1, loopback)"
    )
    parser.add_argument(
        "--port", type=int, default=default_port, help=f"HTTP port (default {default_port})"
    )
    parser.add_argument(
        "--public-url",
        help=f"base URL of the links in results, e.g. {link_example} ({default_links})",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name (besides localhost, 127.0.0.1, ::1) that requests may name in Host and "
        "Origin, repeatable, e.g. --allowed-host erp.internal (others get 421 / 403)",
    )
    parser.add_argument(
        "--token",
        help=f"bearer token required on HTTP, e.g. --token s3cret (default: ${token_env}; "
        "unset = no auth)",
    )


MAX_WORKERS = 64


def add_scaling_arguments(parser: argparse.ArgumentParser) -> None:
    """--workers and --stateless (HTTP only)."""
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="HTTP: serve with N processes sharing the port, e.g. --workers 2 (default 1); more "
        "than one implies --stateless, so any worker answers any request",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="HTTP: stateless streamable HTTP (no MCP session: every request stands alone), as "
        "replicas behind a load balancer need; implied by --workers 2 or more",
    )


def add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    """--latency-ms, --jitter-ms, --error-rate, --fault-seed and --audit-log."""
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="inject latency per valid tool call, 0-600000, e.g. 200",
    )
    parser.add_argument(
        "--jitter-ms", type=float, default=0.0, help="extra random latency 0..N ms, e.g. 50"
    )
    parser.add_argument(
        "--error-rate",
        type=float,
        default=0.0,
        help="share of valid tool calls failing with a TRANSIENT ERROR, 0-1, e.g. 0.05",
    )
    parser.add_argument(
        "--fault-seed",
        type=int,
        default=0,
        help="seed of the injected faults, e.g. 7; each draw is keyed by the seed, the "
        "X-LedgerBench-Trial header, the call and its repeat count, so a run replays",
    )
    parser.add_argument(
        "--audit-log",
        type=Path,
        help="append one JSON line per tool call to this file, e.g. runs/calls.jsonl",
    )


def fault_config(args: argparse.Namespace) -> FaultConfig:
    """The fault flags as a checked :class:`FaultConfig` (a UsageError names a bad one)."""
    from erp_mcp._middleware import MAX_LATENCY_MS, FaultConfig

    if not (math.isfinite(args.error_rate) and 0 <= args.error_rate <= 1):
        raise UsageError(f"--error-rate must be between 0 and 1, got {args.error_rate}")
    for flag, value in (("--latency-ms", args.latency_ms), ("--jitter-ms", args.jitter_ms)):
        if not (math.isfinite(value) and 0 <= value <= MAX_LATENCY_MS):
            raise UsageError(
                f"{flag} must be a finite number of milliseconds from 0 to {MAX_LATENCY_MS:.0f}, "
                f"got {value}"
            )
    return FaultConfig(
        latency_ms=args.latency_ms,
        jitter_ms=args.jitter_ms,
        error_rate=args.error_rate,
        seed=args.fault_seed,
    )


def check_port(args: argparse.Namespace) -> None:
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1-65535, got {args.port}")


def link_base(args: argparse.Namespace, stdio_default: str | None) -> str | None:
    """The base of the links a server puts in its results: ``--public-url``, else
    ``stdio_default`` over stdio (None: the server's own default), else the HTTP address."""
    if args.public_url is None and args.transport == "stdio":
        return stdio_default
    if args.public_url:
        parts = urlsplit(args.public_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(
                f"--public-url must be an http(s) URL like https://erp.example.org, "
                f"got {args.public_url!r}"
            )
        return args.public_url.rstrip("/")
    return f"http://{url_host(args.host)}:{args.port}"


def url_host(host: str) -> str:
    """``host`` as it stands in a URL: an IPv6 address in brackets."""
    return host if ":" not in host else f"[{host}]"


def server_token(args: argparse.Namespace, env: str) -> str | None:
    """The server's bearer token: ``--token``, else the environment variable ``env``; None: no
    auth."""
    return args.token or os.environ.get(env) or None


def allowed_hosts(args: argparse.Namespace) -> list[str]:
    """The host names requests may name besides loopback: --allowed-host, the public URL's host
    and an explicit bind address (reachable under its own name)."""
    from erp_mcp._security import normalize_host

    for name in args.allowed_host:
        if normalize_host(name) is None:
            raise UsageError(
                f"--allowed-host {name!r} is not a host name; give a name like erp.internal"
            )
    hosts = list(args.allowed_host)
    if args.public_url:
        hosts.append(urlsplit(args.public_url).hostname or "")
    if args.host not in ("0.0.0.0", "::", ""):
        hosts.append(args.host)
    return [h for h in hosts if h]


def check_scaling(args: argparse.Namespace) -> None:
    """--workers and --stateless are for HTTP; several workers cannot replay seeded faults."""
    workers = getattr(args, "workers", 1)
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be 1-{MAX_WORKERS}, got {workers}")
    if (workers > 1 or getattr(args, "stateless", False)) and args.transport != "http":
        raise UsageError("--workers and --stateless serve HTTP; add --transport http")
    if workers > 1 and (getattr(args, "error_rate", 0) or getattr(args, "jitter_ms", 0)):
        raise UsageError(
            "--error-rate and --jitter-ms draw faults from how often each process saw a call, "
            "so with --workers they would not replay; use --workers 1 for fault runs"
        )


def serve_command(
    args: argparse.Namespace,
    argv: list[str],
    *,
    build: Callable[[], object],
    building: str,
    worker_factory: str,
    start_line: str,
    check: Callable[[], None] | None = None,
    checking: str = "",
) -> int:
    """A server's ``serve`` command: check the command line (port, scaling, host names) before
    any work, build the server (``building`` names the step), run ``check`` if given (its step
    ``checking``), then :func:`serve` it."""
    from ledgerbench_core._startup import report_step

    check_port(args)
    check_scaling(args)
    hosts = allowed_hosts(args)
    handed_over = handed_over_listener(args)
    report_step(building)
    server = build()
    if check is not None:
        report_step(checking)
        check()
    return serve(
        server,
        args,
        hosts,
        worker_factory=worker_factory,
        argv=argv,
        start_line=start_line,
        handed_over=handed_over,
    )


def handed_over_listener(args: argparse.Namespace) -> socket.socket | None:
    """The listening socket the starter bound for this server (``LEDGERBENCH_LISTEN_FD``), checked
    against ``--port``, or None; a UsageError when it is not one or is on another port."""
    from ledgerbench_core._startup import inherited_listener

    try:
        listening = inherited_listener()
    except ValueError as error:
        raise UsageError(str(error)) from None
    if listening is None or args.transport != "http":
        return listening
    return _checked_handover(listening, args.port)


def serve(
    server,
    args: argparse.Namespace,
    hosts: list[str],
    *,
    worker_factory: str | None = None,
    argv: list[str] | None = None,
    start_line: str | None = None,
    handed_over: socket.socket | None = None,
) -> int:
    """Run ``server`` over the transport ``args`` names until stopped; over HTTP the port is
    bound first (a taken one is a UsageError), or ``handed_over`` (the starter bound it), then
    ``start_line`` goes to stderr.

    With ``--workers N`` (N > 1) N processes serve the port (:mod:`erp_mcp._workers`); each builds
    its own server with ``worker_factory`` (``"module:function"``, called with ``argv``, the
    server's command line) and serves it stateless. They share one cursor key, so a cursor from
    one worker works on another."""
    from erp_mcp._tooling import hand_the_interpreter_over_often
    from ledgerbench_core._startup import (
        LISTENING,
        done_reporting,
        report_step,
        resume_collection,
    )

    check_scaling(args)
    hand_the_interpreter_over_often()
    if args.transport == "stdio":
        resume_collection()
        server.run(transport="stdio", show_banner=False)
        return 0
    import uvicorn

    from erp_mcp._serving import http_app

    workers = getattr(args, "workers", 1)
    report_step("binding the port" if workers == 1 else f"starting {workers} workers")
    if workers > 1:
        return _serve_with_workers(args, hosts, worker_factory, argv, start_line, handed_over)
    app = http_app(server, hosts, stateless=getattr(args, "stateless", False))
    # ours before the start line says so
    listening = handed_over if handed_over is not None else bind(args.host, args.port)
    report_step(LISTENING)
    done_reporting()
    resume_collection()
    if start_line:
        print(start_line, file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[listening])
    return 0


def _serve_with_workers(
    args: argparse.Namespace,
    hosts: list[str],
    worker_factory: str | None,
    argv: list[str] | None,
    start_line: str | None,
    handed_over: socket.socket | None,
) -> int:
    """:func:`serve` with ``--workers N``: the start line (and the ``listening`` step) come once
    every worker accepts connections, so a client that waits for either reaches a worker."""
    from erp_mcp._workers import WorkersFailed, serve_workers
    from ledgerbench_core._startup import LISTENING, done_reporting, report_step, resume_collection

    if worker_factory is None:
        raise UsageError("this server cannot run --workers; serve it with --workers 1")
    if handed_over is not None:  # each worker binds the port itself (SO_REUSEPORT)
        handed_over.close()
    # A taken port: one line, not one per worker. Bound without SO_REUSEPORT, so the port of
    # another --workers server is taken too (its workers' group would let ours join it).
    bind(args.host, args.port).close()
    resume_collection()

    def listening() -> None:
        report_step(LISTENING)
        done_reporting()
        if start_line:
            print(f"{start_line} with {args.workers} workers", file=sys.stderr, flush=True)

    try:
        return serve_workers(
            args.host,
            args.port,
            args.workers,
            worker_factory,
            list(argv or []),
            hosts,
            report=report_step,
            on_listening=listening,
        )
    except WorkersFailed as error:
        raise ServerFailed(str(error)) from None
    finally:
        done_reporting()


def _checked_handover(listening: socket.socket, port: int) -> socket.socket:
    """The socket the starter bound for this server, if it is on ``port`` as the command line
    says (else a UsageError: the starter and the command line disagree)."""
    bound = listening.getsockname()[1]
    if bound != port:
        listening.close()
        raise UsageError(
            f"the socket handed over in LEDGERBENCH_LISTEN_FD listens on port {bound}, not on "
            f"--port {port}; pass --port {bound} or start the server without that variable"
        )
    return listening


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, or a UsageError saying the address is taken and what to do."""
    try:
        return tcp_listener(host, port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {host} is already in use (another server?); stop that "
                "server or pass another --port"
            ) from None
        reason = error.strerror or error
        raise UsageError(f"cannot listen on {host}:{port} ({reason}); check --host") from None
