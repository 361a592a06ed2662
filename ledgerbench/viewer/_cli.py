"""``ledgerbench view``: write the static viewer for one or more runs."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

EXAMPLES = """\
examples:
  ledgerbench view runs/scripted --out runs/viewer
  ledgerbench view runs/openai-gpt-5.2 runs/claude-haiku --out runs/viewer   # side by side
  ledgerbench view runs/A --out view --dataset datasets/obligations.yaml

Open DIR/index.html in a browser (file:// works; no network is used). A question's page is
DIR/index.html#/q/QUESTION_ID; the index takes filters in the address:
DIR/index.html#/?type=obligations&scenario=Aged+Balance&status=timeout&score=lt1
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not a usage dump
        self.exit(2, f"ledgerbench view: error: {message} (see ledgerbench view --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ledgerbench view",
        description="Write a self-contained HTML viewer of runs: an index of questions x runs "
        "(status, termination reason, latency, tool calls, scores; filterable) and, per question, "
        "the question, the reference answer, each run's answer, the conversation with its tool "
        "calls, and every judge verdict with its reason; the ERP records answers cite or tools "
        "showed are copied in, so their links open offline.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run directories")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write")
    parser.add_argument(
        "--dataset",
        type=Path,
        help="dataset YAML file or folder for question texts and reference answers (default: "
        "the one each run's manifest names)",
    )
    parser.add_argument(
        "--erp-db",
        metavar="URL",
        help="ERP database to copy the cited records from, e.g. sqlite:///erp.db (default: the "
        "one each run's manifest names); the copies open offline, any day later",
    )
    parser.add_argument(
        "--world-db",
        metavar="PATH",
        help="research-world file to copy the cited and fetched documents from, e.g. "
        ".ledgerbench/world.db (default: the one each run's manifest names)",
    )
    parser.add_argument("--title", help="page title (default: the run names)")
    parser.add_argument(
        "--max-output-chars",
        type=int,
        default=None,
        metavar="N",
        help="keep at most N characters of each tool output in the viewer (default: all the "
        "record holds); lowers the size of very large runs",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ledgerbench.viewer._build import ViewerError, build_viewer

    args = build_parser().parse_args(argv)
    if args.max_output_chars is not None and args.max_output_chars < 0:
        print("ledgerbench view: error: --max-output-chars must be 0 or more", file=sys.stderr)
        return 2
    console = Console(stderr=True)
    started = time.monotonic()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("viewer", total=None)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=stage, completed=done, total=total)

        try:
            page, warnings = build_viewer(
                args.runs,
                args.out,
                dataset=args.dataset,
                title=args.title,
                output_chars=args.max_output_chars,
                progress=report,
                erp_db=args.erp_db,
                world_db=args.world_db,
            )
        except ViewerError as error:
            print(f"ledgerbench view: error: {error}", file=sys.stderr)
            return 2
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    size = page.stat().st_size / 1e6
    print(f"Viewer: {page} ({size:.1f} MB, {time.monotonic() - started:.1f} s)")
    return 0
