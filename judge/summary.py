"""``python -m judge.summary runs/NAME [--judge NAME]``: scores by task type and equal-weighted."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ledgerbench_core._cli import OneLineParser

EXAMPLES = """\
examples:
  python -m judge.summary runs/demo
  python -m judge.summary runs/demo --judge rules
  python -m judge.summary runs/demo --judge openai-gpt-5.2 --json
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m judge.summary",
        description="Summarize scores: mean per dimension and overall, by task type and with task "
        "types weighted equally; counts infrastructure failures and judge errors; prints the "
        "accuracy of research items keyed on a world (LedgerBench's extension) beside the Overall, "
        "never in it; for --with-rules scores, lists the assertions where the rules and the LLM "
        "disagree.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, help="run directory, e.g. runs/demo")
    parser.add_argument(
        "--judge", help="scores-file name in runs/NAME/scores/ (default: every judge), e.g. rules"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    return parser


def main(argv: list[str] | None = None) -> int:
    from judge._runner import read_scores
    from judge._summary import (
        current_scores,
        disagreements_markdown,
        freshness_warnings,
        rule_disagreements,
        run_summary,
        scores_files,
        summary_markdown,
    )

    args = build_parser().parse_args(argv)
    paths = scores_files(args.run_dir, args.judge)
    missing = [p for p in paths if not p.exists()]
    if missing or not paths:
        where = missing[0] if missing else args.run_dir / "scores"
        print(
            f"error: no scores at {where}; run python -m judge.run {args.run_dir} --judge ... "
            "first",
            file=sys.stderr,
        )
        return 2
    trajectories, unreadable = _trajectories(args.run_dir)
    for line in unreadable:
        print(f"warning: {line}; the analysis refuses the run until it is re-run", file=sys.stderr)
    output, texts = {}, []
    for path in paths:
        records, bad_lines = read_scores(path)
        clusters = _clusters(args.run_dir, records)
        output[path.stem], left_out = run_summary(path.stem, records, trajectories, clusters)
        for line in freshness_warnings(path.stem, left_out, args.run_dir):
            print(line, file=sys.stderr)
        records, _ = current_scores(records, trajectories)
        output[path.stem].update(left_out, unreadable_score_lines=bad_lines)
        output[path.stem]["unreadable_trajectory_lines"] = len(unreadable)
        disagreements = rule_disagreements(records)
        if disagreements:
            output[path.stem]["rule_disagreements"] = disagreements
        texts.append(
            summary_markdown(output[path.stem], path.stem) + disagreements_markdown(disagreements)
        )
    if args.json:
        print(json.dumps(output, indent=2))
    else:
        print("\n\n".join(texts))
    return 0


def _clusters(run_dir: Path, records: list) -> tuple[dict[str, str], str]:
    """The run's items grouped by template (research: kind), as the analysis does."""
    from ledgerbench_core._clustered import run_clusters

    return run_clusters(run_dir, {r.question_id: str(r.task_type) for r in records})


def _trajectories(run_dir: Path) -> tuple[list | None, list[str]]:
    """The run's readable records and a line per unreadable one (None: no trajectory file)."""
    from judge._runner import JudgeRunError, read_trajectories

    try:
        return read_trajectories(run_dir)
    except JudgeRunError:
        return None, []


if __name__ == "__main__":
    from ledgerbench_core._cli import run_cli

    sys.exit(run_cli(main, "judge.summary"))
