"""``python -m synthetic_world``: generate a research world, describe it, key questions on it, or
serve it over MCP."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

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
from synthetic_world._runtime import WorldUnavailable

DEFAULT_WORLD_URL = "sqlite:///world.db"
TOKEN_ENV = "WORLD_MCP_TOKEN"
"""Where the server reads its bearer token when --token is not given."""

EXAMPLES = """\
examples:
  python -m synthetic_erp generate --db sqlite:///erp.db
  python -m synthetic_world generate --erp-db sqlite:///erp.db --db sqlite:///world.db
  python -m synthetic_world info --db sqlite:///world.db
  python -m synthetic_world questions --db sqlite:///world.db --erp-db sqlite:///erp.db \\
      --task-type entity_performance --n 126 --out entity.yaml
  python -m synthetic_world serve --db sqlite:///world.db --transport http --port 8766
"""


def world_path(url: str) -> Path:
    """The file of a ``sqlite:///`` world URL (a plain path works too)."""
    if url.startswith("sqlite:///"):
        return Path(url.removeprefix("sqlite:///"))
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise UsageError(
            f"unsupported world database URL scheme {scheme!r}: a world is one SQLite file "
            "(its FTS5 index is SQLite's); give sqlite:///world.db"
        )
    return Path(url)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; ``command``: only that command's options are built (a server's start
    then imports neither the world generator nor question generation), None: every command's."""
    parser = argparse.ArgumentParser(
        prog="python -m synthetic_world",
        description="The research world beside the synthetic ERP: companies (most of them the "
        "ERP's customers and vendors), their filings, news, analyst notes, funding "
        "announcements, profiles, data-vendor tables and prices, generated from a fact ledger, "
        "with keyed research questions and an MCP server (search, fetch, company, prices).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        if command in (None, name):
            add(sub)
    return parser


def _add_generate(sub: argparse._SubParsersAction) -> None:
    from synthetic_erp._db import DEFAULT_DB_URL
    from synthetic_world._generate import MAX_SCALE

    gen = sub.add_parser(
        "generate",
        help="generate a world from an ERP (same seeds, same pair)",
        description="Generate the research world of an ERP into one SQLite file. The same ERP "
        "and seed give a byte-identical file.",
        epilog="example: python -m synthetic_world generate --erp-db sqlite:///erp.db "
        "--db sqlite:///world.db --seed 42",
    )
    gen.add_argument(
        "--erp-db",
        default=os.environ.get("ERP_DB_URL", DEFAULT_DB_URL),
        help="the ERP the world is joined to (default: $ERP_DB_URL or sqlite:///erp.db)",
    )
    gen.add_argument(
        "--db", default=DEFAULT_WORLD_URL, help="world file to write (default sqlite:///world.db)"
    )
    gen.add_argument("--seed", type=int, default=42, help="random seed (default 42), e.g. 7")
    gen.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help=f"multiplier of the number of companies, above 0 up to {MAX_SCALE:g} (default 1: "
        "250 notable companies, 250 peers and decoys), e.g. 0.1 for a quick test world",
    )
    gen.add_argument("--overwrite", action="store_true", help="replace an existing world file")
    gen.add_argument("--quiet", action="store_true", help="no progress and no summary")


def _add_info(sub: argparse._SubParsersAction) -> None:
    info = sub.add_parser(
        "info",
        help="print a world's size, today, id and snapshot hash",
        description="Print a world's facts (one JSON object with --json).",
        epilog="example: python -m synthetic_world info --db sqlite:///world.db --json",
    )
    info.add_argument("--db", default=DEFAULT_WORLD_URL, help="world file (default world.db)")
    info.add_argument("--json", action="store_true", help="as JSON")


