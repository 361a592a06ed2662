"""``python -m erp_mcp``: serve the ERP over stdio or HTTP, or print the tool catalogue."""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import math
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

from erp_mcp._middleware import MAX_LATENCY_MS, FaultConfig
from erp_mcp._tooling import TOOLSETS
from ledgerbench._cli import OneLineParser
from synthetic_erp._db import DEFAULT_DB_URL, ErpDatabaseError

SERVE_EXAMPLES = """\
examples:
  python -m erp_mcp --db sqlite:///erp.db                                  # stdio
  python -m erp_mcp --db sqlite:///erp.db --transport http --port 8765     # http://127.0.0.1:8765/mcp
  ERP_MCP_TOKEN=secret python -m erp_mcp --transport http                  # bearer auth
  python -m erp_mcp --transport http --error-rate 0.1 --fault-seed 7 --audit-log calls.jsonl
  python -m erp_mcp --transport http --host 0.0.0.0 --allowed-host erp.internal  # serve a name
  python -m erp_mcp tools --json                                           # tool catalogue
  ERP_MCP_TOKEN=secret python -m erp_mcp link http://127.0.0.1:8765/erp/USMF/customers/SYNCUS-0001
"""


class UsageError(Exception):
    """A bad command line: one line, exit code 2."""


def _serve_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m erp_mcp",
        description="Serve the synthetic ERP read-only over MCP (stdio or streamable HTTP). "
        "Subcommands: `tools [--json]` prints the tool catalogue; `link URL` prints a "
        "short-lived signed record link for a token-protected server.",
        epilog=SERVE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--db",
        default=os.environ.get("ERP_DB_URL", DEFAULT_DB_URL),
        help="ERP database URL, e.g. sqlite:///erp.db or postgresql://u:p@host/db "
        "(default: $ERP_DB_URL or sqlite:///erp.db)",
    )
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default) or http (streamable HTTP at /mcp plus record pages at /erp/...)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1, loopback)"
    )
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument(
        "--public-url",
        help="base URL of record links when behind a proxy, e.g. https://erp.example.org "
        "(default http://HOST:PORT over http; over stdio links are erp:// MCP resources unless "
        "this is given)",
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
        help="bearer token required on HTTP, e.g. --token s3cret (default: $ERP_MCP_TOKEN; "
        "unset = no auth)",
    )
    parser.add_argument(
        "--toolset",
        choices=TOOLSETS,
        default="all",
        help="finance (specialised tools), generic (entity-set data tools) or all (default)",
    )
    parser.add_argument(
        "--bench-tools",
        action="store_true",
        help="also expose the no-op `ping` tool (benchmark floor), e.g. --bench-tools",
    )
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
    return parser


def _tools_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m erp_mcp tools",
        description="Print the tool catalogue (no database needed).",
        epilog="examples:\n  python -m erp_mcp tools\n  python -m erp_mcp tools --json "
        "--toolset generic",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--json", action="store_true", help="names, descriptions and schemas as JSON"
    )
    parser.add_argument(
        "--toolset", choices=TOOLSETS, default="all", help="which toolset (default all)"
    )
    return parser


def _link_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m erp_mcp link",
        description="Print a short-lived signed link to one record page of a token-protected "
        "server, to open in a browser without the token (the token itself never goes in a URL). "
        "Use the server's token (--token or $ERP_MCP_TOKEN).",
        epilog="example:\n  ERP_MCP_TOKEN=s3cret python -m erp_mcp link "
        "http://127.0.0.1:8765/erp/USMF/customers/SYNCUS-0001 --ttl 600",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("url", help="a record link returned by a tool (http://.../erp/LE/set/key)")
    parser.add_argument(
        "--ttl", type=int, default=900, help="seconds the link works, 1-86400 (default 900)"
    )
    parser.add_argument("--token", help="the server's token (default: $ERP_MCP_TOKEN)")
    return parser


def _run_link(argv: list[str]) -> int:
    from erp_mcp._pages import MAX_LINK_TTL_S, signed_link
    from synthetic_erp._catalog import parse_record_url

    args = _link_parser().parse_args(argv)
    token = args.token or os.environ.get("ERP_MCP_TOKEN")
    if not token:
        raise UsageError("no token: pass --token or set ERP_MCP_TOKEN (the server's token)")
    if not args.url.startswith(("http://", "https://")) or parse_record_url(args.url) is None:
        raise UsageError(
            f"{args.url!r} is not a record link; give one like "
            "http://127.0.0.1:8765/erp/USMF/customers/SYNCUS-0001"
        )
    if not 1 <= args.ttl <= MAX_LINK_TTL_S:
        raise UsageError(f"--ttl must be 1-{MAX_LINK_TTL_S} seconds, got {args.ttl}")
    print(signed_link(args.url, token, args.ttl))
    return 0


