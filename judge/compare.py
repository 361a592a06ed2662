"""``python -m judge.compare runs/NAME --judges A B [C ...]``: agreement between judges."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from ledgerbench_core._cli import OneLineParser

EXAMPLES = """\
examples:
  python -m judge.compare runs/demo --judges rules openai-gpt-5.2
  python -m judge.compare runs/demo --judges gpt-a claude-b rules --threshold 0.05
  python -m judge.compare runs/demo --judges a b --out reports/agreement --min-pairs 10
  python -m judge.compare runs/gpt runs/claude --judges openai-gpt-5.2 human-alice human-bob
  python -m judge.compare runs/gpt runs/claude --judges openai-gpt-5.2 anthropic-claude-4-5 \\
      --self-preference
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m judge.compare",
        description="Compare judges (LLMs, rules, people imported with judge.human) that scored "
        "the same runs, on the assertions both decided: per (task type, dimension) cell with "
        "enough pairs, mean shift, Wilcoxon p with Benjamini-Hochberg q, Spearman rho (none "
        "where a judge is constant), Bland-Altman bias and limits (PNG), Kendall's W for three "
        "or more judges; quadratic-weighted Cohen's kappa per pair and dimension, ordinal "
        "Krippendorff's alpha across three or more raters (both with bootstrap intervals), "
        "whether each judge agrees with people as well as people agree with each other, and "
        "with --self-preference whether judges favour their own model family. Writes "
        "agreement.md, agreement.json and plots.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "run_dirs",
        nargs="+",
        type=Path,
        help="one or more run directories, e.g. runs/demo (answers of several runs are pooled)",
    )
    parser.add_argument(
        "--judges",
        nargs="+",
        required=True,
        help="two or more scores-file names in runs/NAME/scores/, e.g. rules openai-gpt-5.2",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.05,
        help="practical threshold for |mean shift| on the 0-1 scale (default 0.05)",
    )
    parser.add_argument(
        "--min-pairs",
        type=int,
        default=5,
        help="minimum answers scored by both judges for a cell to be tested (default 5)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="BH q below which a shift is called significant (default 0.05)",
    )
    parser.add_argument(
        "--out", type=Path, help="output directory (default runs/NAME/scores/compare-A-vs-B)"
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the Bland-Altman PNGs")
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="bootstrap replicates for the kappa and alpha intervals (default 1000)",
    )
    parser.add_argument(
        "--self-preference",
        action="store_true",
        help="fit judge family x provider family over the runs and report whether a judge "
        "favours answers of its own model family",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from judge._compare import (
        compare_judges,
        comparison_json,
        comparison_markdown,
        plot_bland_altman,
    )
    from judge._runner import read_scores

    args = build_parser().parse_args(argv)
    if len(args.judges) < 2 or len(set(args.judges)) != len(args.judges):
        print("error: --judges needs two or more different judge names", file=sys.stderr)
        return 2
    runs = {}
    for run_dir in args.run_dirs:
        if not run_dir.is_dir():
            print(f"error: run directory {run_dir} not found; pass runs/NAME", file=sys.stderr)
            return 2
        runs[_label(run_dir, runs)] = run_dir
    scores: dict[str, list] = {name: [] for name in args.judges}
    by_run: dict[tuple[str, str], list] = {}
    for label, run_dir in runs.items():
        for name in args.judges:
            path = run_dir / "scores" / f"{name}.jsonl"
            records, _ = read_scores(path)
            by_run[(label, name)] = records
            if len(runs) > 1:  # one answer = (run, question, trial)
                records = [
                    r.model_copy(update={"question_id": f"{label}/{r.question_id}"})
                    for r in records
                ]
            scores[name] += records
    missing = [name for name, records in scores.items() if not records]
    if missing:
        available = sorted(
            {p.stem for run_dir in runs.values() for p in (run_dir / "scores").glob("*.jsonl")}
        )
        print(
            f"error: no scores of judge {missing[0]} in {', '.join(map(str, runs.values()))}; "
            f"available judges: {', '.join(available) or 'none'}",
            file=sys.stderr,
        )
        return 2
    comparison = compare_judges(
        scores,
        threshold=args.threshold,
        min_pairs=args.min_pairs,
        alpha=args.alpha,
        bootstrap=args.bootstrap,
    )
    first = next(iter(runs.values()))
    out = args.out or first / "scores" / ("compare-" + "-vs-".join(args.judges))
    out.mkdir(parents=True, exist_ok=True)
    markdown = comparison_markdown(comparison)
    data = comparison_json(comparison)
    if args.self_preference:
        from judge._self_preference import (
            fit_self_preference,
            self_preference_markdown,
            self_preference_rows,
        )

        preference = fit_self_preference(self_preference_rows(runs, args.judges, by_run))
        markdown += self_preference_markdown(preference)
        data["self_preference"] = asdict(preference)
    (out / "agreement.md").write_text(markdown, encoding="utf-8")
    (out / "agreement.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    plots = [] if args.no_plots else plot_bland_altman(comparison, out)
    print(markdown)
    print(
        f"wrote {out / 'agreement.md'}, {out / 'agreement.json'}"
        + (f" and {len(plots)} plot(s)" if plots else "")
    )
    return 0


def _label(run_dir: Path, taken: dict[str, Path]) -> str:
    label = run_dir.resolve().name
    while label in taken:
        label = f"{run_dir.resolve().parent.name}-{label}"
    return label


if __name__ == "__main__":
    from ledgerbench_core._cli import run_cli

    sys.exit(run_cli(main, "judge.compare"))
