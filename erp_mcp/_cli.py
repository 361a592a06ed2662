"""``python -m erp_mcp``: serve the ERP over stdio or HTTP, or print the tool catalogue."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from erp_mcp._serve_cli import (
    ServerFailed,
    UsageError,
    add_fault_arguments,
    add_http_arguments,
    add_scaling_arguments,
    fault_config,
    link_base,
    serve_command,
    server_token,
    url_host,
)
from erp_mcp._tooling import TOOLSETS
from ledgerbench_core._cli import OneLineParser
from synthetic_erp._db import DEFAULT_DB_URL, ErpDatabaseError

TOKEN_ENV = "ERP_MCP_TOKEN"
"""Where the server reads its bearer token when --token is not given."""

SERVE_EXAMPLES = """\
examples:
  python -m erp_mcp --db sqlite:///erp.db                                  # stdio
  python -m erp_mcp --db sqlite:///erp.db --transport http --port 8765     # http://127.0.0.1:8765/mcp
  ERP_MCP_TOKEN=secret python -m erp_mcp --transport http                  # bearer auth
  python -m erp_mcp --transport http --error-rate 0.1 --fault-seed 7 --audit-log calls.jsonl
  python -m erp_mcp --transport http --host 0.0.0.0 --allowed-host erp.internal  # serve a name
  python -m erp_mcp --db postgresql://erp@db/erp --transport http --workers 2    # 2 processes
  python -m erp_mcp tools --json                                           # tool catalogue
  ERP_MCP_TOKEN=secret python -m erp_mcp link http://127.0.0.1:8765/erp/USMF/customers/SYNCUS-0001
"""


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
    add_http_arguments(
        parser,
        default_port=8765,
        token_env="ERP_MCP_TOKEN",
        link_example="https://erp.example.org behind a proxy",
        default_links="default http://HOST:PORT over http; over stdio links are erp:// MCP "
        "resources unless this is given",
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
    add_scaling_arguments(parser)
    add_fault_arguments(parser)
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


def _build(args: argparse.Namespace):
    from erp_mcp._runtime import RESOURCE_LINKS
    from erp_mcp._server import build_server

    return build_server(
        args.db,
        toolset=args.toolset,
        public_url=link_base(args, RESOURCE_LINKS),
        faults=fault_config(args),
        audit_log=args.audit_log,
        token=server_token(args, TOKEN_ENV),
        include_bench_tools=args.bench_tools,
    )


def worker_server(argv: list[str]):
    """The server of one ``--workers`` process, built from the same command line."""
    return _build(_serve_parser().parse_args(argv))


def _serve(argv: list[str]) -> int:
    args = _serve_parser().parse_args(argv)
    return serve_command(
        args,
        argv,
        build=lambda: _build(args),
        building="building the tools",
        check=lambda: _check_database(args.db),
        checking="opening the database",
        worker_factory=f"{__name__}:worker_server",
        start_line=_start_line(args, server_token(args, TOKEN_ENV)),
    )


def _start_line(args: argparse.Namespace, token: str | None) -> str:
    """Where the server is, how it is reached and how it is protected (never the token)."""
    auth = "bearer token" if token else "none"
    links = link_base(args, None)
    return (
        f"erp_mcp: serving MCP at http://{url_host(args.host)}:{args.port}/mcp (transport: "
        f"streamable HTTP; auth: {auth}; record links: {links}/erp/...)"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m erp_mcp``; returns the exit code (2 on bad input, 3 when a
    worker died before it listened)."""
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
    except ServerFailed as error:
        print(f"erp_mcp: error: {error}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:  # a server stopped by Ctrl-C or SIGTERM ends quietly
        return 130
