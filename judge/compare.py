"""``python -m judge.compare runs/NAME --judges A B [C ...]``: agreement between judges."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXAMPLES = """\
examples:
  python -m judge.compare runs/demo --judges rules openai-gpt-5.2
  python -m judge.compare runs/demo --judges gpt-a claude-b rules --threshold 0.05
  python -m judge.compare runs/demo --judges a b --out reports/agreement --min-pairs 10
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m judge.compare",
        description="Compare judges that scored the same run: per (task type, dimension) cell with "
        "enough pairs, mean shift, Wilcoxon p with Benjamini-Hochberg q, Spearman rho, "
        "Bland-Altman "
        "bias and limits (PNG), and Kendall's W for three or more judges. Writes agreement.md, "
        "agreement.json and plots.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, help="run directory, e.g. runs/demo")
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
    scores = {}
    for name in args.judges:
        path = args.run_dir / "scores" / f"{name}.jsonl"
        if not path.exists():
            available = sorted(p.stem for p in (args.run_dir / "scores").glob("*.jsonl"))
            print(
                f"error: no scores {path}; available judges: {', '.join(available) or 'none'}",
                file=sys.stderr,
            )
            return 2
        scores[name], _ = read_scores(path)
    comparison = compare_judges(
        scores, threshold=args.threshold, min_pairs=args.min_pairs, alpha=args.alpha
    )
    out = args.out or args.run_dir / "scores" / ("compare-" + "-vs-".join(args.judges))
    out.mkdir(parents=True, exist_ok=True)
    markdown = comparison_markdown(comparison)
    (out / "agreement.md").write_text(markdown, encoding="utf-8")
    (out / "agreement.json").write_text(
        json.dumps(comparison_json(comparison), indent=2), encoding="utf-8"
    )
    plots = [] if args.no_plots else plot_bland_altman(comparison, out)
    print(markdown)
    print(
        f"wrote {out / 'agreement.md'}, {out / 'agreement.json'}"
        + (f" and {len(plots)} plot(s)" if plots else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
