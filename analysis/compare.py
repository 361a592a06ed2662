"""``python -m analysis.compare``: compare providers (runs or published files) and write a report.

Writes ``stats.json`` (schema: :class:`analysis.Stats`), ``report.md``, ``report.html``
(self-contained) and the plots as PNG files into ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from analysis._compare import CompareConfig, compare, parse_budget
from analysis._data import InputError
from analysis._schema import (
    EQUAL_WEIGHT,
    Contrast,
    Correction,
    InfraFailures,
    ModelKind,
    StandardErrors,
    Stats,
)

EXAMPLES = """\
examples:
  python -m analysis.compare runs/A --out reports/A
        a single run: scores with intervals, operations, no contrasts
  python -m analysis.compare runs/A runs/B runs/C --reference A --judge rules --out reports/abc
        compare B and C against the provider named (or labelled) A
  python -m analysis.compare runs/x runs/y --label GPT --label Claude --reference GPT \\
        --out reports/xy
        rename providers in order (or --label runs/x=GPT)
  python -m analysis.compare runs/A published/eval_results_finance_agent.json --out reports/pub
        a published FORCE-Bench evaluation file as one more provider
  python -m analysis.compare ../shared/reference/force-bench/results/eval_results_answers_*.json \
        --label Haiku --label Opus --label GPT --model pooled --latency-budget paper \
        --infra-failures zero --out reports/table1
        the paper's Table 1 (its pooled model, 60/60/300 s budgets, failures scored 0)
  python -m analysis.compare runs/A runs/B --correction holm --bootstrap 2000 --seed 7 \\
        --out reports/holm
  python -m analysis.compare runs/A runs/B --out reports/budget \\
        --latency-budget obligations=60,entity_performance=60,business_brief=300
        re-score answers slower than the budget as failures (labelled in the report)
