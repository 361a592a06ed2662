"""``python -m ledgerbench.export RUN --format inspect --out FILE``: a run in another tool's format.

Inspect AI logs need the optional extra: ``pip install 'ledgerbench[inspect]'``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXAMPLES = """\
examples:
  python -m ledgerbench.export runs/scripted --format inspect --out logs/scripted.eval
  python -m ledgerbench.export runs/openai-gpt-5.2 --format inspect --out logs/gpt.json   # JSON log
  inspect view --log-dir logs                                  # browse it in Inspect's viewer

One run becomes one Inspect evaluation log: a sample per question and trial with the question, the
reference answer as target, the conversation, one model event per model call and one tool event per
tool call, a score per judge (overall and per dimension, assertion reasons as the explanation),
token usage and timings (total and working time). Needs: pip install 'ledgerbench[inspect]'.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        self.exit(
            2, f"ledgerbench.export: error: {message} (see python -m ledgerbench.export --help)\n"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m ledgerbench.export",
        description="Write a LedgerBench run in another evaluation tool's log format.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=Path, metavar="RUN", help="run directory (runs/NAME)")
    parser.add_argument("--format", choices=["inspect"], required=True, help="log format")
    parser.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="log file: .eval (default) or .json"
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        help="dataset YAML file or folder for targets (default: the run manifest's)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from ledgerbench._inspect_log import ExportError, export_inspect

    args = build_parser().parse_args(argv)
    if args.out.exists() and args.out.is_dir():
        print(
            f"ledgerbench.export: error: --out {args.out} is a directory; pass a file name "
            "ending in .eval or .json",
            file=sys.stderr,
        )
        return 2
    try:
        path, samples = export_inspect(args.run, args.out, args.dataset)
    except ExportError as error:
        print(f"ledgerbench.export: error: {error}", file=sys.stderr)
        return 2
    print(
        f"Inspect log: {path} ({samples} samples); "
        f"view it with: inspect view --log-dir {path.parent}"
    )
    return 0


if __name__ == "__main__":
    from ledgerbench_core._cli import run_cli

    raise SystemExit(run_cli(main, "ledgerbench.export"))