def tool_catalog(toolset: str = "all") -> list[dict]:
    """The MCP tool list (name, description, inputSchema, outputSchema, annotations) as JSON."""
    from erp_mcp._server import build_server

    server = build_server("sqlite:///unused.db", toolset=toolset, check_database=False)

    async def listing():
        tools = await server.list_tools()
        return [
            t.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools
        ]

    return asyncio.run(listing())


def _run_tools(argv: list[str]) -> int:
    args = _tools_parser().parse_args(argv)
    catalog = tool_catalog(args.toolset)
    if args.json:
        print(json.dumps(catalog, indent=2))
    else:
        for tool in catalog:
            first = (tool.get("description") or "").split(". ")[0].replace("\n", " ")
            print(f"{tool['name']:32} {first}")
    return 0


def _faults(args: argparse.Namespace) -> FaultConfig:
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


def _public_url(args: argparse.Namespace) -> str:
    if args.public_url is None and args.transport == "stdio":
        from erp_mcp._runtime import RESOURCE_LINKS

        return RESOURCE_LINKS
    if args.public_url:
        parts = urlsplit(args.public_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(
                f"--public-url must be an http(s) URL like https://erp.example.org, "
                f"got {args.public_url!r}"
            )
        return args.public_url.rstrip("/")
    host = args.host if ":" not in args.host else f"[{args.host}]"
    return f"http://{host}:{args.port}"


def _check_database(db_url: str) -> None:
    """Read the snapshot facts now, so a bad database fails before serving, in one line."""
    from sqlalchemy.exc import SQLAlchemyError

    from synthetic_erp._db import open_engine, read_meta, redact_url

    engine = open_engine(db_url, read_only=True)
    try:
        meta = read_meta(engine)
    except SQLAlchemyError as error:
        reason = str(error.orig if hasattr(error, "orig") else error).splitlines()[0]
        raise ErpDatabaseError(
            f"cannot read an ERP at {redact_url(db_url)} ({reason}); create one with: "
            f"python -m synthetic_erp generate --db {redact_url(db_url)}"
        ) from None
    finally:
        engine.dispose()
    if "as_of" not in meta:
        raise ErpDatabaseError(
            f"{redact_url(db_url)} has no ERP snapshot facts (erp_meta.as_of); regenerate it with: "
            f"python -m synthetic_erp generate --db {redact_url(db_url)}"
        )


def _serve(argv: list[str]) -> int:
    args = _serve_parser().parse_args(argv)
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1-65535, got {args.port}")
    token = args.token or os.environ.get("ERP_MCP_TOKEN") or None
    from erp_mcp._security import normalize_host
    from erp_mcp._server import build_server, http_app

    for name in args.allowed_host:
        if normalize_host(name) is None:
            raise UsageError(
                f"--allowed-host {name!r} is not a host name; give a name like erp.internal"
            )
    extra_hosts = list(args.allowed_host)
    if args.public_url:
        extra_hosts.append(urlsplit(args.public_url).hostname or "")
    if args.host not in ("0.0.0.0", "::", ""):
        extra_hosts.append(args.host)  # an explicit bind address is reachable under its own name

    server = build_server(
        args.db,
        toolset=args.toolset,
        public_url=_public_url(args),
        faults=_faults(args),
        audit_log=args.audit_log,
        token=token,
        include_bench_tools=args.bench_tools,
    )
    _check_database(args.db)
    if args.transport == "stdio":
        server.run(transport="stdio", show_banner=False)
        return 0
    import uvicorn

    app = http_app(server, [h for h in extra_hosts if h])
    listening = _bind(args.host, args.port)  # ours before the line below says so
    print(_start_line(args, token), file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[listening])
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, or one line saying the address is taken and what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {host} is already in use (another erp_mcp?); stop that "
                "server or pass another --port"
            ) from None
        reason = error.strerror or error
        raise UsageError(f"cannot listen on {host}:{port} ({reason}); check --host") from None


def _start_line(args: argparse.Namespace, token: str | None) -> str:
    """Where the server is, how it is reached and how it is protected (never the token)."""
    host = args.host if ":" not in args.host else f"[{args.host}]"
    auth = "bearer token" if token else "none"
    links = _public_url(args)
    return (
        f"erp_mcp: serving MCP at http://{host}:{args.port}/mcp (transport: streamable HTTP; "
        f"auth: {auth}; record links: {links}/erp/...)"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m erp_mcp``; returns the exit code (2 on bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["tools"]:
            return _run_tools(argv[1:])
        if argv[:1] == ["link"]:
            return _run_link(argv[1:])
        return _serve(argv)
    except (UsageError, ErpDatabaseError) as error:
        print(f"erp_mcp: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a server stopped by Ctrl-C or SIGTERM ends quietly
        return 130
