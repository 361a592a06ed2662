"""``python -m ledgerbench.dataset``: validate and describe dataset files."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from ledgerbench_core.dataset._loader import check_dataset_path, dataset_hash
from ledgerbench_core.dataset._records import Dataset

_EPILOG = """\
examples:
  python -m ledgerbench.dataset validate datasets/obligations.yaml
  python -m ledgerbench.dataset validate ../shared/reference/force-bench/dataset.yaml
  python -m ledgerbench.dataset info datasets/
"""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2) instead of a usage dump."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m ledgerbench.dataset",
        description="Check and describe LedgerBench datasets (our YAML format, the published "
        "FORCE-Bench list format, or a directory of YAML files).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    validate = commands.add_parser(
        "validate",
        help="report every schema problem with item ids; exit 2 if there is any",
        description="Report every schema problem, each naming its item id. Exit 0 when the "
        "dataset is valid, 2 otherwise. Example: validate datasets/obligations.yaml",
    )
    validate.add_argument(
        "path", metavar="FILE", help="dataset YAML file or directory, e.g. datasets/"
    )
    info = commands.add_parser(
        "info",
        help="counts by task type, segment and scenario, and the dataset hash",
        description="Print item counts by task type, segment and scenario, the header and the "
        "dataset hash. Example: info datasets/obligations.yaml",
    )
    info.add_argument("path", metavar="FILE", help="dataset YAML file or directory, e.g. datasets/")
    _add_build_research(commands)
    return parser


def _add_build_research(commands: argparse._SubParsersAction) -> None:
    build = commands.add_parser(
        "build-research",
        help="write the real-company sets for live-web runs (datasets/web/)",
        description="Build the authored research and brief sets about real public companies "
        "(for runs with live web tools, paper-comparable) from their specifications in "
        "ledgerbench/dataset. Example: build-research --out datasets/web",
    )
    build.add_argument(
        "--out",
        default="datasets/web",
        help="directory to write the two files to (default: datasets/web)",
    )
    build.add_argument(
        "--db",
        default=None,
        help="ERP database whose customers/vendors ground the briefs' AR/AP section when a brief's "
        "company is one of them, e.g. sqlite:///erp.db (default: no grounding)",
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "build-research":
        return _build_research(args.out, args.db)
    dataset, problems = check_dataset_path(args.path)
    if args.command == "validate":
        return _report_validation(args.path, dataset, problems)
    if dataset is None or problems:
        first = problems[0] if problems else "no dataset found"
        print(f"error: {first} (run 'validate {args.path}' for every problem)", file=sys.stderr)
        return 2
    print(describe(dataset))
    return 0


def _report_validation(path: str, dataset: Dataset | None, problems: list[str]) -> int:
    if dataset is None and len(problems) == 1:  # nothing to validate (no such file): one line
        print(f"error: {problems[0]}", file=sys.stderr)
        return 2
    if problems:
        for problem in problems:
            print(problem)
        print(f"{path}: {len(problems)} problem(s)", file=sys.stderr)
        return 2
    assert dataset is not None
    print(f"{path}: valid, {len(dataset.items)} items, hash {dataset_hash(dataset)}")
    return 0


def describe(dataset: Dataset) -> str:
    """Human summary: header, counts by task type / segment / scenario, hash."""
    header = dataset.header
    lines = [
        f"name: {header.name}",
        f"items: {len(dataset.items)}",
        f"hash: {dataset_hash(dataset)}",
        f"erp_snapshot_hash: {header.erp_snapshot_hash}",
        f"generator_seed: {header.generator_seed}",
        f"rubric_version: {header.rubric_version}",
    ]
    for title, key in (
        ("task type", lambda q: q.task_type.value),
        ("segment", lambda q: f"{q.task_type.value} / {q.segment}"),
        ("scenario", lambda q: f"{q.task_type.value} / {q.scenario}"),
    ):
        counts = Counter(key(item) for item in dataset.items)
        lines.append(f"by {title}:")
        width = max(len(name) for name in counts)
        lines += [f"  {name:<{width}}  {count:>5}" for name, count in sorted(counts.items())]
    return "\n".join(lines)


def _build_research(out: str, db_url: str | None) -> int:
    from ledgerbench.dataset._research import build_research_sets
    from synthetic_erp._db import ErpDatabaseError

    try:
        paths = build_research_sets(out, db_url)
    except ErpDatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0
