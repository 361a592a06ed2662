"""``python -m judge.human export|import``: people as judges, through a blinded grading packet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ledgerbench_core._cli import OneLineParser

EXAMPLES = """\
examples:
  python -m judge.human export runs/gpt runs/claude --n 40 --seed 1 --out packets/p1
  # graders open packets/p1/packet.html offline, grade, press "Save grades" (or fill sheet.csv)
  python -m judge.human import ~/Downloads/grades-3f2a9c.json --as human-alice \
      --key packets/p1/key.json
  python -m judge.human import packets/p1/sheet.csv --as human-bob
  python -m judge.compare runs/gpt runs/claude --judges openai-gpt-5.2 human-alice human-bob
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m judge.human",
        description="People as judges. export writes a blinded grading packet (answers of all "
        "runs shuffled, agents hidden): packet.html (a self-contained form that works offline "
        "and saves grades as a JSON file), sheet.csv (the same sheet for spreadsheets) and "
        "key.json (for unblinding; keep it beside the packet, do not send it to graders). "
        "import checks a grades file and writes runs/NAME/scores/human-NAME.jsonl into each run.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser(
        "export",
        help="write a blinded grading packet",
        description="Sample answers of the runs, shuffle and blind them, write packet.html, "
        "sheet.csv and key.json into --out.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument("runs", nargs="+", type=Path, help="run directories, e.g. runs/gpt")
    export.add_argument(
        "--n", type=int, default=40, help="answers in the packet (default 40), e.g. --n 60"
    )
    export.add_argument("--seed", type=int, default=1, help="sampling seed (default 1)")
    export.add_argument(
        "--out", type=Path, required=True, help="new packet directory, e.g. packets/p1"
    )
    imported = commands.add_parser(
        "import",
        help="import a grades file as a judge",
        description="Check a grades file (JSON saved by packet.html, or the filled sheet.csv) and "
        "write runs/NAME/scores/<--as>.jsonl in the scores format into every run it grades. A bad "
        "row (unknown item or assertion, grade off 0/0.25/0.5/0.75/1/n/a, graded twice) stops the "
        "import with its row number; nothing is written then.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    imported.add_argument("file", type=Path, help="grades file, e.g. grades-3f2a9c.json")
    imported.add_argument(
        "--as",
        dest="judge_name",
        required=True,
        help="judge name for the scores file, human-NAME, e.g. human-alice",
    )
    imported.add_argument(
        "--key",
        type=Path,
        help="the packet's key.json (default: key.json beside the grades file)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from judge._human import HumanError, export_packet, import_grades

    args = build_parser().parse_args(argv)
    try:
        if args.command == "export":
            packet = export_packet(args.runs, n=args.n, seed=args.seed, out=args.out)
            graded = sum(len(item["assertions"]) for item in packet["items"])
            print(
                f"wrote {args.out / 'packet.html'} and {args.out / 'sheet.csv'}: "
                f"{len(packet['items'])} answers, {graded} statements to grade; "
                f"key for unblinding: {args.out / 'key.json'} (keep it, do not send it)"
            )
            return 0
        written = import_grades(args.file, judge_name=args.judge_name, key_path=args.key)
    except HumanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path, count in written.items():
        print(f"{path}: {count} graded answer(s)")
    return 0


if __name__ == "__main__":
    from ledgerbench_core._cli import run_cli

    sys.exit(run_cli(main, "judge.human"))