"""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser(prog: str = "python -m analysis.compare") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description=(
            "Compare agents (providers) on LedgerBench: mixed-model significance, paired bootstrap "
            "intervals, operations, and a report (stats.json, report.md, report.html, PNG plots)."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        help="run directories (runs/NAME) or published eval_results_*.json files, "
        "e.g. runs/A runs/B",
    )
    parser.add_argument("--out", required=True, type=Path, help="report folder, e.g. reports/ab")
    parser.add_argument(
        "--judge", help="scores file to use, runs/NAME/scores/<JUDGE>.jsonl, e.g. --judge rules"
    )
    parser.add_argument(
        "--reference", help="provider to compare against (name, label or path), e.g. --reference A"
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        dest="labels",
        help="rename providers: in input order (--label GPT --label Claude) or --label runs/x=GPT",
    )
    parser.add_argument(
        "--correction",
        choices=[c.value for c in Correction],
        default="none",
        help="multiple-comparison correction across metrics (default none, as in the paper), "
        "e.g. --correction holm",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        help="bootstrap resamples B (default 1000), e.g. 2000",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0), e.g. 7")
    parser.add_argument(
        "--latency-budget",
        default="",
        help="re-score answers slower than these budgets as failures, "
        "e.g. obligations=60,entity_performance=60,business_brief=300 (or: paper, the same)",
    )
    parser.add_argument(
        "--model",
        choices=[m.value for m in ModelKind],
        default="pairwise",
        help="pairwise (default): each pair of providers fitted on its own data, so a third "
        "provider cannot change a pair's verdict; pooled: one model for all (the paper's)",
    )
    parser.add_argument(
        "--se",
        choices=[m.value for m in StandardErrors],
        default="observed",
        help="mixed-model standard errors: observed (default) from the observed information, "
        "as statsmodels MixedLM computes them; expected: (X' V^-1 X)^-1, which is smaller when "
        "cells are unbalanced (docs/statistics.md)",
    )
    parser.add_argument(
        "--infra-failures",
        choices=[m.value for m in InfraFailures],
        default="exclude",
        help="exclude (default): failed runs are left out of every score; zero: they score 0 "
        "(the paper's convention, for reproducing its tables)",
    )
    parser.add_argument(
        "--pass-threshold",
        type=float,
        default=1.0,
        help="obligations accuracy counted as correct (pass^k, cost per correct), e.g. 0.75",
    )
    parser.add_argument(
        "--min-observations",
        type=int,
        default=5,
        help="fewer scored observations than this for a provider: not tested (default 5)",
    )
    parser.add_argument(
        "--cluster",
        default="auto",
        metavar="FIELD",
        help="what correlated items are grouped by for intervals and tests: auto (default: the "
        "item's metadata template, else its research kind), none (every item its own cluster: "
        "the naive analysis) or another dataset metadata field, e.g. --cluster company_id",
    )
    parser.add_argument(
        "--viewer",
        metavar="DIR_OR_URL",
        help="the folder `ledgerbench view` wrote (relative to --out, or a URL): the report "
        "links each task type, scenario and contrast to its questions there, e.g. ../viewer",
    )
    parser.add_argument(
        "--allow-partly-judged",
        action="store_true",
        help="compare fully judged runs with partly judged ones (refused otherwise; every figure "
        "of a partly judged run says '14/100 scored' beside it)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "python -m analysis.compare") -> int:
    """The command; ``prog`` names it in help and errors (``ledgerbench compare`` runs it too)."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        if args.bootstrap < 10:
            raise InputError("--bootstrap must be at least 10 (default 1000)")
        if not 0.0 < args.pass_threshold <= 1.0:
            raise InputError("--pass-threshold must be in (0, 1], e.g. 1 or 0.75")
        if args.min_observations < 2:
            raise InputError("--min-observations must be at least 2")
        if not args.cluster.strip():
            raise InputError("--cluster needs a field name, auto or none (default auto)")
        config = CompareConfig(
            inputs=args.inputs,
            out=args.out,
            judge=args.judge,
            reference=args.reference,
            labels=args.labels,
            correction=Correction(args.correction),
            bootstrap=args.bootstrap,
            seed=args.seed,
            latency_budget=parse_budget(args.latency_budget),
            pass_threshold=args.pass_threshold,
            min_observations=args.min_observations,
            viewer=args.viewer,
            model=ModelKind(args.model),
            infra_failures=InfraFailures(args.infra_failures),
            se=StandardErrors(args.se),
            allow_partly_judged=args.allow_partly_judged,
            cluster=args.cluster,
        )
        stats = compare(config, progress=not args.quiet and sys.stderr.isatty())
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from ledgerbench_core._overall import overall_text

    print(f"Report: {config.out / 'report.html'} (also report.md, stats.json)")
    for row in stats.headline:
        cell = row.overall
        if cell is not None and cell.score is not None:
            interval = (
                f" [{cell.ci_low:.3f}, {cell.ci_high:.3f}]" if cell.ci_low is not None else ""
            )
            judged = next((p.judged for p in stats.providers if p.name == row.provider), "")
            note = f" ({judged})" if judged else ""
            print(f"  {row.provider}: Overall {overall_text(cell.score)}{interval}{note}")
    for line in contrast_lines(stats):
        print(f"  {line}")
    return 0


def contrast_lines(stats: Stats) -> list[str]:
    """The clustering, then each provider's Overall difference from the reference: paired
    difference, clustered interval, minimum detectable effect and what can be said."""
    if len(stats.providers) < 2:
        return []
    from analysis._report import clustering_text

    lines = [clustering_text(stats).capitalize()]
    reference = stats.settings.reference
    for model in stats.models:
        if model.metric != "overall":
            continue
        for c in model.contrasts:
            if c.scope != EQUAL_WEIGHT or c.reference != reference or c.bootstrap is None:
                continue
            d = c.bootstrap
            text = f"{c.provider} - {c.reference}: Overall {d.estimate:+.3f}"
            if d.ci_low is not None and d.ci_high is not None:
                text += f" [{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
            if c.mdd is not None:
                text += f", MDE {c.mdd:.3f}"
            lines.append(f"{text}: {verdict_text(c)}")
    return lines


def verdict_text(contrast: Contrast) -> str:
    """What a contrast lets one say, in a few words."""
    if not contrast.tested:
        return f"not tested ({contrast.not_tested_reason})"
    if contrast.distinguishable is False:
        return "not distinguishable at this size"
    p = contrast.p_adjusted if contrast.p_adjusted is not None else contrast.p_value
    stars = f" {contrast.significance}" if contrast.significance else ""
    return f"{contrast.direction or 'different'}, p = {p:.3g}{stars}"


if __name__ == "__main__":
    from ledgerbench_core._cli import run_cli

    raise SystemExit(run_cli(main, "analysis.compare"))