def _add_serve(sub: argparse._SubParsersAction) -> None:
    srv = sub.add_parser(
        "serve",
        help="serve the world read-only over MCP (stdio or HTTP)",
        description="Serve the world's research tools (world_info, search, fetch, company, "
        "prices) over MCP, plus document pages at /{world_id}/docs/{doc_id} over HTTP.",
        epilog="examples:\n  python -m synthetic_world serve --db sqlite:///world.db\n"
        "  python -m synthetic_world serve --transport http --port 8766 --token s3cret",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    srv.add_argument("--db", default=DEFAULT_WORLD_URL, help="world file (default world.db)")
    add_http_arguments(
        srv,
        default_port=8766,
        token_env="WORLD_MCP_TOKEN",
        link_example="http://127.0.0.1:8766 to make links open on this server",
        default_links="default https://world.ledgerbench.test: the same links in every run; "
        "the server resolves their path",
    )
    srv.add_argument("--bench-tools", action="store_true", help="also expose the no-op `ping` tool")
    add_scaling_arguments(srv)
    add_fault_arguments(srv)


def _add_questions(sub: argparse._SubParsersAction) -> None:
    from synthetic_world._questions import add_questions_parser

    add_questions_parser(sub)


COMMANDS = {
    "generate": _add_generate,
    "info": _add_info,
    "serve": _add_serve,
    "questions": _add_questions,
}
"""Each command and what adds its options (``python -m synthetic_world --help`` lists them in
this order)."""


def _generate(args: argparse.Namespace) -> int:
    from synthetic_world._generate import generate_world

    path = world_path(args.db)
    say = (lambda _m: None) if args.quiet else (lambda m: print(f"  {m}", file=sys.stderr))
    report = generate_world(
        args.erp_db, path, seed=args.seed, scale=args.scale, overwrite=args.overwrite, progress=say
    )
    if not args.quiet:
        print(
            f"world {report.world_id} in {report.path}: {report.companies} companies "
            f"({report.listed} listed), {report.documents:,} documents, {report.facts:,} facts, "
            f"{report.events:,} events, {report.prices:,} prices; today {report.today}; "
            f"snapshot {report.snapshot_hash[:16]}; {report.seconds:.1f} s"
        )
    return 0


def _info(args: argparse.Namespace) -> int:
    from synthetic_world._runtime import connect_read_only

    conn = connect_read_only(world_path(args.db))
    try:
        meta = dict(conn.execute("SELECT key, value FROM world_meta"))
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("company", "document", "fact", "event", "price")
        }
        kinds = dict(conn.execute("SELECT source_type, count(*) FROM document GROUP BY 1"))
    finally:
        conn.close()
    facts = {**meta, "counts": counts, "documents_by_type": kinds}
    if args.json:
        print(json.dumps(facts, indent=2, sort_keys=True))
    else:
        print(
            f"world {meta['world_id']} (seed {meta['seed']}, scale {meta['scale']}), today "
            f"{meta['as_of']}, snapshot {meta['snapshot_hash']}"
        )
        print("  " + ", ".join(f"{n:,} {t}" for t, n in counts.items()))
        print("  documents: " + ", ".join(f"{n:,} {k}" for k, n in sorted(kinds.items())))
    return 0


def _build_server(args: argparse.Namespace):
    from synthetic_world._server import build_world_server

    return build_world_server(
        world_path(args.db),
        link_base=link_base(args, None) if args.public_url else None,
        faults=fault_config(args),
        audit_log=args.audit_log,
        token=server_token(args, TOKEN_ENV),
        include_bench_tools=args.bench_tools,
    )


def worker_server(argv: list[str]):
    """The server of one ``--workers`` process, built from the same ``serve`` command line."""
    return _build_server(_parser("serve").parse_args(argv))


def _serve(args: argparse.Namespace, argv: list[str]) -> int:
    return serve_command(
        args,
        argv,
        build=lambda: _build_server(args),
        building="loading the world",
        worker_factory=f"{__name__}:worker_server",
        start_line=_start_line(args),
    )


def _start_line(args: argparse.Namespace) -> str:
    """Where the server is, how it is protected (never the token), which world and its faults."""
    auth = "bearer token" if server_token(args, TOKEN_ENV) else "none"
    faults = f"; faults: {args.error_rate:g} of tool calls" if args.error_rate else ""
    return (
        f"synthetic_world: serving MCP at http://{url_host(args.host)}:{args.port}/mcp "
        f"(transport: streamable HTTP; auth: {auth}; world: {world_path(args.db)}{faults})"
    )


def _bad_input() -> tuple[type[Exception], ...]:
    """The errors that are bad input (exit 2). Looked up only when an error reaches ``main``:
    the generator's module, which defines ``WorldError``, is not part of a server's start."""
    from synthetic_erp._db import ErpDatabaseError
    from synthetic_world._generate import WorldError

    return (UsageError, WorldError, WorldUnavailable, ErpDatabaseError)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m synthetic_world``; returns the exit code (2 on bad input, 3 when
    a --workers worker died before it listened)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    args = _parser(command).parse_args(argv)
    try:
        if args.command == "generate":
            return _generate(args)
        if args.command == "info":
            return _info(args)
        if args.command == "serve":
            return _serve(args, argv)
        from synthetic_world._questions import run_questions

        return run_questions(args)
    except _bad_input() as error:
        print(f"synthetic_world: error: {error}", file=sys.stderr)
        return 2
    except ServerFailed as error:
        print(f"synthetic_world: error: {error}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("synthetic_world: interrupted; nothing was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
