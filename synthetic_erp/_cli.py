"""``python -m synthetic_erp``: generate, inspect and import ERP databases."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import sys
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from synthetic_erp._db import DEFAULT_DB_URL, ErpDatabaseError, redact_url

PROGRESS_THRESHOLD = 10_000
"""Parties from which ``generate`` shows a progress bar."""

EXAMPLES = """examples:
  python -m synthetic_erp generate                                  # sqlite:///erp.db, 1x, seed 42
  python -m synthetic_erp generate --scale 10 --db sqlite:///erp10.db --overwrite
  python -m synthetic_erp generate --db postgresql://user:pw@localhost:5432/erp
  python -m synthetic_erp stats --db sqlite:///erp.db --json
  python -m synthetic_erp summarize --db sqlite:///old.db          # add the summary tables
  python -m synthetic_erp import-fno ../shared/reference/fno --db sqlite:///fno.db
  python -m synthetic_erp questions --help
"""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit code 2) instead of usage dumps."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _positive_scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"must be > 0 and <= 100, got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text}")
    return value


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date like 2026-03-02, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m synthetic_erp",
        description="Build, inspect and import the synthetic AR/AP ERP.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    db_help = "SQLAlchemy URL of the database (default %(default)s), e.g. sqlite:///erp.db or "
    db_help += "postgresql://user:pw@host:5432/erp"

    gen = commands.add_parser(
        "generate",
        help="generate a deterministic synthetic ERP",
        description="Generate a synthetic ERP; the same seed and scale give the same snapshot.",
        epilog="example: python -m synthetic_erp generate --scale 10 --db sqlite:///erp10.db",
    )
    gen.add_argument("--db", default=DEFAULT_DB_URL, help=db_help)
    gen.add_argument(
        "--customers",
        type=_positive_int,
        default=1000,
        help="customers at scale 1 (default %(default)s), e.g. --customers 150",
    )
    gen.add_argument(
        "--vendors",
        type=_positive_int,
        default=1000,
        help="vendors at scale 1 (default %(default)s), e.g. --vendors 150",
    )
    gen.add_argument(
        "--seed", type=int, default=42, help="random seed (default %(default)s), e.g. --seed 7"
    )
    gen.add_argument(
        "--scale",
        type=_positive_scale,
        default=None,
        help="multiplier of customers and vendors, up to 100, e.g. --scale 10",
    )
    gen.add_argument(
        "--as-of",
        type=_date,
        default=dt.date(2026, 3, 2),
        help="the ERP's frozen today (default %(default)s), e.g. --as-of 2026-03-02",
    )
    gen.add_argument(
        "--overwrite", action="store_true", help="replace an existing database at --db"
    )
    gen.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    gen.set_defaults(func=_generate)  # fmt: skip

    stats = commands.add_parser(
        "stats",
        help="print row counts, as_of and snapshot hash",
        epilog="example: python -m synthetic_erp stats --db sqlite:///erp.db --json",
    )
    stats.add_argument("--db", default=DEFAULT_DB_URL, help=db_help)
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(func=_stats)

    summ = commands.add_parser(
        "summarize",
        help="add (or rebuild) the summary tables and missing indexes of an existing ERP",
        description="Write the summary tables the MCP server's aggregates read (an ERP generated "
        "by older code has none; the server then reads the raw tables), and create any index of "
        "today's schema the ERP lacks. The raw tables and the snapshot hash are unchanged.",
        epilog="example: python -m synthetic_erp summarize --db sqlite:///erp.db",
    )
    summ.add_argument("--db", default=DEFAULT_DB_URL, help=db_help)
    summ.set_defaults(func=_summarize)

    fno = commands.add_parser(
        "import-fno",
        help="load the published FORCE-Bench FnO files into the ERP schema",
        epilog="example: python -m synthetic_erp import-fno ../shared/reference/fno --db "
        "sqlite:///fno.db",
    )
    fno.add_argument(
        "directory",
        type=Path,
        help="folder with customers.csv, vendors.csv, ar_journal.xlsx, ap_journal.xlsx",
    )
    fno.add_argument("--db", default=DEFAULT_DB_URL, help=db_help)
    fno.add_argument(
        "--overwrite", action="store_true", help="replace an existing database at --db"
    )
    fno.set_defaults(func=_import_fno)  # fmt: skip

    commands.add_parser(
        "questions",
        help="build the obligation questions and answer keys (see: questions --help)",
        add_help=False,
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "questions":
        return _questions(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ErpDatabaseError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        hint = "check that --db points at a running server and an ERP built by this tool"
        print(f"error: cannot use {redact_url(args.db)}: {reason}; {hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        from ledgerbench_core._cli import quiet_stop

        if not quiet_stop():
            print("error: interrupted; nothing was written", file=sys.stderr)
        return 130


def _generate(args: argparse.Namespace) -> int:
    from synthetic_erp._generate import generate_erp

    parties = (args.customers + args.vendors) * (args.scale or 1.0)
    report = generate_erp(
        args.db,
        customers=args.customers,
        vendors=args.vendors,
        seed=args.seed,
        as_of=args.as_of,
        overwrite=args.overwrite,
        scale=args.scale,
        progress=not args.quiet and parties >= PROGRESS_THRESHOLD,
    )
    if not args.quiet:
        counts = report.row_counts
        print(
            f"generated {report.db_url}: {report.customers} customers, {report.vendors} vendors, "
            f"{counts['customer_transaction']} AR and {counts['vendor_transaction']} AP "
            f"transactions, as of {report.as_of}, snapshot {report.snapshot_hash[:12]}, "
            f"{report.seconds:.1f} s"
        )
    return 0


def _stats(args: argparse.Namespace) -> int:
    from synthetic_erp._snapshot import erp_stats

    stats = erp_stats(args.db)
    if args.json:
        print(json.dumps(stats, default=str))
    else:
        width = max(len(key) for key in stats)
        for key, value in stats.items():
            shown = f"{value:,}" if isinstance(value, int) else value
            print(f"{key:<{width}}  {shown}")
    return 0


def _summarize(args: argparse.Namespace) -> int:
    from synthetic_erp._summaries import summarize

    report = summarize(args.db)
    shown = ", ".join(f"{name} {count:,}" for name, count in report.rows.items())
    print(f"summarised {redact_url(args.db)}: {shown}")
    if report.indexes_added:
        print(f"indexes added (the ERP was built by older code): {', '.join(report.indexes_added)}")
    return 0


def _import_fno(args: argparse.Namespace) -> int:
    from synthetic_erp._fno import import_fno

    report = import_fno(args.directory, args.db, overwrite=args.overwrite)
    counts = report.row_counts
    print(
        f"imported {args.directory} into {report.db_url}: {counts['customer']} customers, "
        f"{counts['vendor']} vendors, {counts['customer_transaction']} AR and "
        f"{counts['vendor_transaction']} AP lines, snapshot {report.snapshot_hash[:12]}"
    )
    return 0


def _questions(argv: list[str]) -> int:
    try:
        module = importlib.import_module("synthetic_erp._questions")
    except ModuleNotFoundError as error:
        if error.name != "synthetic_erp._questions":
            raise
        print("error: the questions command is not available (synthetic_erp/_questions.py "
              "is missing)", file=sys.stderr)  # fmt: skip
        return 2
    return int(module.main(argv) or 0)
